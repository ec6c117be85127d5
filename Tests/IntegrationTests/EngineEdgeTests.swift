import DBus
import Foundation
import TestKit
import Testing

/// The transport's edges as real clients meet them: what is published while nothing is
/// loaded, at start, after a seek, and in a loop of one track.
@Suite("engine edges against the real binary")
@MainActor
struct EngineEdgeTests {
    /// The MPRIS spec's conformance tool and Mopidy's suite: no track, an empty Metadata map.
    @Test("with nothing loaded, Metadata is an empty map")
    func emptyMetadataWithNothingLoaded() async throws {
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([session.home.appendingPathComponent("missing.flac").path])
        let metadata = try await session.get("Metadata")
        #expect(metadata.stringVariantDictionary?.isEmpty == true, "\(metadata)")
        #expect(try await session.get("PlaybackStatus") == .string("Stopped"))
    }

    /// The name is owned once the first state is true: the first read a client can make
    /// already shows the track, paused where the session left it.
    @Test("the first state a client can read is the true one")
    func firstStateIsTrue() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused"] + tracks.map(\.path))
        // Read at once, as a client that saw the name appear would.
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        #expect(try await session.metadata()["xesam:title"] == .string("Track 1"))
        #expect(try await session.get("CanPlay") == .boolean(true))
    }

    /// With nothing named and no music folder, the demo playlist is rendered off the main
    /// actor; the bus name still waits for it, so the first state read is the demo, paused.
    @Test("with nothing to play, the demo made in the background is the first state a client reads")
    func demoIsTheFirstState() async throws {
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused"])
        #expect(try await session.get("PlaybackStatus") == .string("Paused"), "\(session.log())")
        #expect(try await session.get("CanPlay") == .boolean(true))
        #expect(try await session.metadata()["xesam:title"] != nil)
        #expect(session.log().contains("playing the built-in demo playlist"), "\(session.log())")
    }

    /// Right after a Seek or SetPosition reply, Position is the target, every time.
    @Test("Position right after a seek's reply is its target, while paused")
    func positionAfterSeekIsTheTarget() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused", "--log-level", "debug"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")
        let track = try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
        var misses: [String] = []
        for attempt in 0..<20 {
            let target = Int64(1 + (attempt * 7) % 25) * 1_000_000
            if attempt % 2 == 0 {
                _ = try await session.call("SetPosition", [.objectPath(track), .int64(target)])
            } else {
                let from = try await session.position()
                _ = try await session.call("Seek", [.int64(target - from)])
            }
            let position = try await session.position()
            if abs(position - target) > 1_000 { misses.append("\(target) → \(position)") }
        }
        #expect(misses.isEmpty, "Position after the reply was not the target: \(misses)\n\(session.log())")
    }

    /// One track on LoopStatus Playlist: the track cannot change, so neither Next nor
    /// Previous is offered (and both do nothing), and each restart of the track by the loop
    /// sends Seeked(0) to clients that extrapolate.
    @Test("a loop of one track: no CanGoNext or CanGoPrevious; each restart sends Seeked(0)")
    func loopOfOne() async throws {
        // Long enough that the loop is set before the track ends on a machine busy with other
        // tests; its restart comes after that.
        let session = try await Session.playingLoopOfOne(seconds: 8)
        defer { session.stop() }
        let mark = session.signals.count
        #expect(try await session.get("CanGoNext") == .boolean(false))
        #expect(try await session.get("CanGoPrevious") == .boolean(false))
        let track = try await session.metadata()["mpris:trackid"]

        let restart = try await session.waitForSignal(
            after: mark, timeout: .seconds(30), "Seeked(0) at the loop's restart"
        ) {
            $0.member == "Seeked"
        }
        #expect((restart.arguments.first?.int64 ?? -1) < 300_000, "\(restart)")
        #expect(try await session.metadata()["mpris:trackid"] == track, "the same track")
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
    }
}

extension Session {
    /// Quaver playing one track of `seconds` on LoopStatus Playlist. The loop is set before
    /// the track plays, so that it is what follows from the start.
    static func playingLoopOfOne(seconds: Double) async throws -> Session {
        let tracks = try await TestMedia.tracks(count: 1, seconds: seconds)
        let session = try await Session()
        do {
            try await session.launch(["--paused"] + tracks.map(\.path))
            try await session.waitForStatus("Paused")
            var mark = session.signals.count
            try await session.set("LoopStatus", .string("Playlist"))
            try await session.waitForPlayerChange(after: mark, "LoopStatus Playlist") {
                $0["LoopStatus"] == .string("Playlist")
            }
            mark = session.signals.count
            _ = try await session.call("Play")
            try await session.waitForStatus("Playing", after: mark)
            return session
        } catch {
            session.stop()
            throw error
        }
    }
}
