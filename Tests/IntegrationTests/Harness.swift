import ChildProcess
import DBus
import Dispatch
import Foundation
import Testing

/// Errors the harness reports instead of hanging.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Lets tests wait for a condition with a deadline: the condition is re-checked each time
/// `poke()` reports a new event (a signal, an exit), never on a timer.
@MainActor
final class Waiter {
    private var pending: [UUID: (check: () -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]

    /// Re-evaluates every pending wait (call after each new event).
    func poke() {
        for (id, waiter) in pending where waiter.check() {
            pending[id] = nil
            waiter.continuation.resume(returning: true)
        }
    }

    /// Returns true once `check` holds, false when `timeout` passes first.
    func wait(timeout: Duration, until check: @escaping () -> Bool) async -> Bool {
        if check() { return true }
        return await withCheckedContinuation { continuation in
            let id = UUID()
            pending[id] = (check, continuation)
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            DispatchQueue.main.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [weak self] in
                MainActor.assumeIsolated {
                    guard let waiter = self?.pending.removeValue(forKey: id) else { return }
                    waiter.continuation.resume(returning: false)
                }
            }
        }
    }

    /// Like `wait(timeout:until:)`, also re-checking every `interval`: for a condition no
    /// event announces (a file the daemon writes).
    func wait(timeout: Duration, pollingEvery interval: Duration, until check: @escaping () -> Bool) async -> Bool {
        let poller = Task { @MainActor [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                self?.poke()
            }
        }
        defer { poller.cancel() }
        return await wait(timeout: timeout, until: check)
    }
}

/// A private `dbus-daemon` for one test.
@MainActor
final class PrivateBus {
    let process: ChildProcess
    let address: String
    let directory: URL

    /// - Parameter prepare: called with the bus's folder before the daemon starts; returns
    ///   extra environment for it (where to find activatable services, for instance).
    init(prepare: (URL) throws -> [String: String] = { _ in [:] }) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard let daemon = Tools.find("dbus-daemon") else { throw HarnessError("dbus-daemon is not installed") }
        let extra = try prepare(directory)
        process = try ChildProcess(
            // The socket lives in the bus's folder, removed with it: the session default
            // (`unix:tmpdir=/tmp`) leaves a socket file in /tmp for every bus that is killed.
            daemon.path, ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:dir=\(directory.path)"],
            environment: ProcessInfo.processInfo.environment.merging(extra) { $1 }, output: .pipe)
        // The address line is the first thing it prints; if the daemon fails, its exit ends
        // the read. Read on a thread of its own: when many tests start at once, dozens of
        // buses start together, and blocking reads on the main actor added up to seconds.
        address = await process.firstLine()
        guard address.hasPrefix("unix:") else {
            process.killAndWait()
            throw HarnessError("dbus-daemon printed no address")
        }
    }

    /// Kills the bus (it is throwaway) and removes its folder.
    func stop() {
        process.killAndWait()
        try? FileManager.default.removeItem(at: directory)
    }

    isolated deinit { stop() }
}

enum Tools {
    static func find(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// The `quaver` executable built beside this test bundle (or `$QUAVER_BINARY`).
    static var quaver: URL {
        if let explicit = ProcessInfo.processInfo.environment["QUAVER_BINARY"] { return URL(fileURLWithPath: explicit) }
        return built("quaver")
    }

    /// Runs a program to completion without blocking the main actor.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String, error: String) {
        try await ChildProcess.run(executable.path, arguments, environment: environment)
    }
}

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
    static func coveredTracks(count: Int, seconds: Double, format: String = "flac") async throws -> [(track: URL, cover: Data)] {
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
        let key = arguments.filter { !$0.hasPrefix("--") }.joined(separator: "x") + (arguments.contains("--track-covers") ? "-covers" : "")
        let task = lock.withLock {
            if let existing = made[key] { return existing }
            let task = Task {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-media-\(getpid())-\(key)")
                let result = try await Tools.run(
                    Tools.quaver, ["--make-test-tracks", folder.path] + arguments,
                    environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 })
                guard result.status == 0 else { throw HarnessError("making test tracks failed: \(result.error)") }
                return result.output.split(separator: "\n").map(String.init)
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
    let name: String

    struct RecordedSignal: CustomStringConvertible {
        var member: String
        var interface: String?
        var arguments: [Value]
        var sender: String?
        /// When the client handled it.
        var received = ContinuousClock.now
        var description: String { "\(member)\(arguments)" }

        /// For PropertiesChanged: the changed map.
        var changed: [String: Value] { arguments.count > 1 ? arguments[1].stringVariantDictionary ?? [:] : [:] }
        var changedInterface: String? { arguments.first?.string }
    }

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
        try client.onSignal(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", path: ObjectPath("/org/mpris/MediaPlayer2")!) { [weak self] message in
            self?.record(message)
        }
        try client.onSignal(interface: "org.mpris.MediaPlayer2.Player", member: "Seeked") { [weak self] message in
            self?.record(message)
        }
        try client.onSignal(interface: "org.freedesktop.DBus", member: "NameOwnerChanged") { [weak self] message in
            let args = message.arguments
            guard let self, args.count == 3, let name = args[0].string, let owner = args[2].string else { return }
            self.owners[name] = owner
            self.waiter.poke()
        }
    }

    private func record(_ message: Message) {
        signals.append(RecordedSignal(member: message.member ?? "", interface: message.interface, arguments: message.arguments, sender: message.sender))
        waiter.poke()
    }

    /// Set before `launch`: more environment for the daemon (a sound server to use, say).
    var extraEnvironment: [String: String] = [:]
    /// A command that runs quaver (its path and arguments follow), e.g. one that drops
    /// privileges; empty: quaver is run directly.
    var launcher: [String] = []

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment.merging(Session.xdg(home: home)) { $1 }.merging(extraEnvironment) { $1 }
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        env.removeValue(forKey: "JOURNAL_STREAM")
        return env
    }

    nonisolated static let sharedRegistry = FileManager.default.temporaryDirectory
        .appendingPathComponent("quaver-tests-gst-registry-\(getuid()).bin").path

    /// A home of the test's own: every XDG folder inside it.
    nonisolated static func xdg(home: URL) -> [String: String] {
        [
            "HOME": home.path,
            "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_STATE_HOME": home.appendingPathComponent(".local/state").path,
            "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
            "XDG_DATA_DIRS": home.appendingPathComponent("system-share").path,
            // One GStreamer plugin registry for every process of the run: with a registry
            // per test home, each quaver would scan all plugins again when it starts.
            "GST_REGISTRY": sharedRegistry,
        ]
    }

    var stateFolder: URL { home.appendingPathComponent(".local/state/quaver") }
    var configFile: URL { home.appendingPathComponent(".config/quaver/quaver.conf") }

    func writeConfig(_ text: String) throws {
        try FileManager.default.createDirectory(at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
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
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = try spawn(command: command, log: logFile)
        process.onExit { [weak self] status in
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    self?.daemonStatus = status
                    self?.waiter.poke()
                }
            }
        }
        daemon = process
        let owned = await waiter.wait(timeout: .seconds(30)) { [unowned self] in
            (owners[wanted].map { !$0.isEmpty } ?? false) || daemonStatus != nil
        }
        guard owned, daemonStatus == nil else {
            throw HarnessError("\(program) did not take \(wanted) (status \(daemonStatus.map(String.init) ?? "running"); owners seen: \(owners)); log: \(self.log().replacingOccurrences(of: "\n", with: " | "))")
        }
    }

    /// Starts another quaver on this bus (stopped with the session); its output goes to `log`.
    func spawn(_ arguments: [String], sink: String = "fakesink sync=true", log: URL) throws -> ChildProcess {
        try spawn(command: quaverCommand(arguments, sink: sink), log: log)
    }

    /// Starts `command` on this bus (stopped with the session); its output goes to `log`.
    func spawn(command: [String], log: URL) throws -> ChildProcess {
        let fd = open(log.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessError("cannot open \(log.path)") }
        defer { close(fd) }
        let process = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment, output: .descriptor(fd), error: .descriptor(fd))
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
    func waitForSignal(after from: Int = 0, timeout: Duration = .seconds(30), _ what: String, where match: @escaping (RecordedSignal) -> Bool) async throws -> RecordedSignal {
        let found = await waiter.wait(timeout: timeout) { [unowned self] in
            signals.dropFirst(from).contains(where: match)
        }
        guard found, let signal = signals.dropFirst(from).first(where: match) else {
            throw HarnessError("no \(what) within \(timeout); signals since #\(from): \(signals.dropFirst(from).map(\.description))\nlog:\n\(self.log())")
        }
        return signal
    }

    /// Waits for a PropertiesChanged of the Player interface whose changes satisfy `match`.
    @discardableResult
    func waitForPlayerChange(after from: Int, timeout: Duration = .seconds(30), _ what: String, where match: @escaping ([String: Value]) -> Bool) async throws -> RecordedSignal {
        try await waitForSignal(after: from, timeout: timeout, what) {
            $0.member == "PropertiesChanged" && $0.changedInterface == "org.mpris.MediaPlayer2.Player" && match($0.changed)
        }
    }

    /// Waits for PlaybackStatus to be `status`: as read, or as announced after signal `from`.
    /// With `from`, a read counts only once a new quaver owns the name (one that owns it
    /// only once its first state is true announces no change to it).
    func waitForStatus(_ status: String, after from: Int = 0, timeout: Duration = .seconds(30)) async throws {
        if from == 0, try await get("PlaybackStatus").string == status { return }
        let deadline = ContinuousClock.now + timeout
        while from > 0, ContinuousClock.now < deadline {
            if daemonStatus == nil, (try? await get("PlaybackStatus"))?.string == status { return }
            if signals.dropFirst(from).contains(where: {
                $0.member == "PropertiesChanged" && $0.changedInterface == "org.mpris.MediaPlayer2.Player"
                    && $0.changed["PlaybackStatus"]?.string == status
            }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await waitForPlayerChange(after: from, timeout: timeout, "PlaybackStatus \(status)") { $0["PlaybackStatus"]?.string == status }
    }

    /// Waits for the daemon to exit and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let exited = await waiter.wait(timeout: timeout) { [unowned self] in daemonStatus != nil }
        guard exited, let daemonStatus else { throw HarnessError("quaver did not exit within \(timeout)") }
        return daemonStatus
    }

    // MARK: Calls

    func call(_ member: String, interface: String = "org.mpris.MediaPlayer2.Player", _ arguments: [Value] = [], destination: String? = nil) async throws -> [Value] {
        try await client.call(
            destination: destination ?? busName, path: ObjectPath("/org/mpris/MediaPlayer2")!, interface: interface,
            member: member, arguments: arguments, timeout: .seconds(10))
    }

    func get(_ property: String, interface: String = "org.mpris.MediaPlayer2.Player") async throws -> Value {
        let reply = try await call("Get", interface: "org.freedesktop.DBus.Properties", [.string(interface), .string(property)])
        return reply.first?.unwrapped ?? .string("")
    }

    func set(_ property: String, _ value: Value, interface: String = "org.mpris.MediaPlayer2.Player") async throws {
        _ = try await call("Set", interface: "org.freedesktop.DBus.Properties", [.string(interface), .string(property), .variant(value)])
    }

    func metadata() async throws -> [String: Value] {
        try await get("Metadata").stringVariantDictionary ?? [:]
    }

    func position() async throws -> Int64 {
        try await get("Position").int64 ?? -1
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
            throw HarnessError("playerctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.error)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every PropertiesChanged recorded so far must not carry Position.
    func expectNoPositionInPropertiesChanged(sourceLocation: SourceLocation = #_sourceLocation) {
        for signal in signals where signal.member == "PropertiesChanged" {
            #expect(signal.changed["Position"] == nil, "Position in PropertiesChanged: \(signal)", sourceLocation: sourceLocation)
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
                FileHandle.standardError.write(Data("quaver (pid \(process.pid)) did not exit within 10 s of SIGTERM; killed. Log tail:\n\(tail)\n".utf8))
                process.killAndWait()
            }
        }.start()
        client.close()
    }
}

func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

// MARK: - Programs other than quaver

extension Tools {
    /// The executable `name` that the package builds beside this test bundle.
    static func built(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
    }
}
