import DBus
import Dispatch
import Foundation

/// The two players compared.
enum PlayerKind: String, CaseIterable, Sendable {
    case quaver, mpv

    /// The MPRIS bus name each one takes on its private bus.
    var busName: String { "org.mpris.MediaPlayer2.\(rawValue)" }

    var title: String {
        switch self {
        case .quaver: "Quaver"
        case .mpv: "mpv + mpv-mpris"
        }
    }

    /// Which player goes first in `round`: the order alternates so that drift in the machine
    /// (cache, thermal, other load) does not always favour the same one.
    static func order(round: Int) -> [PlayerKind] { round.isMultiple(of: 2) ? [.quaver, .mpv] : [.mpv, .quaver] }
}

/// Where the programs the benchmark runs are, and the media it plays.
struct Programs: Sendable {
    var quaver: String
    var mpv: String
    var mprisPlugin: String
    var dbusDaemon: String
    var gstLaunch: String
    /// The generated tagged tracks every player plays.
    var tracks: [String]
    /// Scratch folder of this run.
    var workDir: URL
    /// One GStreamer plugin registry for every Quaver of the run, made by the first one.
    var gstRegistry: String { workDir.appendingPathComponent("gst-registry.bin").path }

    /// The command line that starts `kind` as an ordinary daemon on its bus: silent output
    /// that keeps real time, the benchmark's tracks, paused or playing.
    func daemonCommand(_ kind: PlayerKind, paused: Bool) -> [String] {
        switch kind {
        case .quaver:
            return [quaver, "--audio-sink", "fakesink sync=true", "--no-resume"] + (paused ? ["--paused"] : []) + tracks
        case .mpv:
            return [
                mpv, "--no-video", "--ao=null", "--idle=no", "--no-config", "--script=\(mprisPlugin)",
                "--loop-playlist=inf", "--keep-open=yes", "--no-terminal",
            ] + (paused ? ["--pause"] : []) + ["--"] + tracks
        }
    }
}

/// Finds an executable on `PATH` (or in the usual folders).
func findProgram(_ name: String) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/bin"] {
        let candidate = folder + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A private `dbus-daemon --session` of one player: nothing else is on it.
final class PrivateBus: @unchecked Sendable {
    // Rule: created and stopped on the main actor only.
    private let process = Process()
    let address: String

    init(dbusDaemon: String, logFile: URL) throws {
        process.executableURL = URL(fileURLWithPath: dbusDaemon)
        // The socket goes beside the log, in the run's folder, not in /tmp.
        process.arguments = [
            "--session", "--nofork", "--nopidfile", "--print-address=1",
            "--address=unix:dir=\(logFile.deletingLastPathComponent().path)",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: touch(logFile))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The address is the first line it prints (it prints nothing else on stdout).
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        address = String(decoding: line, as: UTF8.self)
        guard address.hasPrefix("unix:") else {
            stop()
            throw BenchError("dbus-daemon printed no address (see \(logFile.path))")
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Kills the daemon (it is throwaway) and removes its socket, which it leaves behind.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let socket = address.split(separator: ",").first { $0.hasPrefix("unix:path=") }?.dropFirst("unix:path=".count)
        if let socket { unlink(String(socket)) }
    }
}

/// Creates `file` (empty) when it does not exist and returns it.
@discardableResult
func touch(_ file: URL) -> URL {
    if !FileManager.default.fileExists(atPath: file.path) {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    }
    return file
}

/// One player on its own private bus, with a client connection that stamps every signal the
/// player sends as it arrives. At most one process of the player runs at a time.
@MainActor
final class PlayerSession {
    let kind: PlayerKind
    let bus: PrivateBus
    let client: Connection
    let events = EventHub()
    /// The player's own HOME, with every XDG folder inside it.
    let home: URL
    let logFile: URL
    private let programs: Programs
    private(set) var process: Process?
    private(set) var exitStatus: Int32?
    /// The MPRIS bus name the player takes (`kind.busName` unless the player is started with
    /// another `--name`).
    let busName: String
    /// The unique name owning `busName` now, nil while nobody does.
    private(set) var nameOwner: String?
    /// What is left of the player's output after its last full line (with `watchOutput`).
    private var outputTail = Data()

    init(_ kind: PlayerKind, programs: Programs, label: String, busName: String? = nil) throws {
        self.kind = kind
        self.busName = busName ?? kind.busName
        self.programs = programs
        let folder = programs.workDir.appendingPathComponent("\(label)-\(kind.rawValue)")
        try? FileManager.default.removeItem(at: folder)
        home = folder.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        logFile = folder.appendingPathComponent("player.log")
        bus = try PrivateBus(dbusDaemon: programs.dbusDaemon, logFile: folder.appendingPathComponent("dbus-daemon.log"))
        client = try Connection(address: bus.address)
        try client.onSignal(interface: MPRIS.properties, member: "PropertiesChanged", path: MPRIS.path) {
            [events] message in
            let time = ContinuousClock.now
            let arguments = message.arguments
            guard arguments.count >= 2, let interface = arguments[0].string,
                let changed = arguments[1].stringVariantDictionary
            else { return }
            events.post(BusEvent(kind: .propertiesChanged(interface: interface, changed: changed), time: time))
        }
        try client.onSignal(interface: MPRIS.player, member: "Seeked", path: MPRIS.path) { [events] message in
            let time = ContinuousClock.now
            events.post(BusEvent(kind: .seeked(position: message.arguments.first?.int64 ?? -1), time: time))
        }
        try client.onSignal(
            sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"
        ) {
            [weak self] message in
            let time = ContinuousClock.now
            let arguments = message.arguments
            guard let self, arguments.count == 3, let name = arguments[0].string, let owner = arguments[2].string else {
                return
            }
            if name == busName { nameOwner = owner.isEmpty ? nil : owner }
            events.post(BusEvent(kind: .nameOwnerChanged(name: name, newOwner: owner), time: time))
        }
    }

    /// The environment of the player: a private HOME and XDG folders, this bus, no desktop.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "JOURNAL_STREAM", "PULSE_SERVER", "XDG_RUNTIME_DIR"] {
            environment[key] = nil
        }
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.appendingPathComponent(".config").path
        environment["XDG_CACHE_HOME"] = home.appendingPathComponent(".cache").path
        environment["XDG_STATE_HOME"] = home.appendingPathComponent(".local/state").path
        environment["XDG_DATA_HOME"] = home.appendingPathComponent(".local/share").path
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["GST_REGISTRY"] = programs.gstRegistry
        return environment
    }

    var isRunning: Bool { process != nil && exitStatus == nil }

    /// The player's process id (the valgrind process when run under valgrind: it is the same).
    var pid: Int32 {
        get throws {
            guard let process, isRunning else { throw BenchError("\(kind.title) is not running") }
            return process.processIdentifier
        }
    }

    /// Starts `command` (program first) with the player's environment; output goes to the log.
    /// With `watchOutput`, the output goes through a pipe instead, is copied to the log and
    /// every line of it is posted as an `.output` event, stamped when the benchmark read it.
    func launch(_ command: [String], environment extra: [String: String] = [:], watchOutput: Bool = false) throws {
        guard !isRunning else { throw BenchError("\(kind.title) already runs") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = environment.merging(extra) { $1 }
        let log = try FileHandle(forWritingTo: touch(logFile))
        log.seekToEndOfFile()
        if watchOutput {
            let pipe = Pipe()
            outputTail = Data()
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                let time = ContinuousClock.now
                if data.isEmpty {
                    handle.readabilityHandler = nil  // end of output: the player (and its children) ended
                    try? log.close()
                    return
                }
                log.write(data)
                DispatchQueue.main.async {
                    MainActor.assumeIsolated { self?.receiveOutput(data, time: time) }
                }
            }
            process.standardOutput = pipe
            process.standardError = pipe
        } else {
            process.standardOutput = log
            process.standardError = log
        }
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [weak self] finished in
            let status = finished.terminationStatus
            let pid = finished.processIdentifier
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, self.process?.processIdentifier == pid else { return }
                    self.exitStatus = status
                    self.events.post(BusEvent(kind: .exited(status: status), time: .now))
                }
            }
        }
        exitStatus = nil
        try process.run()
        // The child has its own copy (Process closes a pipe's write end in this process; the
        // read end's handler owns the log).
        if !watchOutput { try? log.close() }
        self.process = process
    }

    /// Splits output into lines and posts each one.
    private func receiveOutput(_ data: Data, time: ContinuousClock.Instant) {
        outputTail.append(data)
        while let newline = outputTail.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: outputTail[outputTail.startIndex..<newline], as: UTF8.self)
            outputTail.removeSubrange(outputTail.startIndex...newline)
            events.post(BusEvent(kind: .output(line: line), time: time))
        }
    }

    /// Starts the player and waits until it owns its bus name and has answered `GetAll`.
    /// Returns the times from just before the process was started to each of those.
    @discardableResult
    func start(_ command: [String], environment extra: [String: String] = [:], timeout: Duration = .seconds(30))
        async throws
        -> (owned: Duration, answered: Duration)
    {
        let name = busName
        let ready = events.expect("\(name) owned or \(kind.title) exited") { event in
            switch event.kind {
            case .nameOwnerChanged(let changed, let owner): changed == name && !owner.isEmpty
            case .exited: true
            default: false
            }
        }
        let start = ContinuousClock.now
        try launch(command, environment: extra)
        let event = try await events.wait(ready, timeout: timeout)
        if case .exited(let status) = event.kind {
            throw BenchError("\(kind.title) exited with status \(status) before taking \(name); see \(logFile.path)")
        }
        let owned = event.time - start
        _ = try await getAll(MPRIS.player)
        return (owned, ContinuousClock.now - start)
    }

    /// Asks the player to quit over MPRIS and waits until it has exited and let go of its
    /// name; kills it when it does not within the deadline.
    func stop(timeout: Duration = .seconds(15)) async {
        guard let process, isRunning else { return }
        let released = events.expect("\(busName) released") { event in
            if case .nameOwnerChanged(let name, let owner) = event.kind {
                name == self.busName && owner.isEmpty
            } else {
                false
            }
        }
        let exited = events.expect("exit of \(kind.title)") { if case .exited = $0.kind { true } else { false } }
        _ = try? await call("Quit", interface: MPRIS.root, timeout: .seconds(5))
        if (try? await events.wait(exited, timeout: timeout)) == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = try? await events.wait(exited, timeout: .seconds(10))
        }
        exitStatus = exitStatus ?? -1
        if nameOwner != nil { _ = try? await events.wait(released, timeout: .seconds(5)) }
    }

    /// Kills whatever still runs and closes the bus.
    func close() {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        client.close()
        bus.stop()
    }

    // MARK: Calls

    func call(
        _ member: String, interface: String = MPRIS.player, _ arguments: [Value] = [], timeout: Duration = .seconds(10)
    ) async throws -> [Value] {
        try await client.call(
            destination: busName, path: MPRIS.path, interface: interface, member: member, arguments: arguments,
            timeout: timeout)
    }

    func get(_ property: String, interface: String = MPRIS.player) async throws -> Value {
        let reply = try await call("Get", interface: MPRIS.properties, [.string(interface), .string(property)])
        return reply.first?.unwrapped ?? .string("")
    }

    func set(_ property: String, _ value: Value, interface: String = MPRIS.player) async throws {
        _ = try await call(
            "Set", interface: MPRIS.properties, [.string(interface), .string(property), .variant(value)])
    }

    func getAll(_ interface: String) async throws -> [String: Value] {
        let reply = try await call("GetAll", interface: MPRIS.properties, [.string(interface)])
        return reply.first?.stringVariantDictionary ?? [:]
    }

    func playbackStatus() async throws -> String { try await get("PlaybackStatus").string ?? "" }

    /// Brings the player to `status` ("Playing" or "Paused") and waits until it says so.
    func settle(_ status: String, timeout: Duration = .seconds(20)) async throws {
        if try await playbackStatus() == status { return }
        let reached = events.expect("PlaybackStatus \(status) from \(kind.title)") { $0.playbackStatus == status }
        _ = try await call(status == "Playing" ? "Play" : "Pause")
        if try await playbackStatus() == status { return }
        _ = try await events.wait(reached, timeout: timeout)
    }

    /// Waits until the player shows a track (Metadata with a length), as a client would see it.
    func waitForTrack(timeout: Duration = .seconds(20)) async throws {
        let loaded = events.expect("Metadata with mpris:length from \(kind.title)") { event in
            guard case .propertiesChanged(let interface, let changed) = event.kind, interface == MPRIS.player else {
                return false
            }
            return changed["Metadata"]?.unwrapped.stringVariantDictionary?["mpris:length"] != nil
        }
        if try await get("Metadata").stringVariantDictionary?["mpris:length"] != nil { return }
        _ = try await events.wait(loaded, timeout: timeout)
    }
}

/// Runs a program to its end without blocking the main actor and returns its exit status
/// and everything it printed (stdout and stderr together, kept in `log` when given). A
/// program still running at the deadline is killed and reported.
@MainActor
func runProgram(
    _ command: [String], environment: [String: String]? = nil, log logFile: URL? = nil,
    timeout: Duration = .seconds(120)
) async throws -> (status: Int32, output: String) {
    let outputFile =
        logFile
        ?? FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-bench-\(getpid())-\(UUID().uuidString).out")
    try? FileManager.default.removeItem(at: outputFile)
    let handle = try FileHandle(forWritingTo: touch(outputFile))
    defer {
        try? handle.close()
        if logFile == nil { try? FileManager.default.removeItem(at: outputFile) }
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    if let environment { process.environment = environment }
    process.standardOutput = handle
    process.standardError = handle
    process.standardInput = FileHandle.nullDevice
    let deadline = DispatchWorkItem { [process] in
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
            DispatchQueue.main.asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: deadline)
        } catch {
            continuation.resume(throwing: BenchError("cannot run \(command[0]): \(error)"))
        }
    }
    // Nothing else here sends SIGKILL: a program killed by it ran past the deadline.
    let timedOut = process.terminationReason == .uncaughtSignal && status == SIGKILL
    deadline.cancel()
    let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    if timedOut { throw BenchError("\(command[0]) did not finish within \(timeout)") }
    return (status, output)
}
