# The running systemd user managers. systemd 250 and later reach a user's manager from
# root with `systemctl --user --machine UID@`. scripts/package puts this file in place of
# #USER_MANAGERS# in the maintainer scripts.

# user_managers: the user ID of each running user manager, one a line.
user_managers() {
    [ -d /run/systemd/system ] || return 0
    systemctl --no-legend --plain list-units 'user@*.service' 2>/dev/null |
        sed -n 's/^user@\([0-9][0-9]*\)\.service.*/\1/p'
}

# reload_user_managers: each running user manager reads the unit files again.
reload_user_managers() {
    for uid in $(user_managers); do
        systemctl --user --machine "$uid@" daemon-reload >/dev/null 2>&1 || true
    done
}
