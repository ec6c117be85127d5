import ChildProcess
import DBus
import Dispatch
import Foundation
import TestKit
import Testing

/// Tagged tracks made once per process by `quaver --make-test-tracks`.
enum TestMedia {
    /// One generation per shape, shared by every test that asks for it (tests run in parallel).
    nonisolated(unsafe) private static var made: [String: Task<[String], any Error>] = [:]
    private static let lock = NSLock()

    /// `count` FLAC tracks of `seconds` each, "Track N" by "Artist N" on "Test Album".
    static func tracks(count: Int, seconds: Double) async throws -> [URL] {
        try await make(["--track-count", "\(count)", "--track-seconds", "\(seconds)"]).map { URL(fileURLWithPath: $0) }
    }

    /// Like `tracks`, in `format` (flac, mp3, m4a, ogg, opus), each with an embedded front
    /// cover of its own colour: the tracks, and the bytes of their covers.
    static func coveredTracks(count: Int, seconds: Double, format: String = "flac") async throws -> [(
        track: URL, cover: Data
    )] {
        let lines = try await make([
            "--track-count", "\(count)", "--track-seconds", "\(seconds)", "--track-format", format, "--track-covers",
        ])
        return try lines.map { line in
            let fields = line.split(separator: "\t").map(String.init)
            guard fields.count == 2 else { throw HarnessError("unexpected line from --make-test-tracks: \(line)") }
            return (URL(fileURLWithPath: fields[0]), try Data(contentsOf: URL(fileURLWithPath: fields[1])))
        }
    }

    /// The lines `quaver --make-test-tracks <folder> ARGUMENTS` prints, made once per process.
    private static func make(_ arguments: [String]) async throws -> [String] {
        let key =
            arguments.filter { !$0.hasPrefix("--") }.joined(separator: "x")
            + (arguments.contains("--track-covers") ? "-covers" : "")
        let task = lock.withLock {
            if let existing = made[key] { return existing }
            let task = Task {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "quaver-media-\(getpid())-\(key)")
                return try await Tools.makeTestTracks(
                    Tools.quaver.path, into: folder, arguments, registry: Session.sharedRegistry)
            }
            made[key] = task
            return task
        }
        return try await task.value
    }
}

/// One running `quaver` on a private bus, plus a client connection that records its signals.
@MainActor
final class Session {
    let bus: PrivateBus
    let client: Connection
    let waiter = Waiter()
    let home: URL
    var daemon: ChildProcess?
    var daemonStatus: Int32?
    let logFile: URL
    private(set) var signals: [RecordedSignal] = []
    private(set) var owners: [String: String] = [:]
    private var reader: TimedReader?
    let name: String

    /// A signal the client received (TestKit's), stamped when it was handled.
    typealias RecordedSignal = TestKit.RecordedSignal

    /// - Parameter activation: true to let the bus start services installed under the
    ///   session's home (`~/.local/share/dbus-1/services`), with the session's environment.
    init(name: String = "quaver", activation: Bool = false) async throws {
        self.name = name
        var homeFolder: URL?
        bus = try await PrivateBus { folder in
            let home = folder.appendingPathComponent("home")
            homeFolder = home
            guard activation else { return [:] }
            // The bus watches the service folders that exist when it starts.
            try FileManager.default.createDirectory(
                at: home.appendingPathComponent(".local/share/dbus-1/services"), withIntermediateDirectories: true)
            return Session.xdg(home: home)
        }
        home = homeFolder!
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        logFile = bus.directory.appendingPathComponent("quaver.log")
        client = try Connection(address: bus.address)
        try client.followMPRIS { [weak self] signal in
            guard let self else { return }
            if let change = signal.nameOwnerChange {
                owners[change.name] = change.owner
            } else {
                signals.append(signal)
            }
            waiter.poke()
        }
    }

    /// The session's connection for timed Position reads, made on first use.
    func timedReader() throws -> TimedReader {
        if let reader { return reader }
        let made = try TimedReader(address: bus.address)
        reader = made
        return made
    }

    /// Set before `launch`: more environment for the daemon (a sound server to use, say).
    var extraEnvironment: [String: String] = [:]
    /// A command that runs quaver (its path and arguments follow), e.g. one that drops
    /// privileges; empty: quaver is run directly.
    var launcher: [String] = []

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment.merging(Session.xdg(home: home)) { $1 }.merging(extraEnvironment)
        { $1 }
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        env.removeValue(forKey: "JOURNAL_STREAM")
        return env
    }

    nonisolated static let sharedRegistry = FileManager.default.temporaryDirectory
        .appendingPathComponent("quaver-tests-gst-registry-\(getuid()).bin").path

    /// A home of the test's own: every XDG folder inside it.
    nonisolated static func xdg(home: URL) -> [String: String] {
        Tools.privateHome(home).merging([
            "XDG_DATA_DIRS": home.appendingPathComponent("system-share").path,
            // One GStreamer plugin registry for every process of the run: with a registry
            // per test home, each quaver would scan all plugins again when it starts.
            "GST_REGISTRY": sharedRegistry,
        ]) { $1 }
    }

    var stateFolder: URL { home.appendingPathComponent(".local/state/quaver") }

    /// The queue file the saved state names (`queue.<generation>.m3u8`); nil while no
    /// state names one.
    var savedQueueFile: URL? {
        guard let data = try? Data(contentsOf: stateFolder.appendingPathComponent("state.json")),
            let state = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let generation = state["queueGeneration"] as? Int
        else { return nil }
        return stateFolder.appendingPathComponent("queue.\(generation).m3u8")
    }
    var configFile: URL { home.appendingPathComponent(".config/quaver/quaver.conf") }

    func writeConfig(_ text: String) throws {
        try FileManager.default.createDirectory(
            at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: configFile, atomically: true, encoding: .utf8)
    }

    var busName: String { "org.mpris.MediaPlayer2." + name }

    /// Starts quaver with a silent real-time sink and waits until it owns its bus name.
    func launch(_ arguments: [String], sink: String = "fakesink sync=true", expectName: String? = nil) async throws {
        try await launch(command: quaverCommand(arguments, sink: sink), expectName: expectName)
    }

    /// Starts `command` (quaver, or another program the package builds) and waits until it
    /// owns `expectName`, by default the session's bus name.
    func launch(command: [String], expectName: String? = nil) async throws {
        let program = URL(fileURLWithPath: command[0]).lastPathComponent
        if let daemon, daemonStatus == nil {
            throw HarnessError("\(program) (pid \(daemon.pid)) still runs")
        }
        let wanted = expectName ?? busName
        if owners[wanted].map({ !$0.isEmpty }) ?? false {
            // A previous quaver held the name: wait for the bus to say it is free.
            guard await waiter.wait(timeout: .seconds(10), until: { [unowned self] in owners[wanted] == "" }) else {
                throw HarnessError("\(wanted) is still owned by \(owners[wanted] ?? "?")")
            }
        }
        daemonStatus = nil
        if FileManager.default.fileExists(atPath: logFile.path) {
            previousLogs += log()
        }
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = try spawn(command: command, log: logFile)
        process.onExitOnMainActor { [weak self] status in
            self?.daemonStatus = status
            self?.waiter.poke()
        }
        daemon = process
        let owned = await waiter.wait(timeout: .seconds(30)) { [unowned self] in
            (owners[wanted].map { !$0.isEmpty } ?? false) || daemonStatus != nil
        }
        guard owned, daemonStatus == nil else {
            throw HarnessError(
                "\(program) did not take \(wanted) (status \(daemonStatus.map(String.init) ?? "running"); owners seen: \(owners)); log: \(self.log().replacingOccurrences(of: "\n", with: " | "))"
            )
        }
    }

    /// Starts another quaver on this bus (stopped with the session); its output goes to `log`.
    func spawn(_ arguments: [String], sink: String = "fakesink sync=true", log: URL) throws -> ChildProcess {
        try spawn(command: quaverCommand(arguments, sink: sink), log: log)
    }

    /// Starts `command` on this bus (stopped with the session); its output goes to `log`.
    func spawn(command: [String], log: URL) throws -> ChildProcess {
        let process = try ChildProcess(
            command[0], Array(command.dropFirst()), environment: environment, output: .file(log.path), error: .output)
        extras.append(process)
        return process
    }
    private var extras: [ChildProcess] = []

    private func quaverCommand(_ arguments: [String], sink: String) -> [String] {
        launcher + [Tools.quaver.path, "--audio-sink", sink, "--name", name] + arguments
    }

    /// What earlier runs in this session logged.
    private(set) var previousLogs = ""

    func log() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Waits for a recorded signal satisfying `match` at index `from` or later.
    @discardableResult
    func waitForSignal(
        after from: Int = 0, timeout: Duration = .seconds(30), _ what: String,
        where match: @escaping (RecordedSignal) -> Bool
    ) async throws -> RecordedSignal {
        let found = await waiter.wait(timeout: timeout) { [unowned self] in
            signals.dropFirst(from).contains(where: match)
        }
        guard found, let signal = signals.dropFirst(from).first(where: match) else {
            throw HarnessError(
                "no \(what) within \(timeout); signals since #\(from): \(signals.dropFirst(from).map(\.description))\nlog:\n\(self.log())"
            )
        }
        return signal
    }

    /// Waits for a PropertiesChanged of the Player interface whose changes satisfy `match`.
    @discardableResult
    func waitForPlayerChange(
        after from: Int, timeout: Duration = .seconds(30), _ what: String,
        where match: @escaping ([String: Value]) -> Bool
    ) async throws -> RecordedSignal {
        try await waitForSignal(after: from, timeout: timeout, what) {
            $0.member == "PropertiesChanged" && $0.changedInterface == "org.mpris.MediaPlayer2.Player"
                && match($0.changed)
        }
    }

    /// Waits for PlaybackStatus to be `status`: as read, or as announced after signal `from`.
    /// With `from`, a read counts only once quaver has announced a PlaybackStatus: until its
    /// first track is loaded it shows Stopped, which is not the Stopped a test waits for.
    func waitForStatus(_ status: String, after from: Int = 0, timeout: Duration = .seconds(30)) async throws {
        if from == 0, try await get("PlaybackStatus").string == status { return }
        if from > 0 {
            let reached = try await Waiter.poll(timeout: timeout, every: .milliseconds(50)) {
                let announced = signals.contains {
                    $0.member == "PropertiesChanged" && $0.changed["PlaybackStatus"] != nil
                }
                if daemonStatus == nil, announced, (try? await get("PlaybackStatus"))?.string == status { return true }
                return signals.dropFirst(from).contains {
                    $0.member == "PropertiesChanged" && $0.changedInterface == "org.mpris.MediaPlayer2.Player"
                        && $0.changed["PlaybackStatus"]?.string == status
                }
            }
            if reached { return }
        }
        try await waitForPlayerChange(after: from, timeout: timeout, "PlaybackStatus \(status)") {
            $0["PlaybackStatus"]?.string == status
        }
    }

    /// Waits for the daemon to exit and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let exited = await waiter.wait(timeout: timeout) { [unowned self] in daemonStatus != nil }
        guard exited, let daemonStatus else { throw HarnessError("quaver did not exit within \(timeout)") }
        return daemonStatus
    }

    // MARK: Calls

    func call(
        _ member: String, interface: String = "org.mpris.MediaPlayer2.Player", _ arguments: [Value] = [],
        destination: String? = nil
    ) async throws -> [Value] {
        try await client.call(
            destination: destination ?? busName, path: ObjectPath("/org/mpris/MediaPlayer2")!, interface: interface,
            member: member, arguments: arguments, timeout: .seconds(10))
    }

    func get(_ property: String, interface: String = "org.mpris.MediaPlayer2.Player") async throws -> Value {
        let reply = try await call(
            "Get", interface: "org.freedesktop.DBus.Properties", [.string(interface), .string(property)])
        return reply.first?.unwrapped ?? .string("")
    }

    func set(_ property: String, _ value: Value, interface: String = "org.mpris.MediaPlayer2.Player") async throws {
        _ = try await call(
            "Set", interface: "org.freedesktop.DBus.Properties",
            [.string(interface), .string(property), .variant(value)])
    }

    func metadata() async throws -> [String: Value] {
        try await get("Metadata").stringVariantDictionary ?? [:]
    }

    func position() async throws -> Int64 {
        try await get("Position").int64 ?? -1
    }

    /// The Player's properties read now, with the reply's serial: the daemon's signals with a
    /// lower serial were sent before this state was read, the others after it. A client
    /// needs it for what was already true when the name appeared, which no signal says.
    func playerState() async throws -> (serial: UInt32, properties: [String: Value]) {
        let message = try Message.methodCall(
            destination: busName, path: MPRISNames.path, interface: MPRISNames.properties, member: "GetAll",
            arguments: [.string(MPRISNames.player)])
        let reply = try await client.reply(to: message, timeout: .seconds(10))
        return (reply.serial, reply.arguments.first?.stringVariantDictionary ?? [:])
    }

    /// Runs `playerctl -p <name> ARGS` against this bus.
    @discardableResult
    func playerctl(_ arguments: String...) async throws -> String {
        try await playerctlRaw(["-p", name] + arguments)
    }

    /// Runs `playerctl ARGS` against this bus and returns its trimmed output.
    func playerctlRaw(_ arguments: [String]) async throws -> String {
        guard let playerctl = Tools.find("playerctl") else { throw HarnessError("playerctl is not installed") }
        let result = try await Tools.run(playerctl, arguments, environment: environment)
        guard result.status == 0 else {
            throw HarnessError(
                "playerctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.error)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every PropertiesChanged recorded so far must not carry Position.
    func expectNoPositionInPropertiesChanged(sourceLocation: SourceLocation = #_sourceLocation) {
        for signal in signals where signal.member == "PropertiesChanged" {
            #expect(
                signal.changed["Position"] == nil, "Position in PropertiesChanged: \(signal)",
                sourceLocation: sourceLocation)
        }
    }

    func stop() {
        let running = extras.filter(\.isRunning)
        running.forEach { $0.send(SIGTERM) }
        // Waiting for the daemons to exit happens on a thread of its own: every test's main
        // actor is shared, and each test waiting there for its daemons held all the others
        // up. A daemon that does not end on SIGTERM is stuck: it is killed and named on
        // standard error with its log's tail (tests that care wait for the exit themselves).
        let tail = String(log().suffix(3000))
        Thread {
            for process in running where process.wait(timeout: .seconds(10)) == nil {
                FileHandle.standardError.write(
                    Data(
                        "quaver (pid \(process.pid)) did not exit within 10 s of SIGTERM; killed. Log tail:\n\(tail)\n"
                            .utf8))
                process.killAndWait()
            }
        }.start()
        client.close()
    }
}

func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
