import ChildProcess
import DBus
import Foundation
import TestKit
import Testing

/// Quaver as a Snapcast source, with a real snapserver and real snapclients on loopback that
/// write what they play to files: what each room hears, and what MPRIS clients see meanwhile.
@Suite("Snapcast: Quaver's audio in every room")
@MainActor
struct SnapcastTests {
    /// Two tracks of different tones, gapless one after the other, through snapserver to two
    /// rooms: each room hears both, in order, with no silence at the joint, and the rooms hear
    /// the same lengths of each.
    @Test("two rooms hear both tracks in order, gapless, the same")
    func twoRoomsHearTheQueue() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 4)
        let rig = try SnapcastRig()
        defer { rig.stop() }
        try await rig.startServer()
        let rooms = [try rig.startClient("kitchen"), try rig.startClient("study")]
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path), output: rig.output)
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        // Both tracks, then the client's own buffer (a second by default) and a margin.
        try await session.waitForStatus("Stopped", after: mark, timeout: .seconds(30))
        await session.waiter.elapse(.seconds(3))
        let heard = try rooms.map { try RoomRecording($0) }
        print("Snapcast rooms heard: \(heard.map { ($0.tracks, $0.gaps) })")
        for (room, recording) in zip(["kitchen", "study"], heard) {
            let tracks = recording.tracks
            #expect(tracks.map(\.tone) == [440, 660], "\(room) heard \(tracks)\n\(session.log())")
            for track in tracks {
                #expect(abs(track.seconds - 4) < 0.35, "\(room) heard \(track.tone) Hz for \(track.seconds) s, not 4")
            }
            #expect(
                recording.gaps == 0,
                "\(room) heard \(recording.gaps) silent 5 ms windows between the first and the last sound")
        }
        let lengths = heard.map { $0.tracks.map(\.seconds) }
        if lengths.count == 2, lengths[0].count == lengths[1].count {
            for (a, b) in zip(lengths[0], lengths[1]) {
                #expect(abs(a - b) <= 0.2, "the rooms heard different lengths: \(lengths)")
            }
        }
        #expect(session.log().contains("playing into snapcast:\(rig.pipe.path)"))
    }

    /// Rate goes through the same pipeline into Snapcast as to a sound card: at 1.5 the room
    /// hears the track's own pitch, for two thirds of its length.
    @Test("Rate 1.5 into Snapcast: the room hears the same pitch, for two thirds of the time")
    func rateKeepsThePitch() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 6)
        let rig = try SnapcastRig()
        defer { rig.stop() }
        try await rig.startServer()
        let room = try rig.startClient("kitchen")
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused", tracks[0].path], output: rig.output)
        try await session.waitForStatus("Paused")
        try await session.set("Rate", .double(1.5))
        let mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Stopped", after: mark, timeout: .seconds(30))
        await session.waiter.elapse(.seconds(3))
        let heard = try RoomRecording(room).tracks
        #expect(heard.map(\.tone) == [440], "the pitch is kept: \(heard)")
        #expect(abs((heard.first?.seconds ?? 0) - 4) < 0.4, "6 s at 1.5 take 4 s: \(heard)")
    }

    /// snapserver ends (a crash, an upgrade) while Quaver plays: clients see playback waiting
    /// where the audio stood, and neither a failed output nor a skip follows however long it
    /// takes; snapserver starts again, and playback goes on from there by itself.
    @Test("snapserver killed and started again: Quaver waits, then goes on where it stood")
    func serverRestartIsWaitedFor() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 60)
        let rig = try SnapcastRig()
        defer { rig.stop() }
        try await rig.startServer()
        try rig.startClient("kitchen")
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([tracks[0].path], output: rig.output)
        try await session.waitForStatus("Playing")
        await session.waiter.elapse(.seconds(2))
        let mark = session.signals.count
        rig.stopServer()
        try await session.waitForStatus("Paused", after: mark, timeout: .seconds(10))
        let stood = try await session.position()
        // Past the 10 s after which any other output counts as failed.
        await session.waiter.elapse(.seconds(12))
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        let later = try await session.position()
        #expect(abs(later - stood) < 500_000, "Position stands while nothing is read: \(stood) then \(later) µs")
        #expect(!session.log().contains("the audio output failed"), "\(session.log())")
        #expect(session.log().contains("snapserver reads nothing from its pipe"), "\(session.log())")
        let restart = session.signals.count
        try await rig.startServer()
        try await session.waitForStatus("Playing", after: restart, timeout: .seconds(10))
        await session.waiter.elapse(.seconds(2))
        let resumed = try await session.position()
        #expect(
            resumed > stood && resumed < stood + 4_000_000,
            "goes on from where it stood (\(stood) µs), nothing skipped: \(resumed) µs\n\(session.log())")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 1"))
    }

    /// snapserver's TCP source, which listens: Quaver started before it waits for it, plays
    /// into it once it listens, and waits again, without failing, while it is killed and
    /// started again, then goes on where it stood.
    @Test("a TCP source: waited for before it listens and across a restart, heard in a room")
    func tcpSourceIsWaitedForAndHeard() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 60)
        let rig = try SnapcastRig(tcp: true)
        defer { rig.stop() }
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([tracks[0].path], output: rig.output)
        try await session.waitForStatus("Paused", timeout: .seconds(10))
        try await rig.startServer()
        let room = try rig.startClient("kitchen")
        let started = session.signals.count
        try await session.waitForStatus("Playing", after: started, timeout: .seconds(10))
        await session.waiter.elapse(.seconds(4))
        let mark = session.signals.count
        rig.stopServer()
        try await session.waitForStatus("Paused", after: mark, timeout: .seconds(10))
        let stood = try await session.position()
        await session.waiter.elapse(.seconds(11))
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        #expect(!session.log().contains("the audio output failed"), "\(session.log())")
        #expect(session.log().contains("snapserver takes nothing at tcp://127.0.0.1:"), "\(session.log())")
        let restart = session.signals.count
        try await rig.startServer()
        try await session.waitForStatus("Playing", after: restart, timeout: .seconds(10))
        await session.waiter.elapse(.seconds(2))
        let resumed = try await session.position()
        #expect(resumed > stood && resumed < stood + 4_000_000, "from \(stood) µs on: \(resumed) µs\n\(session.log())")
        let heard = try RoomRecording(room).tracks
        #expect(heard.first?.tone == 440, "the room heard Track 1's tone: \(heard)")
    }

    /// A pipe that does not exist, or a path that is not a pipe: quaver exits at once with an
    /// error that names the path and what to do.
    @Test("a missing pipe, or a file that is not one: a clear error at start")
    func wrongPipeIsAClearError() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let session = try await Session()
        defer { session.stop() }
        let file = try folder.write("not-a-pipe", "")
        for (path, said) in [
            (folder.path("missing").path, "start snapserver first"), (file.path, "it is not a pipe (FIFO)"),
        ] {
            let result = try await ChildProcess.run(
                Tools.quaver.path, ["--output", "snapcast:\(path)", "--name", session.name, "--no-resume"],
                environment: session.environment)
            #expect(result.status != 0)
            let text = result.output + result.error
            #expect(text.contains(path) && text.contains(said), "\(text)")
        }
    }

    /// Polls `read` every 50 ms until `done` holds of what it returns, up to `timeout`; the
    /// time it took, or nil.
    static func until<T>(
        timeout: Duration = .seconds(5), _ read: () async throws -> T, _ done: (T) -> Bool
    ) async throws -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < timeout {
            if done(try await read()) { return ContinuousClock.now - start }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    static func title(_ properties: [String: Any]) -> String? {
        (properties["metadata"] as? [String: Any])?["title"] as? String
    }

    /// The control script as snapserver runs it: started before Quaver runs (the stream shows
    /// no control, and a client's command is answered, not left waiting), then Quaver starts
    /// and Snapcast's clients see what plays and drive it, MPRIS changes reach them, and
    /// Quaver restarting under the script leaves it working.
    @Test("Snapcast clients show Quaver and drive it; MPRIS changes reach them; restarts are survived")
    func controlBothWays() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 60)
        let session = try await Session()
        defer { session.stop() }
        let rig = try SnapcastRig(controlling: session)
        defer { rig.stop() }
        try await rig.startServer()
        let rpc = try SnapcastRPC(port: rig.controlPort)
        // Before Quaver: the script says so (no session bus service can start it here).
        let before = try await Self.until({ try await rpc.properties() }) {
            $0["canControl"] as? Bool == false && $0["metadata"] != nil
        }
        let seenBefore = try await rpc.properties()
        #expect(before != nil, "\(seenBefore)\n\(rig.serverLog())")
        let refused = try await rpc.call("Stream.Control", ["id": "Quaver", "command": "play"])
        #expect(refused["error"] != nil, "answered with an error, not left waiting: \(refused)")

        try await session.launch(tracks.map(\.path), output: rig.output)
        try await session.waitForStatus("Playing")
        let shown = try await Self.until({ try await rpc.properties() }) {
            Self.title($0) == "Track 1" && $0["playbackStatus"] as? String == "playing"
                && $0["canGoNext"] as? Bool == true
        }
        let seenShown = try await rpc.properties()
        #expect(shown != nil, "the stream shows what plays: \(seenShown)\n\(rig.serverLog())")

        // Snapcast to MPRIS.
        var mark = session.signals.count
        var start = ContinuousClock.now
        let next = try await rpc.call("Stream.Control", ["id": "Quaver", "command": "next"])
        #expect(next["result"] as? String == "ok", "\(next)")
        try await session.waitForPlayerChange(after: mark, timeout: .seconds(5), "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        let nextDelay = ContinuousClock.now - start
        mark = session.signals.count
        start = ContinuousClock.now
        _ = try await rpc.call("Stream.Control", ["id": "Quaver", "command": "pause"])
        try await session.waitForStatus("Paused", after: mark, timeout: .seconds(5))
        let pauseDelay = ContinuousClock.now - start
        let seek = try await rpc.call(
            "Stream.Control", ["id": "Quaver", "command": "setPosition", "params": ["position": 30.0]])
        #expect(seek["result"] as? String == "ok", "\(seek)")
        let sought = try await Self.until({ try await session.position() }) { abs($0 - 30_000_000) < 1_000_000 }
        let position = try await session.position()
        #expect(sought != nil, "Position \(position) µs after setPosition 30")
        let volume = try await rpc.call("Stream.SetProperty", ["id": "Quaver", "property": "volume", "value": 40])
        #expect(volume["result"] as? String == "ok", "\(volume)")
        let leveled = try await Self.until({ try await session.get("Volume").double ?? -1 }) { abs($0 - 0.4) < 0.01 }
        #expect(leveled != nil)

        // MPRIS to Snapcast.
        start = ContinuousClock.now
        try await session.playerctl("play")
        let playing = try await Self.until(timeout: .seconds(3), { try await rpc.properties() }) {
            $0["playbackStatus"] as? String == "playing"
        }
        let seenPlaying = try await rpc.properties()
        #expect(playing != nil, "\(seenPlaying)")
        try await session.playerctl("loop", "Track")
        let looped = try await Self.until(timeout: .seconds(3), { try await rpc.properties() }) {
            $0["loopStatus"] as? String == "track"
        }
        let seenLooped = try await rpc.properties()
        #expect(looped != nil, "\(seenLooped)")
        let properties = try await rpc.properties()
        #expect(Self.title(properties) == "Track 2")
        #expect(abs((properties["position"] as? Double ?? 0) - 30) < 3, "\(properties)")
        print(
            "Snapcast control: next shown over MPRIS after \(nextDelay), pause after \(pauseDelay); MPRIS play shown in Server.GetStatus after \(playing.map(String.init(describing:)) ?? "never"), loop after \(looped.map(String.init(describing:)) ?? "never")"
        )

        // Quaver restarts under the script.
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        _ = try await session.waitForExit()
        let gone = try await Self.until({ try await rpc.properties() }) { $0["canControl"] as? Bool == false }
        let seenGone = try await rpc.properties()
        #expect(gone != nil, "the stream shows Quaver gone: \(seenGone)")
        try await session.launch(tracks.map(\.path), output: rig.output)
        let back = try await Self.until(timeout: .seconds(10), { try await rpc.properties() }) {
            $0["canControl"] as? Bool == true && Self.title($0) != nil
        }
        let seenBack = try await rpc.properties()
        #expect(back != nil, "the script follows the new Quaver: \(seenBack)\n\(rig.serverLog())")
    }
}
