import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary

/// `quaver doctor`: the "Now Playing does not show up" checklist, for Linux.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check why Quaver might not show up in media controls, and say how to fix it.",
        discussion: """
            Checks the session bus, the running player and its MPRIS properties, the desktop \
            file, D-Bus activation and the systemd user unit, GStreamer's decoders, the sound \
            output, the configuration and the last problems Quaver logged. Exits 1 when a \
            check fails.
            """)

    @Option(help: ArgumentHelp("Bus name suffix of the player to check.", valueName: "name"))
    var name = "quaver"

    func run() throws {
        let name = name
        Task { @MainActor in
            var report = DoctorReport()
            await report.runAll(playerName: name)
            print(report.rendered(), terminator: "")
            Exit.now(report.hasFailures ? .failure : .success)
        }
        dispatchMain()
    }
}

/// The checks and their outcomes.
@MainActor
struct DoctorReport {
    enum Outcome: String {
        case ok, warning, failed
    }

    struct Check {
        var title: String
        var outcome: Outcome
        var detail: String
        var fix: String?
    }

    private(set) var checks: [Check] = []
    /// The process that owns the player's bus name, when one does.
    private var runningPID: UInt32?
    /// The files of the installed quaver package (empty without it), to name where the
    /// binary, the unit and the D-Bus file come from.
    private let packageFiles = Installation.packageFiles()
    /// The D-Bus service file and the user unit in use, when installed.
    private var activationFile: String?
    private var unitFile: String?
    var hasFailures: Bool { checks.contains { $0.outcome == .failed } }

    private mutating func add(_ title: String, _ outcome: Outcome, _ detail: String, fix: String? = nil) {
        checks.append(Check(title: title, outcome: outcome, detail: detail, fix: fix))
    }

    mutating func runAll(playerName: String) async {
        let busName = "org.mpris.MediaPlayer2." + playerName
        var desktopEntry = "quaver"
        if let connection = checkBus() {
            if let properties = await checkPlayer(connection, busName: busName) {
                if case .string(let entry)? = properties.root["DesktopEntry"] { desktopEntry = entry }
                checkFlags(properties.player)
            }
            connection.close()
        }
        checkDesktopEntry(desktopEntry)
        checkActivation(busName: busName)
        checkUnit()
        checkInstallation()
        checkDecoders()
        checkSoundOutput()
        checkProblems()
    }

    func rendered() -> String {
        var text = "Quaver doctor\n"
        let width = checks.map(\.title.count).max() ?? 0
        for check in checks {
            let status = Self.padded(check.outcome.rawValue, to: 8)
            text += "  \(status) \(Self.padded(check.title, to: width))  \(check.detail)\n"
            if let fix = check.fix {
                text += String(repeating: " ", count: 11 + width + 2) + "fix: \(fix)\n"
            }
        }
        let counts = [Outcome.ok, .warning, .failed].map { outcome in
            (outcome, checks.filter { $0.outcome == outcome }.count)
        }
        text += counts.map { "\($0.1) \($0.0.rawValue)" }.joined(separator: ", ") + "\n"
        return text
    }

    // MARK: - The checks

    private mutating func checkBus() -> Connection? {
        let environment = ProcessInfo.processInfo.environment
        let address =
            environment["DBUS_SESSION_BUS_ADDRESS"]
            ?? "unix:path=\(environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())")/bus"
        do {
            let connection = try Connection(bus: .session)
            add("session bus", .ok, "reachable at \(address)")
            return connection
        } catch {
            add(
                "session bus", .failed, "cannot connect to \(address): \(error.message)",
                fix: "run inside a desktop session, or export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus")
            return nil
        }
    }

    private struct Properties {
        var root: [String: Value]
        var player: [String: Value]
    }

    /// Required MPRIS properties and their signatures.
    static let requiredRoot = [
        "CanQuit": "b", "CanRaise": "b", "HasTrackList": "b", "Identity": "s",
        "SupportedUriSchemes": "as", "SupportedMimeTypes": "as",
    ]
    static let requiredPlayer = [
        "PlaybackStatus": "s", "Rate": "d", "Metadata": "a{sv}", "Volume": "d", "Position": "x",
        "MinimumRate": "d", "MaximumRate": "d", "CanGoNext": "b", "CanGoPrevious": "b", "CanPlay": "b",
        "CanPause": "b", "CanSeek": "b", "CanControl": "b",
    ]

    private mutating func checkPlayer(_ connection: Connection, busName: String) async -> Properties? {
        let bus = (
            destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
            interface: "org.freedesktop.DBus"
        )
        let owner: String
        do {
            let reply = try await connection.call(
                destination: bus.destination, path: bus.path, interface: bus.interface, member: "GetNameOwner",
                arguments: [.string(busName)], timeout: .seconds(5))
            owner = reply.first?.string ?? ""
        } catch {
            let activatable =
                (try? await connection.call(
                    destination: bus.destination, path: bus.path, interface: bus.interface,
                    member: "ListActivatableNames",
                    timeout: .seconds(5)))?.first?.stringArray ?? []
            if activatable.contains(busName) {
                add(
                    "player on the bus", .warning,
                    "\(busName) is not running; a call to its name starts it, but media keys and desktop widgets reach running players only",
                    fix: "start it at login: systemctl --user enable quaver (scripts/install does), or now: quaver &")
            } else {
                add(
                    "player on the bus", .failed, "\(busName) is not running and D-Bus cannot start it",
                    fix:
                        "start it (quaver &, or systemctl --user start quaver) and install activation with scripts/install"
                )
            }
            return nil
        }
        var process = "pid unknown"
        if let pid = try? await connection.call(
            destination: bus.destination, path: bus.path, interface: bus.interface,
            member: "GetConnectionUnixProcessID",
            arguments: [.string(owner)], timeout: .seconds(5)
        ).first?.uint32 {
            let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingWhitespace()
            process = "\(command ?? "process") pid \(pid)"
            runningPID = pid
        }
        add("player on the bus", .ok, "\(busName) is owned by \(owner) (\(process))")

        // Ask the owner's unique name, so that a check never starts a player by activation.
        var properties = Properties(root: [:], player: [:])
        var problems: [String] = []
        for (interface, required) in [
            ("org.mpris.MediaPlayer2", Self.requiredRoot), ("org.mpris.MediaPlayer2.Player", Self.requiredPlayer),
        ] {
            do {
                let reply = try await connection.call(
                    destination: owner, path: ObjectPath("/org/mpris/MediaPlayer2")!,
                    interface: "org.freedesktop.DBus.Properties",
                    member: "GetAll", arguments: [.string(interface)], timeout: .seconds(5))
                let values = reply.first?.stringVariantDictionary ?? [:]
                for (property, signature) in required.sorted(by: { $0.key < $1.key }) {
                    guard let value = values[property] else {
                        problems.append("\(property) missing")
                        continue
                    }
                    if value.type.signature != signature {
                        problems.append("\(property) is \(value.type.signature), not \(signature)")
                    }
                }
                if interface == "org.mpris.MediaPlayer2" {
                    properties.root = values
                } else {
                    properties.player = values
                }
            } catch {
                problems.append("GetAll(\(interface)) failed: \(error.message)")
            }
        }
        if problems.isEmpty {
            add("MPRIS properties", .ok, "GetAll answers every required property with the right type")
        } else {
            add(
                "MPRIS properties", .failed, problems.joined(separator: "; "),
                fix: "the process on the bus is not a working Quaver: restart it (systemctl --user restart quaver)")
        }
        return properties
    }

    private mutating func checkFlags(_ player: [String: Value]) {
        guard !player.isEmpty else { return }
        let status = player["PlaybackStatus"]?.string ?? "?"
        let metadata = player["Metadata"]?.stringVariantDictionary ?? [:]
        func flag(_ name: String) -> Bool { player[name]?.boolean ?? false }
        var problems: [String] = []
        if status == "Playing" && !flag("CanPause") { problems.append("Playing but CanPause is false") }
        if status != "Stopped" && metadata["mpris:trackid"] == nil {
            problems.append("\(status) without a track in Metadata")
        }
        if flag("CanSeek") && metadata["mpris:length"] == nil { problems.append("CanSeek without mpris:length") }
        if !flag("CanControl") { problems.append("CanControl is false: clients will hide the controls") }
        if metadata["mpris:trackid"] != nil && !flag("CanPlay") {
            problems.append("a track is loaded but CanPlay is false")
        }
        if problems.isEmpty {
            let track = metadata["xesam:title"]?.string.map { ", \"\($0)\"" } ?? ""
            add("Can* flags", .ok, "consistent with \(status)\(track)")
        } else {
            add(
                "Can* flags", .failed, problems.joined(separator: "; "),
                fix: "restart Quaver and report the bug with quaver --log-level debug output")
        }
    }

    private mutating func checkDesktopEntry(_ entry: String) {
        let file = entry + ".desktop"
        if let found = XDG.dataDirectories.map({ $0.appendingPathComponent("applications/" + file) })
            .first(where: { FileManager.default.fileExists(atPath: $0.path) })
        {
            add("desktop entry", .ok, "DesktopEntry \"\(entry)\" is \(found.path)")
        } else {
            // GNOME Shell 43 shows the player the same either way; KDE Plasma takes the icon
            // from the desktop file, and clients that open the player's window use it.
            let folders = XDG.dataDirectories.map { $0.appendingPathComponent("applications").path }.joined(
                separator: ", ")
            add(
                "desktop entry", .warning, "no \(file) in \(folders): KDE Plasma shows Quaver without its icon",
                fix: "scripts/install (puts it in ~/.local/share/applications)")
        }
    }

    private mutating func checkActivation(busName: String) {
        let file = busName + ".service"
        // The session bus reads $XDG_DATA_HOME's folder first, and the first file for a
        // name wins: a user install's shadows the package's.
        let found = Installation.candidates(
            file, in: XDG.dataDirectories.map { $0.appendingPathComponent("dbus-1/services") })
        guard let first = found.first else {
            add(
                "D-Bus activation", .warning,
                "no \(file) installed: a client calling \(busName) cannot start Quaver when it is not running",
                fix: "install the quaver package, or scripts/install")
            return
        }
        activationFile = first
        let described = Installation.describe(first, shadowing: Array(found.dropFirst()), packageFiles: packageFiles)
        let program = Installation.program(of: first, key: "Exec") ?? ""
        if program.isEmpty || !FileManager.default.isExecutableFile(atPath: program) {
            add(
                "D-Bus activation", .failed, "\(described) runs \"\(program)\", which is not an executable file",
                fix: "reinstall: the quaver package, or scripts/install")
        } else {
            add("D-Bus activation", .ok, "\(described) starts \(program)")
        }
    }

    private mutating func checkUnit() {
        let folders =
            [Paths.config.appendingPathComponent("systemd/user")]
            + XDG.dataDirectories.map { $0.appendingPathComponent("systemd/user") }
            + ["/etc/systemd/user", "/usr/local/lib/systemd/user", "/usr/lib/systemd/user"].map {
                URL(fileURLWithPath: $0)
            }
        let found = Installation.candidates("quaver.service", in: folders)
        guard let unit = found.first else {
            add(
                "systemd user unit", .warning, "quaver.service is not installed",
                fix: "install the quaver package, or scripts/install, then systemctl --user enable --now quaver")
            return
        }
        unitFile = unit
        let described = Installation.describe(unit, shadowing: Array(found.dropFirst()), packageFiles: packageFiles)
        guard Self.hasUserManager,
            let state = Self.run("systemctl", ["--user", "is-active", "quaver.service"])
        else {
            add("systemd user unit", .ok, "\(described) (no systemd user manager to ask for its state)")
            return
        }
        let enabled = Self.run("systemctl", ["--user", "is-enabled", "quaver.service"]) ?? "unknown"
        if state == "failed" {
            add(
                "systemd user unit", .failed, "\(described) has failed",
                fix: "journalctl --user -u quaver -n 20, then systemctl --user restart quaver")
        } else if enabled != "enabled" {
            add(
                "systemd user unit", .warning,
                "\(described): \(state), \(enabled): Quaver does not start at login, and media keys reach running players only",
                fix: "systemctl --user enable quaver")
        } else {
            add("systemd user unit", .ok, "\(described): \(state), \(enabled)")
        }
    }

    /// Whether a systemd user manager listens: asking systemctl without one can wait a long
    /// time, and without one the bus runs the D-Bus file's program itself.
    private static var hasUserManager: Bool {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return FileManager.default.fileExists(atPath: runtime + "/systemd/private")
    }

    /// Which install runs, and which one a start would run: the unit's program where a
    /// user manager runs the session's services, else the D-Bus file's.
    private mutating func checkInstallation() {
        var start: (program: String, by: String)?
        if Self.hasUserManager, let unitFile, let program = Installation.program(of: unitFile, key: "ExecStart") {
            start = (program, "the unit")
        } else if let activationFile, let program = Installation.program(of: activationFile, key: "Exec") {
            start = (program, "D-Bus activation")
        }
        let check = InstallationCheck(runningPID: runningPID, start: start, packageFiles: packageFiles)
        add("installation", check.outcome, check.detail, fix: check.fix)
    }

    /// Whether each format of users' libraries plays here, from GStreamer's registry: one
    /// line for all that play, and one for each that does not, with the packages it needs.
    private mutating func checkDecoders() {
        guard GStreamer.hasElement("playbin") else {
            add(
                "GStreamer", .failed, "playbin is missing: nothing can play",
                fix: "sudo apt-get install gstreamer1.0-plugins-base")
            return
        }
        var playable: [String] = []
        for format in MediaFormat.all {
            switch format.support {
            case .playable:
                playable.append(format.name)
            case .missing(let packages):
                add(
                    "cannot play \(format.name)", .warning,
                    "GStreamer has no element that decodes it: such files are skipped",
                    fix: "sudo apt-get install \(packages.joined(separator: " "))")
            }
        }
        add(
            "GStreamer formats", playable.isEmpty ? .failed : .ok,
            "\(GStreamer.version) plays " + (playable.isEmpty ? "none of them" : playable.joined(separator: ", ")))
    }

    private mutating func checkSoundOutput() {
        let loaded = Result { try Config.load() }
        let config = try? loaded.get()
        if let output = config?.output {
            checkSnapcast(output)
        } else {
            checkSink(config?.audioSink)
        }
        switch loaded {
        case .success(let config):
            let exists = FileManager.default.fileExists(atPath: Config.defaultFile.path)
            add(
                "configuration", .ok,
                exists ? "\(Config.defaultFile.path) is valid" : "defaults (no \(Config.defaultFile.path))")
            checkLoudness(config.loudness)
        case .failure(let error):
            add("configuration", .failed, "\(error)", fix: "correct that line (see data/quaver.conf.example)")
        }
    }

    /// Whether the Snapcast source `output` names can be opened now.
    private mutating func checkSnapcast(_ output: OutputSpec) {
        do {
            _ = try output.open()
            add("sound output", .ok, "Quaver would play into \(output) (a Snapcast source)")
        } catch {
            add(
                "sound output", .failed, "\(error)",
                fix:
                    "start snapserver, whose pipe source makes the pipe, or fix output in \(Config.defaultFile.path)"
            )
        }
    }

    /// Whether the sink `configured` names (nil: the system output) plays, and into what.
    private mutating func checkSink(_ configured: String?) {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        let servers = [("PipeWire", "\(runtime)/pipewire-0"), ("PulseAudio", "\(runtime)/pulse/native")]
            .filter { FileManager.default.fileExists(atPath: $0.1) }.map(\.0)
        switch GStreamer.probeAudioOutput(configured) {
        case .failure(let error):
            add(
                "sound output", .failed, "\(configured ?? "the system output"): \(error.reason)",
                fix: configured == nil
                    ? "start PipeWire or PulseAudio (systemctl --user start pipewire-pulse)"
                    : "fix audio-sink in \(Config.defaultFile.path)")
        case .success(let elements):
            let sink = elements.first { $0.hasSuffix("sink") && $0 != "autoaudiosink" } ?? elements.first ?? "?"
            let serverText =
                servers.isEmpty
                ? "no sound server socket in \(runtime)" : servers.joined(separator: " and ") + " running"
            if configured == nil && sink == "fakesink" {
                add(
                    "sound output", .warning, "no sound server or device (\(serverText)): Quaver would play silently",
                    fix: "start PipeWire or PulseAudio, or set audio-sink in \(Config.defaultFile.path)")
            } else {
                add("sound output", .ok, "Quaver would play into \(configured ?? sink) (\(serverText))")
            }
        }
    }

    /// The loudness settings, whether GStreamer has the ReplayGain elements, and how many
    /// gains have been measured.
    private mutating func checkLoudness(_ settings: LoudnessSettings) {
        let missing = ["rgvolume", "rglimiter", "rganalysis"].filter { !GStreamer.hasElement($0) }
        guard missing.isEmpty else {
            add(
                "loudness", .warning, "\(missing.joined(separator: ", ")) missing: tracks play without ReplayGain",
                fix: "install gstreamer1.0-plugins-good")
            return
        }
        let cache = Paths.cache.appendingPathComponent(GainCache.fileName)
        let lines = (try? String(contentsOf: cache, encoding: .utf8))?.split(separator: "\n").count ?? 0
        add(
            "loudness", .ok,
            "\(settings.summary); \(max(lines - 1, 0)) measured gains in \(cache.path) (quaver --log-level debug logs the gain of each track)"
        )
    }

    private mutating func checkProblems() {
        let log = ProblemLog(file: Paths.state.appendingPathComponent("problems.log"))
        let recent = log.last(5)
        if recent.isEmpty {
            add("recent problems", .ok, "none logged")
        } else {
            add(
                "recent problems", .warning,
                "the last \(recent.count) in \(log.file.path):\n"
                    + recent.map { "             \($0)" }.joined(separator: "\n"))
        }
    }

    /// Runs a program and returns its trimmed output, or nil when it cannot run or fails
    /// without output.
    static func run(_ program: String, _ arguments: [String]) -> String? {
        guard let output = ChildOutput.run("/usr/bin/env", [program] + arguments) else { return nil }
        let text = String(decoding: output, as: UTF8.self).trimmingWhitespace()
        return text.isEmpty ? nil : text
    }

    /// `text` with spaces after it up to `width` characters, for the report's columns.
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}

/// The XDG data folders, most specific first.
enum XDG {
    static var dataDirectories: [URL] {
        let system =
            (ProcessInfo.processInfo.environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map { URL(fileURLWithPath: String($0), isDirectory: true) }
        return [Paths.data] + system
    }
}
