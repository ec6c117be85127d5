import ChildProcess
import Foundation
import TestKit
import Testing

/// A PulseAudio server of the test's own: a null sink, its socket in a private folder, no
/// other clients. Quaver plays to it as it would to a desktop's sound server.
@MainActor
final class PulseServer {
    let directory: URL
    let socket: String
    private let script: URL
    private let log: URL
    private var server: ChildProcess?
    private var calls: [ChildProcess] = []

    /// - Parameter corking: load role-based corking, as desktops do: a stream with
    ///   `media.role=phone` corks the `music` streams while it plays.
    init(corking: Bool = false) async throws {
        guard Tools.find("pulseaudio") != nil, Tools.find("pactl") != nil, Tools.find("pacat") != nil else {
            throw HarnessError("pulseaudio, pactl and pacat are needed (scripts/setup installs them)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-pulse-\(UUID().uuidString.prefix(8))")
        let runtime = directory.appendingPathComponent("rt")
        try FileManager.default.createDirectory(
            at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        socket = runtime.appendingPathComponent("native").path
        script = directory.appendingPathComponent("server.pa")
        log = directory.appendingPathComponent("pulseaudio.log")
        try
            ("""
        load-module module-native-protocol-unix socket=\(socket) auth-anonymous=1
        load-module module-null-sink sink_name=quaver_test_sink
        set-default-sink quaver_test_sink

        """ + (corking ? "load-module module-role-cork trigger_roles=phone cork_roles=music\n" : ""))
        .write(to: script, atomically: true, encoding: .utf8)
        try await start()
    }

    /// Starts the server (again, on the same socket, after `kill`).
    func start() async throws {
        let runtime = directory.appendingPathComponent("rt")
        let environment =
            "HOME=\(quoted(directory.path)) XDG_RUNTIME_DIR=\(quoted(runtime.path)) XDG_CONFIG_HOME=\(quoted(directory.path))"
        let server = try ChildProcess(
            shell:
                "\(environment) exec \(quoted(Tools.find("pulseaudio")!.path)) -n -F \(quoted(script.path)) --daemonize=no --exit-idle-time=-1 --use-pid-file=no --disable-shm=yes --log-target=stderr >> \(quoted(log.path)) 2>&1"
        )
        self.server = server
        // Ready once it answers (a server has no signal to wait for; a short poll, bounded).
        let answered = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
            guard server.isRunning else { return true }
            return try await pactl(["info"]).status == 0
        }
        guard answered, server.isRunning else {
            stop()
            throw HarnessError("pulseaudio did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
    }

    /// Kills the server at once, as a crash would, keeping its folder for `start`.
    func kill() async {
        guard let server else { return }
        server.send(SIGKILL)
        _ = await server.exit()
        self.server = nil
        try? FileManager.default.removeItem(atPath: socket)
    }

    /// Starts a stream with `media.role=phone` (silence from /dev/zero) that plays until
    /// `hangUp`: with corking, the server corks music streams while it plays.
    func startCall() throws -> ChildProcess {
        let pacat = Tools.find("pacat")!.path
        let call = try ChildProcess(
            shell:
                "PULSE_SERVER=\(quoted("unix:" + socket)) exec \(quoted(pacat)) --playback --raw --property=media.role=phone --client-name=phone < /dev/zero > /dev/null 2>&1"
        )
        calls.append(call)
        return call
    }

    func hangUp(_ call: ChildProcess) async {
        call.send(SIGKILL)  // pacat drains what it has read on SIGTERM: a hang-up is at once
        _ = await call.exit()
        calls.removeAll { $0 === call }
    }

    /// The stream of process `pid`: its index on the server, its volume in percent (the
    /// cubic scale mixers show) and whether it is corked.
    func stream(of pid: pid_t) async throws -> (index: Int, volumePercent: Int, corked: Bool)? {
        let listing = try await pactl(["list", "sink-inputs"])
        guard listing.status == 0 else { throw HarnessError("pactl list sink-inputs: \(listing.output)") }
        for block in listing.output.components(separatedBy: "Sink Input #").dropFirst()
        where block.contains("application.process.id = \"\(pid)\"") {
            let index = Int(block.prefix { $0.isNumber }) ?? -1
            let volumeLine =
                block.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("Volume:") }
                ?? ""
            let percent =
                volumeLine.split(separator: "/").dropFirst().first.map {
                    Int($0.trimmingCharacters(in: .whitespaces).dropLast()) ?? -1
                } ?? -1
            return (index, percent, block.contains("Corked: yes"))
        }
        return nil
    }

    var environment: [String: String] { ["PULSE_SERVER": "unix:" + socket] }

    /// Runs pactl against this server.
    func pactl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let output = directory.appendingPathComponent("pactl-\(UUID().uuidString.prefix(8)).out")
        let command = ([Tools.find("pactl")!.path] + arguments).map(quoted).joined(separator: " ")
        let child = try ChildProcess(
            shell: "PULSE_SERVER=\(quoted("unix:" + socket)) exec \(command) > \(quoted(output.path)) 2>&1")
        let status = await child.exit()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: output)
        return (status, text)
    }

    /// The properties of every stream playing to the server, one dictionary per stream.
    func sinkInputProperties() async throws -> [[String: String]] {
        let listing = try await pactl(["list", "sink-inputs"])
        guard listing.status == 0 else { throw HarnessError("pactl list sink-inputs: \(listing.output)") }
        var streams: [[String: String]] = []
        for line in listing.output.split(separator: "\n") {
            if line.hasPrefix("Sink Input #") {
                streams.append([:])
                continue
            }
            let parts = line.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !streams.isEmpty else { continue }
            let value = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(
                in: CharacterSet(charactersIn: "\""))
            streams[streams.count - 1][parts[0].trimmingCharacters(in: .whitespaces)] = value
        }
        return streams
    }

    func stop() {
        for child in calls + [server].compactMap({ $0 }) {
            child.killAndWait()
        }
        calls = []
        server = nil
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Quaver against a real sound server (PulseAudio, started by the test with a null sink).
@Suite("a real sound server")
@MainActor
struct SoundServerTests {
    @Test("the stream is music and says whose it is: media.role, application.name, .id and .icon_name")
    func streamProperties() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 10)
        let server = try await PulseServer()
        defer { server.stop() }
        let session = try await Session()
        defer { session.stop() }
        session.extraEnvironment = server.environment
        try await session.launch([tracks[0].path], sink: "pulsesink")
        try await session.waitForStatus("Playing")
        let streams = try await server.sinkInputProperties()
        let ours = streams.filter { $0["application.process.id"] == session.daemon.map { String($0.pid) } }
        #expect(ours.count == 1, "\(streams)")
        let stream = try #require(ours.first)
        #expect(stream["media.role"] == "music")
        #expect(stream["application.name"] == "Quaver")
        #expect(stream["application.id"] == "quaver")
        #expect(stream["application.icon_name"] == "quaver")
    }
}

/// Waits until the daemon's log holds `text` (a log line has no signal to wait for: a short
/// poll, bounded).
@MainActor
func waitForLog(_ session: Session, _ text: String, timeout: Duration = .seconds(20)) async -> Bool {
    await session.waiter.wait(timeout: timeout, pollingEvery: .milliseconds(50)) { session.log().contains(text) }
}

/// Interruptions and the outside world, against a real PulseAudio server: role-based corking
/// for calls, a mixer changing the stream's volume, the server going away.
@Suite("the sound server interrupts and changes things")
@MainActor
struct InterruptionTests {
    private func playing(_ server: PulseServer, seconds: Double = 30, count: Int = 1) async throws -> Session {
        let tracks = try await TestMedia.tracks(count: count, seconds: seconds)
        let session = try await Session()
        session.extraEnvironment = server.environment
        try await session.launch(tracks.map(\.path) + ["--log-level", "debug"], sink: "pulsesink")
        try await session.waitForStatus("Playing")
        return session
    }

    @Test("a call corks Quaver: Paused while it lasts, Playing again after (cork-to-Paused latency printed)")
    func callPausesAndResumes() async throws {
        let server = try await PulseServer(corking: true)
        defer { server.stop() }
        let session = try await playing(server)
        defer { session.stop() }
        let before = session.signals.count
        let rang = ContinuousClock.now
        let call = try server.startCall()
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(15))
        print("cork to Paused: \(ContinuousClock.now - rang) (includes starting pacat)")
        #expect(session.log().contains("the sound server asked to pause"))
        let paused = session.signals.count
        await server.hangUp(call)
        try await session.waitForStatus("Playing", after: paused, timeout: .seconds(15))
        #expect(session.log().contains("the interruption is over"))
        let pid = try #require(session.daemon?.pid)
        let stream = try await server.stream(of: pid)
        #expect(stream?.corked == false, "the stream plays again: \(String(describing: stream))")
        session.expectNoPositionInPropertiesChanged()
    }

    @Test("paused by the user during a call: the end of the call does not start playback")
    func userPauseDuringCallWins() async throws {
        let server = try await PulseServer(corking: true)
        defer { server.stop() }
        let session = try await playing(server)
        defer { session.stop() }
        let before = session.signals.count
        let call = try server.startCall()
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(15))
        try await session.playerctl("pause")  // the user presses pause too: they want silence
        await server.hangUp(call)
        // The server's uncork request arrives and is declined.
        #expect(
            await waitForLog(session, "the sound server asked for state playing; nothing to do"), "\(session.log())")
        #expect(try await session.get("PlaybackStatus").string == "Paused")
    }

    @Test("the track changed during a call: the end of the call does not start playback")
    func trackChangeDuringCallWins() async throws {
        let server = try await PulseServer(corking: true)
        defer { server.stop() }
        let session = try await playing(server, count: 2)
        defer { session.stop() }
        let before = session.signals.count
        let call = try server.startCall()
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(15))
        let title = try await session.metadata()["xesam:title"]?.string
        try await session.playerctl("next")
        let changed = try await session.waitForPlayerChange(after: before, "the next track") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string != title
        }
        _ = changed
        let afterNext = session.signals.count
        await server.hangUp(call)
        // Nothing to wait for but time: playback must not start within a few seconds.
        await #expect(throws: (any Error).self) {
            try await session.waitForStatus("Playing", after: afterNext, timeout: .seconds(3))
        }
        #expect(try await session.get("PlaybackStatus").string == "Paused")
    }

    @Test("a mixer changing the stream's volume updates Volume once; Quaver's own change is signalled once, not echoed")
    func externalVolume() async throws {
        let server = try await PulseServer()
        defer { server.stop() }
        let session = try await playing(server)
        defer { session.stop() }
        let pid = try #require(session.daemon?.pid)
        let stream = try #require(try await server.stream(of: pid))

        var before = session.signals.count
        let set = try await server.pactl(["set-sink-input-volume", "\(stream.index)", "50%"])
        #expect(set.status == 0, "\(set.output)")
        let change = try await session.waitForPlayerChange(after: before, "Volume from the mixer") {
            $0["Volume"] != nil
        }
        let volume = try #require(change.changed["Volume"]?.double)
        #expect(abs(volume - 0.5) < 0.01, "50 % on the mixer is 0.5: \(volume)")
        #expect(abs((try await session.get("Volume").double ?? -1) - 0.5) < 0.01)

        before = session.signals.count
        try await session.set("Volume", .double(0.3))
        try await session.waitForPlayerChange(after: before, "Volume 0.3") { $0["Volume"]?.double == 0.3 }
        #expect(try await server.stream(of: pid)?.volumePercent == 30, "the sound server has the new volume")
        // The server reports Quaver's own change back: a second for an echo to come (a
        // second Volume change ends the wait early), then count.
        func volumeChanges() -> [RecordedSignal] {
            session.signals.dropFirst(before).filter { $0.member == "PropertiesChanged" && $0.changed["Volume"] != nil }
        }
        _ = await session.waiter.wait(timeout: .seconds(1)) { volumeChanges().count > 1 }
        let volumeSignals = volumeChanges()
        #expect(volumeSignals.count == 1, "one Volume change, no echo: \(volumeSignals)")
        #expect(try await session.get("Volume").double == 0.3)
    }

    @Test("the sound server going away mid-track pauses Quaver where it was; Play resumes there once it is back")
    func serverGoesAwayAndComesBack() async throws {
        let server = try await PulseServer()
        defer { server.stop() }
        let session = try await playing(server)
        defer { session.stop() }
        let title = try await session.metadata()["xesam:title"]?.string
        let before = session.signals.count
        let positionBefore = try await session.position()
        await server.kill()
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(15))
        #expect(session.daemonStatus == nil, "Quaver keeps running")
        #expect(session.log().contains("the audio output failed"), "\(session.log())")
        #expect(!session.log().contains("skipping"), "the track is not blamed")
        let pausedAt = try await session.position()
        #expect(pausedAt >= positionBefore, "paused where it was: \(pausedAt) µs, was \(positionBefore) µs")
        #expect(try await session.metadata()["xesam:title"]?.string == title, "the same track")

        try await server.start()
        let resumed = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: resumed, timeout: .seconds(15))
        let positionAfter = try await session.position()
        #expect(
            positionAfter >= pausedAt - 500_000, "goes on from \(pausedAt) µs, not from the start: \(positionAfter) µs")
        let pid = try #require(session.daemon?.pid)
        #expect(try await server.stream(of: pid) != nil, "the new server has Quaver's stream")
    }

    @Test("the output device removed mid-track pauses Quaver rather than skipping tracks")
    func deviceRemoved() async throws {
        let server = try await PulseServer()
        defer { server.stop() }
        let session = try await playing(server, count: 3)
        defer { session.stop() }
        let title = try await session.metadata()["xesam:title"]?.string
        let before = session.signals.count
        let unload = try await server.pactl(["unload-module", "module-null-sink"])
        #expect(unload.status == 0, "\(unload.output)")
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(15))
        #expect(!session.log().contains("skipping"), "no track is blamed: \(session.log())")
        #expect(try await session.metadata()["xesam:title"]?.string == title)
    }
}
