// Umbrella header for libdbus-1; the include path comes from pkg-config (dbus-1).
#include <dbus/dbus.h>
