import ChildProcess
import DBus
import Dispatch
import Foundation
import TestKit

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
    var gstLaunch: String
    /// The generated tagged tracks every player plays.
    var tracks: [String]
    /// Scratch folder of this run.
    var workDir: URL
    /// One GStreamer plugin registry for every Quaver of the run, made by the first one.
    var gstRegistry: String { workDir.appendingPathComponent("gst-registry.bin").path }

    /// Makes `count` generated FLAC tracks of `seconds` each in the work folder with
    /// `quaver --make-test-tracks`: the tracks every player plays.
    func makeTracks(_ count: Int, seconds: String) async throws -> [String] {
        let made = try await Tools.makeTestTracks(
            quaver, into: workDir.appendingPathComponent("tracks"),
            ["--track-count", String(count), "--track-seconds", seconds], registry: gstRegistry)
        guard made.count == count else {
            throw HarnessError("quaver --make-test-tracks did not make \(count) tracks: \(made)")
        }
        return made
    }

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

/// Creates `file` (empty) when it does not exist and returns it.
@discardableResult
func touch(_ file: URL) -> URL {
    if !FileManager.default.fileExists(atPath: file.path) {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    }
    return file
}

/// The quaver binary: `path`, or the one beside quaver-bench; throws when no program is
/// there.
func quaverBinary(_ path: String?) throws -> String {
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let quaver = path ?? me.deletingLastPathComponent().appendingPathComponent("quaver").path
    guard FileManager.default.isExecutableFile(atPath: quaver) else {
        throw HarnessError("no quaver binary at \(quaver) (build it, or pass --quaver)")
    }
    return quaver
}

/// The work folder (`path`, or `name` in the temporary folder), emptied of the previous run
/// (but never a folder quaver-bench did not make) and marked as quaver-bench's.
func prepareWorkDir(_ path: String?, default name: String) throws -> URL {
    let workDir = URL(fileURLWithPath: path ?? FileManager.default.temporaryDirectory.appendingPathComponent(name).path)
    let marker = workDir.appendingPathComponent(".quaver-bench")
    let existing = (try? FileManager.default.contentsOfDirectory(atPath: workDir.path)) ?? []
    if !existing.isEmpty {
        guard FileManager.default.fileExists(atPath: marker.path) else {
            throw HarnessError("\(workDir.path) is not empty and was not made by quaver-bench; pass another --work-dir")
        }
        try FileManager.default.removeItem(at: workDir)
    }
    try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    touch(marker)
    return workDir
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
    private(set) var process: ChildProcess?
    private(set) var exitStatus: Int32?
    /// The MPRIS bus name the player takes (`kind.busName` unless the player is started with
    /// another `--name`).
    let busName: String
    /// The unique name owning `busName` now, nil while nobody does.
    private(set) var nameOwner: String?

    init(_ kind: PlayerKind, programs: Programs, label: String, busName: String? = nil) async throws {
        self.kind = kind
        self.busName = busName ?? kind.busName
        self.programs = programs
        let folder = programs.workDir.appendingPathComponent("\(label)-\(kind.rawValue)")
        try? FileManager.default.removeItem(at: folder)
        home = folder.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        logFile = folder.appendingPathComponent("player.log")
        bus = try await PrivateBus(errorLog: folder.appendingPathComponent("dbus-daemon.log"))
        client = try Connection(address: bus.address)
        try client.followMPRIS { [weak self] signal in
            guard let self else { return }
            let kind: BusEvent.Kind
            if let change = signal.nameOwnerChange {
                if change.name == busName { nameOwner = change.owner.isEmpty ? nil : change.owner }
                kind = .nameOwnerChanged(name: change.name, newOwner: change.owner)
            } else if signal.isSeeked {
                kind = .seeked(position: signal.arguments.first?.int64 ?? -1)
            } else if let interface = signal.changedInterface {
                kind = .propertiesChanged(interface: interface, changed: signal.changed)
            } else {
                return
            }
            events.post(BusEvent(kind: kind, time: signal.received))
        }
    }

    /// The environment of the player: a private HOME and XDG folders, this bus, no desktop.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.merging(Tools.privateHome(home)) { $1 }
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "JOURNAL_STREAM", "PULSE_SERVER", "XDG_RUNTIME_DIR"] {
            environment[key] = nil
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["GST_REGISTRY"] = programs.gstRegistry
        return environment
    }

    var isRunning: Bool { process != nil && exitStatus == nil }

    /// The player's process id (the valgrind process when run under valgrind: it is the same).
    var pid: Int32 {
        get throws {
            guard let process, isRunning else { throw HarnessError("\(kind.title) is not running") }
            return process.pid
        }
    }

    /// Starts `command` (program first) with the player's environment; output goes to the log.
    /// With `watchOutput`, the output goes through a pipe instead, is copied to the log and
    /// every line of it is posted as an `.output` event, stamped when the benchmark read it.
    func launch(_ command: [String], environment extra: [String: String] = [:], watchOutput: Bool = false) throws {
        guard !isRunning else { throw HarnessError("\(kind.title) already runs") }
        exitStatus = nil
        let process = try ChildProcess(
            command[0], Array(command.dropFirst()), environment: environment.merging(extra) { $1 },
            output: watchOutput ? .pipe : .file(touch(logFile).path), error: .output)
        if watchOutput {
            let log = try FileHandle(forWritingTo: touch(logFile))
            log.seekToEndOfFile()
            process.readLinesOnMainActor(copyingTo: log) { [weak self] line, time in
                self?.events.post(BusEvent(kind: .output(line: line), time: time))
            }
        }
        process.onExitOnMainActor { [weak self] status in
            guard let self, self.process === process else { return }
            exitStatus = status
            events.post(BusEvent(kind: .exited(status: status), time: .now))
        }
        self.process = process
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
            throw HarnessError("\(kind.title) exited with status \(status) before taking \(name); see \(logFile.path)")
        }
        let owned = event.time - start
        _ = try await getAll(MPRISNames.player)
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
        _ = try? await call("Quit", interface: MPRISNames.root, timeout: .seconds(5))
        if (try? await events.wait(exited, timeout: timeout)) == nil {
            process.send(SIGKILL)
            _ = try? await events.wait(exited, timeout: .seconds(10))
        }
        exitStatus = exitStatus ?? -1
        if nameOwner != nil { _ = try? await events.wait(released, timeout: .seconds(5)) }
    }

    /// Kills whatever still runs and closes the bus.
    func close() {
        process?.killAndWait()
        client.close()
        bus.stop()
    }

    // MARK: Calls

    func call(
        _ member: String, interface: String = MPRISNames.player, _ arguments: [Value] = [],
        timeout: Duration = .seconds(10)
    ) async throws -> [Value] {
        try await client.call(
            destination: busName, path: MPRISNames.path, interface: interface, member: member, arguments: arguments,
            timeout: timeout)
    }

    func get(_ property: String, interface: String = MPRISNames.player) async throws -> Value {
        let reply = try await call("Get", interface: MPRISNames.properties, [.string(interface), .string(property)])
        return reply.first?.unwrapped ?? .string("")
    }

    func set(_ property: String, _ value: Value, interface: String = MPRISNames.player) async throws {
        _ = try await call(
            "Set", interface: MPRISNames.properties, [.string(interface), .string(property), .variant(value)])
    }

    func getAll(_ interface: String) async throws -> [String: Value] {
        let reply = try await call("GetAll", interface: MPRISNames.properties, [.string(interface)])
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
            guard case .propertiesChanged(let interface, let changed) = event.kind, interface == MPRISNames.player
            else {
                return false
            }
            return changed["Metadata"]?.unwrapped.stringVariantDictionary?["mpris:length"] != nil
        }
        if try await get("Metadata").stringVariantDictionary?["mpris:length"] != nil { return }
        _ = try await events.wait(loaded, timeout: timeout)
    }
}
