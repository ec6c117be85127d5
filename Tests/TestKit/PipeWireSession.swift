public import ChildProcess
public import Foundation

/// A PipeWire sound server of the test's own, as a desktop runs it: `pipewire`, WirePlumber
/// and `pipewire-pulse` on a private runtime folder, with a null sink
/// (`support.null-audio-sink`, named ``sinkName``) that WirePlumber makes the default, and a
/// private session bus for WirePlumber. A client that has ``clientEnvironment`` plays to it
/// as it would to a desktop's server (pulsesink finds `pulse/native` in the runtime folder).
/// Each part can be killed and started again; ``stop()`` ends them all and removes the folder.
@MainActor
public final class PipeWireSession {
    /// The three processes of the session.
    public enum Part: String, CaseIterable, Sendable {
        case pipewire
        case wireplumber
        case pulse = "pipewire-pulse"
    }

    /// The name of the null sink the session starts with.
    public static let sinkName = "quaver_test_sink"

    /// The session's folder: its home, configuration, state and logs.
    public let directory: URL
    /// The runtime folder (`XDG_RUNTIME_DIR`) that holds the sockets.
    public let runtime: URL
    /// The PulseAudio socket pipewire-pulse listens on.
    public var pulseSocket: String { runtime.appendingPathComponent("pulse/native").path }
    /// What a client needs to find the server: the runtime folder, as on a desktop.
    public var clientEnvironment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path] }

    private let alwaysSink: Bool
    private var bus: PrivateBus?
    private var running: [Part: ChildProcess] = [:]
    private var others: [ChildProcess] = []

    /// Whether the programs are installed (scripts/setup installs them).
    public static var isInstalled: Bool {
        ["pipewire", "wireplumber", "pipewire-pulse", "pactl", "pw-cli", "pacat", "parec"].allSatisfy {
            Tools.find($0) != nil
        }
    }

    /// Makes the folders and configuration, and (with `start`) starts the session.
    /// - Parameter roleEndpoints: enables WirePlumber's role-based endpoints (off by default
    ///   in WirePlumber 0.4): a stream of a higher-priority role, such as `phone`, corks the
    ///   `music` streams by unlinking them while it plays.
    /// - Parameter alwaysSink: keeps pipewire-pulse's `module-always-sink`, which makes a
    ///   dummy sink whenever no other one exists (pipewire-pulse loads it by default).
    public init(roleEndpoints: Bool = false, alwaysSink: Bool = true, start: Bool = true) async throws {
        guard Self.isInstalled else {
            throw HarnessError(
                "pipewire, wireplumber, pipewire-pulse, pw-cli, pactl, pacat and parec are needed (scripts/setup installs them)"
            )
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-pipewire-\(UUID().uuidString.prefix(8))")
        runtime = directory.appendingPathComponent("rt")
        // pipewire-pulse makes `pulse` in the runtime folder when a stat finds none, and gives
        // up when its mkdir then meets one that another process of the session made in the
        // meantime ("mkdir() …/pulse failed: File exists"): made here first, it is only found.
        try FileManager.default.createDirectory(
            at: runtime.appendingPathComponent("pulse"), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        let config = directory.appendingPathComponent("config")
        try Self.write(
            """
            context.objects = [
                { factory = adapter
                    args = {
                        factory.name     = support.null-audio-sink
                        node.name        = \(Self.sinkName)
                        node.description = "Quaver test sink"
                        media.class      = Audio/Sink
                        audio.position   = [ FL FR ]
                    }
                }
            ]

            """, to: config.appendingPathComponent("pipewire/pipewire.conf.d/quaver-null-sink.conf"))
        self.alwaysSink = alwaysSink
        if roleEndpoints {
            try Self.write(
                try Self.roleEndpointsConfig(),
                to: config.appendingPathComponent("wireplumber/policy.lua.d/60-quaver-role-endpoints.lua"))
        }
        if start { try await self.start() }
    }

    private static func write(_ text: String, to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: file, atomically: true, encoding: .utf8)
    }

    /// Starts every part not running, and waits until the null sink is the default one.
    public func start() async throws {
        for part in Part.allCases where running[part] == nil {
            try await start(part)
        }
        let ready = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
            try await self.pactl(["info"]).output.contains("Default Sink: \(Self.sinkName)")
        }
        guard ready else { throw HarnessError("the PipeWire session did not start: \(logs())") }
    }

    /// Starts one part, and waits until it answers: pipewire on its socket (WirePlumber and
    /// pipewire-pulse connect once, at their start, and give up on a server not yet
    /// listening), pipewire-pulse on its own.
    public func start(_ part: Part) async throws {
        if bus == nil { bus = try await PrivateBus() }
        guard let program = Tools.find(part.rawValue) else { throw HarnessError("\(part.rawValue) is not installed") }
        let log = directory.appendingPathComponent("\(part.rawValue).log").path
        running[part] = try ChildProcess(
            program.path, [], environment: serverEnvironment, output: .file(log), error: .file(log))
        if part == .pipewire {
            let answers = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
                try await self.run("pw-cli", ["info", "0"]).output.contains("core.name")
            }
            guard answers else { throw HarnessError("pipewire did not answer: \(logs())") }
        }
        guard part == .pulse else { return }
        let answers = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
            try await self.pactl(["info"]).status == 0
        }
        guard answers else { throw HarnessError("pipewire-pulse did not answer: \(logs())") }
        if !alwaysSink {
            // pipewire-pulse loads it by default (its pulse.cmd), and a drop-in adds to that list.
            let unload = try await pactl(["unload-module", "module-always-sink"])
            guard unload.status == 0 else { throw HarnessError("unloading module-always-sink: \(unload.output)") }
        }
    }

    /// Kills one part at once, as a crash would.
    public func kill(_ part: Part) async {
        guard let process = running.removeValue(forKey: part) else { return }
        process.send(SIGKILL)
        _ = await process.exit()
    }

    /// What the server processes run with: the private folders and bus, nothing of the
    /// test's own session.
    private var serverEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["PULSE_SERVER", "DISPLAY", "WAYLAND_DISPLAY", "PIPEWIRE_REMOTE", "JOURNAL_STREAM"] {
            environment.removeValue(forKey: name)
        }
        environment.merge(
            [
                "HOME": directory.path, "XDG_RUNTIME_DIR": runtime.path,
                "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path,
                "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
                "DBUS_SESSION_BUS_ADDRESS": bus?.address ?? "",
            ]
        ) { $1 }
        return environment
    }

    /// Runs `program` (pactl, pw-cli) against the session; its status and output.
    public func run(_ program: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        guard let path = Tools.find(program) else { throw HarnessError("\(program) is not installed") }
        var environment = serverEnvironment
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        let result = try await ChildProcess.run(path.path, arguments, environment: environment)
        return (result.status, result.output + result.error)
    }

    /// Runs pactl against pipewire-pulse.
    public func pactl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await run("pactl", arguments)
    }

    /// Removes the node named `name` from the graph (a sink unplugged).
    public func removeNode(_ name: String = PipeWireSession.sinkName) async throws {
        let listing = try await run("pw-cli", ["ls", "Node"]).output
        var id: String?
        for line in listing.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("id ") {
                id = text.dropFirst(3).split(separator: ",").first.map(String.init)
            } else if text == "node.name = \"\(name)\"", let id {
                let result = try await run("pw-cli", ["destroy", id])
                guard result.status == 0 else { throw HarnessError("pw-cli destroy \(id): \(result.output)") }
                return
            }
        }
        throw HarnessError("no node \(name) in: \(listing)")
    }

    /// Starts a stream of `media.role` `role` (silence) that plays until it is hung up.
    public func startCall(role: String = "phone") throws -> ChildProcess {
        let pacat = Tools.find("pacat")!.path
        var environment = serverEnvironment
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        let call = try ChildProcess(
            "/bin/sh",
            ["-c", "exec '\(pacat)' --playback --raw --property=media.role=\(role) --client-name=call < /dev/zero"],
            environment: environment)
        others.append(call)
        return call
    }

    /// Ends a stream `startCall` started, at once.
    public func hangUp(_ call: ChildProcess) async {
        call.send(SIGKILL)  // pacat drains what it has read on SIGTERM: a hang-up is at once
        _ = await call.exit()
        others.removeAll { $0 === call }
    }

    /// Records what a sink plays, from its monitor (`device`; by default the null sink's),
    /// from now on: see ``MonitorRecording``.
    public func record(device: String = PipeWireSession.sinkName + ".monitor") throws -> MonitorRecording {
        let file = directory.appendingPathComponent("monitor-\(UUID().uuidString.prefix(8)).raw")
        var environment = serverEnvironment
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        let process = try ChildProcess(
            Tools.find("parec")!.path,
            [
                "--device=\(device)", "--raw", "--format=s16le", "--channels=1",
                "--rate=\(MonitorRecording.rate)", "--latency-msec=20",
            ], environment: environment, output: .file(file.path, append: false))
        others.append(process)
        return MonitorRecording(file: file, process: process)
    }

    /// The tail of each part's log, for a failure's message.
    public func logs() -> String {
        Part.allCases.map { part in
            let log = directory.appendingPathComponent("\(part.rawValue).log")
            return "\(part.rawValue): " + String(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(1500))
        }.joined(separator: "\n")
    }

    /// Ends every process of the session and removes its folder.
    public func stop() {
        for process in others + Array(running.values) {
            process.killAndWait()
        }
        others = []
        running = [:]
        bus?.stop()
        bus = nil
        try? FileManager.default.removeItem(at: directory)
    }

    /// WirePlumber 0.4's role-based endpoints, as its own `50-endpoints-config.lua` has them,
    /// commented out: each role's priority and what a stream of it does to those below
    /// (music is "Multimedia"; a `phone` stream corks it).
    static func roleEndpointsConfig() throws -> String {
        let shipped = "/usr/share/wireplumber/policy.lua.d/50-endpoints-config.lua"
        let text = (try? String(contentsOfFile: shipped, encoding: .utf8)) ?? ""
        guard let open = text.range(of: "--[["),
            let close = text.range(of: "]]--", range: open.upperBound..<text.endIndex)
        else { throw HarnessError("\(shipped) (WirePlumber 0.4) does not hold the role endpoints to enable") }
        return String(text[open.upperBound..<close.lowerBound])
    }
}
