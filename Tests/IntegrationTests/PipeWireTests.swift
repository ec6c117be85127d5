import ChildProcess
import Foundation
import TestKit
import Testing

/// Quaver on a PipeWire session of the test's own (pipewire, WirePlumber and pipewire-pulse
/// with a null sink as the default), started with no `--audio-sink`, as on a desktop. Each
/// way the audio stops moving without an error is seen by clients, and recovered. Each test
/// prints what clients saw, the longest D-Bus reply and how far Position ran ahead of the
/// audio the sink played (its monitor, recorded).
@Suite("PipeWire: Playing is backed by progress", .serialized)
@MainActor
struct PipeWireTests {
    /// Quaver playing `tracks` to the session's default sink, through `autoaudiosink`.
    private func play(_ server: PipeWireSession, _ tracks: [URL], wait: Bool = true) async throws -> Session {
        let session = try await Session()
        session.extraEnvironment = server.clientEnvironment
        try await session.launch(
            command: [Tools.quaver.path, "--name", session.name, "--log-level", "debug"] + tracks.map(\.path))
        if wait { try await session.waitForStatus("Playing") }
        return session
    }

    /// Quaver playing `count` tracks of `seconds` to the session, what the sink plays recorded
    /// (unless `recorded` is false), once `warmUp` of it has played.
    private func playing(
        _ server: PipeWireSession, count: Int = 1, seconds: Double = 30, recorded: Bool = true,
        warmUp: Duration = .seconds(2)
    ) async throws -> FaultProbe {
        let tracks = try await TestMedia.tracks(count: count, seconds: seconds)
        let recording = recorded ? try server.record() : nil
        let probe = FaultProbe(try await play(server, tracks), recording: recording)
        _ = try await probe.watch(timeout: warmUp)
        return probe
    }

    /// The figures of a fault, printed: no D-Bus reply waited half a second, and (when
    /// something recorded what was heard) Position never ran much more than a second ahead
    /// of it: audio that keeps its pace is sampled once a second, and the output's latency
    /// and the sample's way back come on top. A reply held
    /// up by GStreamer would wait out the 3 s stuck limit or the output's 10 s; a busy machine
    /// adds tens of milliseconds to a prompt one (131 ms was seen beside two builds), so the
    /// bound tells the two apart and leaves speed to `scripts/bench --storm`. A reply is timed
    /// from the test's main actor: `scripts/test` runs this suite in a test process of its own,
    /// one test at a time, so that no other suite's work is timed with the daemon's.
    private func expectFigures(
        _ probe: FaultProbe, _ fault: String, since start: ContinuousClock.Instant, signalsFrom mark: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(probe.longestReply(since: start) < .milliseconds(500), sourceLocation: sourceLocation)
        if !probe.recordings.isEmpty {
            #expect(
                probe.largestLead(since: start) < 1.25, "\(probe.table(since: start))", sourceLocation: sourceLocation)
        }
        print(probe.report(fault, since: start, signalsFrom: mark))
    }

    /// Quaver's stream on the server, if it has one: its properties.
    private func stream(of session: Session, on server: PipeWireSession) async throws -> String? {
        guard let pid = session.daemon?.pid else { return nil }
        let listing = try await server.pactl(["list", "sink-inputs"]).output
        return listing.components(separatedBy: "Sink Input #").first {
            $0.contains("application.process.id = \"\(pid)\"")
        }
    }

    private func seeked(_ session: Session, since mark: Int) -> Int {
        session.signals.dropFirst(mark).filter { $0.member == "Seeked" }.count
    }

    @Test("the default sink removed while pipewire-pulse's dummy sink remains: playback goes on there")
    func sinkRemovedWithFallback() async throws {
        let server = try await PipeWireSession()
        defer { server.stop() }
        let probe = try await playing(server)
        defer { probe.session.stop() }
        let mark = probe.session.signals.count
        let start = ContinuousClock.now
        let before = try await probe.read().position
        try await server.removeNode()
        let dummy = try await Waiter.poll(timeout: .seconds(10), every: .milliseconds(100)) {
            try await server.pactl(["list", "short", "sinks"]).output.contains("auto_null")
        }
        #expect(dummy, "pipewire-pulse makes its dummy sink")
        probe.recordings.append(try server.record(device: "auto_null.monitor"))
        _ = try await probe.watch(timeout: .seconds(5))
        let last = try #require(probe.readings.last)
        #expect(last.status == "Playing", "\(probe.statuses(since: start))")
        #expect(last.position > before + 4, "playback goes on: \(before) s, then \(last.position) s")
        #expect(!probe.session.log().contains("skipping"), "\(probe.session.log())")
        expectFigures(probe, "sink removed, dummy sink remains", since: start, signalsFrom: mark)
    }

    @Test("the only sink removed: Paused where the audio stands, no Seeked meanwhile; Playing again when a sink comes")
    func sinkRemovedWithoutFallback() async throws {
        let server = try await PipeWireSession(alwaysSink: false)
        defer { server.stop() }
        let probe = try await playing(server)
        let session = probe.session
        defer { session.stop() }
        let mark = session.signals.count
        let start = ContinuousClock.now
        try await server.removeNode()
        let waiting = try await probe.watch(timeout: .seconds(6)) { $0.status == "Paused" }
        #expect(waiting, "clients see playback waiting: \(probe.statuses(since: start))")
        #expect(session.log().contains("the output takes no audio"), "one line says why: \(session.log())")
        let waitingSince = session.signals.count
        _ = try await probe.watch(timeout: .seconds(2))
        let held = probe.readings(since: start).filter { $0.status == "Paused" }.map(\.position)
        #expect((held.max() ?? 0) - (held.min() ?? 0) < 0.05, "Position stands while waiting: \(held)")
        #expect(seeked(session, since: waitingSince) == 0, "no Seeked while waiting")

        let resumeMark = session.signals.count
        let added = try await server.pactl(["load-module", "module-null-sink", "sink_name=quaver_second_sink"])
        #expect(added.status == 0, "\(added.output)")
        let resumed = try await probe.watch(timeout: .seconds(8)) { $0.status == "Playing" }
        #expect(resumed, "Playing again once the audio moves: \(probe.statuses(since: start))")
        #expect(session.log().contains("moves again"), "\(session.log())")
        _ = try await probe.watch(timeout: .seconds(1))
        #expect(seeked(session, since: resumeMark) <= 1, "at most one Seeked when it goes on")
        #expect((probe.readings.last?.position ?? 0) > (held.max() ?? 0), "it goes on from where it stood")
        expectFigures(probe, "sink removed, no fallback, a sink comes back", since: start, signalsFrom: mark)
    }

    @Test("the only sink removed for good: paused where the audio stands after 10 s, with the reason; Play tries again")
    func sinkRemovedForGood() async throws {
        let server = try await PipeWireSession(alwaysSink: false)
        defer { server.stop() }
        let probe = try await playing(server, count: 2)
        let session = probe.session
        defer { session.stop() }
        let title = try await session.metadata()["xesam:title"]?.string
        let mark = session.signals.count
        let start = ContinuousClock.now
        try await server.removeNode()
        let failed = try await probe.watch(timeout: .seconds(20)) { _ in
            session.log().contains("the audio output failed (it took no audio for 10 s); paused at")
        }
        #expect(failed, "\(session.log())")
        let pausedAt = try await probe.read().position
        #expect(try await session.get("PlaybackStatus").string == "Paused")
        #expect(try await session.metadata()["xesam:title"]?.string == title, "the same track")
        #expect(!session.log().contains("skipping"), "no track is blamed: \(session.log())")
        expectFigures(probe, "sink removed, no fallback, for good", since: start, signalsFrom: mark)

        _ = try await server.pactl(["load-module", "module-null-sink", "sink_name=quaver_second_sink"])
        let playMark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: playMark, timeout: .seconds(15))
        let resumedAt = try await probe.read().position
        #expect(resumedAt >= pausedAt - 0.5, "Play goes on from \(pausedAt) s: \(resumedAt) s")
        #expect(try await session.metadata()["xesam:title"]?.string == title)
    }

    @Test("with WirePlumber's defaults nothing corks: module-role-cork cannot be loaded, and a phone stream mixes in")
    func noCorkingByDefault() async throws {
        let server = try await PipeWireSession()
        defer { server.stop() }
        let refused = try await server.pactl([
            "load-module", "module-role-cork", "trigger_roles=phone", "cork_roles=music",
        ])
        #expect(refused.status != 0, "pipewire-pulse 0.3.65 has no module-role-cork: \(refused.output)")
        let probe = try await playing(server, warmUp: .seconds(1))
        let session = probe.session
        defer { session.stop() }
        let start = ContinuousClock.now
        let before = try await probe.read().position
        let call = try server.startCall(role: "phone")
        _ = try await probe.watch(timeout: .seconds(3))
        await server.hangUp(call)
        #expect(probe.statuses(since: start) == ["Playing"], "\(probe.table(since: start))")
        #expect((probe.readings.last?.position ?? 0) > before + 2.5, "the audio moves throughout")
        #expect(probe.largestLead(since: start) < 1.0, "\(probe.table(since: start))")
    }

    @Test(
        "through pipewire-pulse, Volume is the stream's volume: a mixer's change is Volume, and Volume reaches the server"
    )
    func streamVolume() async throws {
        let server = try await PipeWireSession()
        defer { server.stop() }
        let session = try await playing(server, recorded: false, warmUp: .zero).session
        defer { session.stop() }
        let pid = try #require(session.daemon?.pid)
        let index = try #require(try await stream(of: session, on: server)?.prefix { $0.isNumber })
        let mark = session.signals.count
        let set = try await server.pactl(["set-sink-input-volume", String(index), "50%"])
        #expect(set.status == 0, "\(set.output)")
        let change = try await session.waitForPlayerChange(after: mark, "Volume from the mixer") { $0["Volume"] != nil }
        #expect(abs((change.changed["Volume"]?.double ?? -1) - 0.5) < 0.01, "\(change)")
        try await session.set("Volume", .double(0.3))
        let reached = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(100)) {
            try await stream(of: session, on: server)?.contains("/  30% /") == true
        }
        let listed = try await stream(of: session, on: server) ?? ""
        #expect(reached, "the server has the new volume (pid \(pid)): \(listed)")
    }

    @Test("pipewire-pulse killed: Paused where the audio stopped; Play resumes there once it is back")
    func serverKilled() async throws {
        let server = try await PipeWireSession()
        defer { server.stop() }
        let probe = try await playing(server)
        let session = probe.session
        defer { session.stop() }
        let mark = session.signals.count
        let start = ContinuousClock.now
        await server.kill(.pulse)
        let paused = try await probe.watch(timeout: .seconds(10)) { $0.status == "Paused" }
        #expect(paused, "\(session.log())")
        _ = try await probe.watch(timeout: .seconds(1))
        let pausedAt = try await probe.read().position
        #expect(session.log().contains("the audio output failed"), "\(session.log())")
        expectFigures(probe, "pipewire-pulse killed", since: start, signalsFrom: mark)

        try await server.start(.pulse)
        let playMark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: playMark, timeout: .seconds(15))
        #expect(try await probe.read().position >= pausedAt - 0.5)
        #expect(try await stream(of: session, on: server) != nil, "the new server has Quaver's stream")
    }

    @Test(
        "pipewire-pulse killed after a gapless switch and back 3 s later: paused in the new track, Play goes on there")
    func serverRestartedAfterGaplessSwitch() async throws {
        let server = try await PipeWireSession()
        defer { server.stop() }
        let probe = try await playing(server, count: 3, seconds: 8, warmUp: .zero)
        let session = probe.session
        defer { session.stop() }
        let firstTitle = try await session.metadata()["xesam:title"]?.string
        try await session.playerctl("position", "6")
        let switched = try await probe.watch(timeout: .seconds(10)) { _ in
            session.log().contains("gapless switch to")
        }
        #expect(switched, "\(session.log())")
        let secondTitle = try await session.metadata()["xesam:title"]?.string
        #expect(secondTitle != firstTitle)
        _ = try await probe.watch(timeout: .seconds(10)) { $0.position >= 2.5 }
        try await probe.calibrate()
        _ = try await probe.watch(timeout: .seconds(10)) { $0.position >= 3.2 }
        let mark = session.signals.count
        let start = ContinuousClock.now
        let before = try await probe.read().position
        await server.kill(.pulse)
        let paused = try await probe.watch(timeout: .seconds(10)) { $0.status == "Paused" }
        #expect(paused, "\(session.log())")
        let pausedAt = try await probe.read().position
        #expect(pausedAt < before + 1.0, "paused in the new track where it was: \(pausedAt) s, was at \(before) s")
        #expect(try await session.metadata()["xesam:title"]?.string == secondTitle)
        let errorLine = session.log().split(separator: "\n").first { $0.contains("pipeline error on") } ?? ""
        #expect(errorLine.contains("02 Track 2"), "the debug line names what plays: \(errorLine)")
        _ = try await probe.watch(timeout: .seconds(3))
        try await server.start(.pulse)
        let playMark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: playMark, timeout: .seconds(15))
        let resumedAt = try await probe.read().position
        #expect(try await session.metadata()["xesam:title"]?.string == secondTitle, "Play goes on in the same track")
        #expect(resumedAt >= pausedAt - 0.5 && resumedAt < pausedAt + 2, "from \(pausedAt) s: \(resumedAt) s")
        expectFigures(
            probe, "pipewire-pulse killed after a gapless switch, back 3 s later", since: start, signalsFrom: mark)
    }

    @Test("a sound server that starts after Quaver: playback moves to it from the silent fallback")
    func serverLate() async throws {
        let server = try await PipeWireSession(start: false)
        defer { server.stop() }
        let probe = try await playing(server, recorded: false, warmUp: .zero)
        let session = probe.session
        defer { session.stop() }
        #expect(session.log().contains("no sound server or audio device reachable"), "\(session.log())")
        let mark = session.signals.count
        let start = ContinuousClock.now
        try await server.start()
        let recording = try server.record()
        let moved = try await probe.watch(timeout: .seconds(10)) { _ in session.log().contains("a sound server answers")
        }
        #expect(moved, "\(session.log())")
        let onServer = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(100)) {
            try await stream(of: session, on: server) != nil
        }
        #expect(onServer, "Quaver's stream reaches the server")
        probe.recordings = [recording]
        try await probe.calibrate()
        let heardBefore = recording.heardSeconds()
        let calibrated = ContinuousClock.now
        _ = try await probe.watch(timeout: .seconds(3))
        let last = try #require(probe.readings.last)
        #expect(last.status == "Playing", "\(probe.statuses(since: start))")
        let heard = recording.heardSeconds() - heardBefore
        #expect(heard > 2, "the server hears it: \(heard) s")
        #expect(probe.largestLead(since: calibrated) < 1.0, "Position keeps pace with what is heard")
        expectFigures(probe, "server late", since: start, signalsFrom: mark)
    }

    @Test("WirePlumber's role endpoints cork Quaver for a phone stream: waiting while it plays, Playing after")
    func corkByRole() async throws {
        let server = try await PipeWireSession(roleEndpoints: true)
        defer { server.stop() }
        // With endpoints, WirePlumber links every capture stream to its capture endpoint, not
        // to the sink's monitor: what is heard is bounded by where the audio was when the call
        // started, not recorded.
        let probe = try await playing(server, recorded: false)
        let session = probe.session
        defer { session.stop() }
        let mark = session.signals.count
        let start = ContinuousClock.now
        let atCall = try await probe.read().position
        let call = try server.startCall(role: "phone")
        let waiting = try await probe.watch(timeout: .seconds(8)) { $0.status == "Paused" }
        #expect(waiting, "\(probe.statuses(since: start)) \(session.log())")
        let waitingSince = session.signals.count
        _ = try await probe.watch(timeout: .seconds(2))
        #expect(seeked(session, since: waitingSince) == 0, "no Seeked while waiting")
        let held = probe.readings(since: start).filter { $0.status == "Paused" }.map(\.position)
        #expect((held.max() ?? 0) - (held.min() ?? 0) < 0.05, "Position stands while waiting: \(held)")
        let lead = (probe.readings(since: start).map(\.position).max() ?? 0) - atCall
        // While the audio keeps its pace it is sampled once a second: Position runs on for at
        // most that second, and the sample's own way back, before it is held.
        #expect(
            lead < 1.25,
            "Position never runs much over a second past where the call began: \(probe.table(since: start))")
        await server.hangUp(call)
        let resumed = try await probe.watch(timeout: .seconds(8)) { $0.status == "Playing" }
        #expect(resumed, "\(probe.statuses(since: start))")
        _ = try await probe.watch(timeout: .seconds(1))
        #expect((probe.readings.last?.position ?? 0) > (held.max() ?? 0))
        expectFigures(
            probe, String(format: "corked by role (phone stream; Position at most %.2f s past the call's start)", lead),
            since: start, signalsFrom: mark)
    }
}
