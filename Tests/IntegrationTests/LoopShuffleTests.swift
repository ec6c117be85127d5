import DBus
import Foundation
import TestKit
import Testing

/// Player `LoopStatus` and `Shuffle` as the queue follows them, with the real binary.
@Suite("loop and shuffle of the running quaver")
@MainActor
struct LoopShuffleTests {
    private func start(_ tracks: [URL]) async throws -> (Session, [ObjectPath]) {
        let session = try await Session()
        let signals = try TrackListSignals(session)
        try await session.launch(["--paused"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")
        try await signals.waitForWindow(of: tracks.count)
        return (session, try await session.trackListTracks())
    }

    /// Next (or Previous) and the id it lands on.
    private func step(_ session: Session, _ member: String) async throws -> ObjectPath {
        let mark = session.signals.count
        let current = try await session.currentTrackID()
        _ = try await session.call(member)
        return try await session.waitForTrackChange(from: current, after: mark)
    }

    /// Next or Previous that must change nothing: the call, then a barrier Get (the
    /// daemon's signals for the call would leave before its reply).
    private func expectNoMove(_ session: Session, _ member: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let current = try await session.currentTrackID()
        let mark = session.signals.count
        _ = try await session.call(member)
        #expect(try await session.currentTrackID() == current, "\(member) moved", sourceLocation: sourceLocation)
        #expect(!session.metadataChanged(after: mark), "\(member) changed Metadata", sourceLocation: sourceLocation)
    }

    @Test("LoopStatus None: nothing after the last track, whose end stops")
    func loopNone() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 2)
        let (session, ids) = try await start(tracks)
        defer { session.stop() }
        #expect(try await session.get("LoopStatus") == .string("None"))
        let mark = session.signals.count
        try await session.goTo(ids[2])
        try await session.waitForCurrent(ids[2], after: mark)
        #expect(try await session.get("CanGoNext") == .boolean(false))
        try await expectNoMove(session, "Next")

        let playMark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing", after: playMark)
        try await session.waitForStatus("Stopped", after: playMark, timeout: .seconds(10))
        #expect(try await session.position() == 0)
        #expect(try await session.get("CanGoNext") == .boolean(false))
    }

    @Test("LoopStatus Playlist: Next wraps to the first, Previous to the last")
    func loopPlaylist() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let (session, ids) = try await start(tracks)
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("LoopStatus", .string("Playlist"))
        try await session.waitForPlayerChange(after: mark, "LoopStatus Playlist") {
            $0["LoopStatus"] == .string("Playlist")
        }
        #expect(try await session.get("CanGoPrevious") == .boolean(true), "the first wraps back to the last")
        mark = session.signals.count
        try await session.goTo(ids[2])
        try await session.waitForCurrent(ids[2], after: mark)
        #expect(try await session.get("CanGoNext") == .boolean(true))
        #expect(try await step(session, "Next") == ids[0])
        #expect(try await step(session, "Previous") == ids[2], "Previous at the first (at 0 s) wraps to the last")

        // The same while playing, within the first 3 s of the first track.
        #expect(try await step(session, "Next") == ids[0])
        mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing", after: mark)
        #expect(try await step(session, "Previous") == ids[2])
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
    }

    @Test("LoopStatus Track: the end restarts the track (Seeked to 0, no new Metadata); Next still moves on")
    func loopTrack() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 2)
        let (session, ids) = try await start(tracks)
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("LoopStatus", .string("Track"))
        try await session.waitForPlayerChange(after: mark, "LoopStatus Track") { $0["LoopStatus"] == .string("Track") }

        mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing", after: mark)
        // Two restarts of the 2 s track.
        for round in 1...2 {
            let seekMark = session.signals.count
            let seeked = try await session.waitForSignal(
                after: seekMark, timeout: .seconds(8), "Seeked of restart #\(round)"
            ) { $0.member == "Seeked" }
            let position = seeked.arguments.first?.int64 ?? -1
            #expect(position >= 0 && position < 500_000, "restart #\(round) Seeked(\(position))")
        }
        #expect(
            !session.metadataChanged(after: mark),
            "a restart is no track change: \(session.signals.dropFirst(mark).map(\.description))")
        #expect(try await session.currentTrackID() == ids[0])
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))

        #expect(try await step(session, "Next") == ids[1])
    }

    /// A 1 s track is read whole while it prerolls, so playbin may already have taken the
    /// URI of the next track for a gapless switch when LoopStatus changes: the change must
    /// still apply to this track's end, and each restart must be announced with Seeked.
    @Test("LoopStatus Track set while a 1 s track is loaded paused restarts that track")
    func loopTrackShortTrack() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 1)
        let (session, ids) = try await start(tracks)
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("LoopStatus", .string("Track"))
        try await session.waitForPlayerChange(after: mark, "LoopStatus Track") { $0["LoopStatus"] == .string("Track") }

        mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing", after: mark)
        // At each end of the 1 s track, whichever comes first: a restart (Seeked), or
        // (wrongly) the next track. Two rounds.
        let isEnd: (Session.RecordedSignal) -> Bool = {
            $0.member == "Seeked" || ($0.changedInterface == MPRISNames.player && $0.changed["Metadata"] != nil)
        }
        var from = mark
        for round in 1...2 {
            let end = try? await session.waitForSignal(
                after: from, timeout: .seconds(4), "the end of track 1", where: isEnd)
            guard let end else {
                let now = try await session.currentTrackID()
                Issue.record(
                    "round \(round): neither Seeked nor a track change within 4 s of playing a 1 s track; now \(now?.rawValue ?? "-") (track 1 is \(ids[0])), \(try await session.get("PlaybackStatus")), at \(try await session.position()) µs"
                )
                break
            }
            from =
                (session.signals.indices.dropFirst(from).first { isEnd(session.signals[$0]) } ?? session.signals.count
                    - 1) + 1
            guard end.member == "Seeked" else {
                Issue.record(
                    "round \(round): the track must restart, not move on to \(end.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"] ?? .string("?"))"
                )
                break
            }
            let position = end.arguments.first?.int64 ?? -1
            #expect(position >= 0 && position < 500_000, "round \(round): Seeked(\(position))")
        }
        #expect(try await session.currentTrackID() == ids[0])
        #expect(!session.metadataChanged(after: mark))
    }

    @Test(
        "Shuffle: every track once per cycle, a new cycle with Playlist, Previous walks back, off goes on in queue order"
    )
    func shuffle() async throws {
        let tracks = try await TestMedia.tracks(count: 6, seconds: 10)
        let (session, ids) = try await start(tracks)
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("Shuffle", .boolean(true))
        try await session.waitForPlayerChange(after: mark, "Shuffle on") { $0["Shuffle"] == .boolean(true) }

        // One cycle from the current track: the five others, once each.
        var played = [try #require(try await session.currentTrackID())]
        #expect(played == [ids[0]])
        for _ in 1..<ids.count { played.append(try await step(session, "Next")) }
        #expect(Set(played) == Set(ids) && played.count == ids.count, "a cycle visits each once: \(played)")
        #expect(try await session.get("CanGoNext") == .boolean(false), "the cycle is over, LoopStatus None")
        try await expectNoMove(session, "Next")

        // With Playlist, a new cycle of the others.
        mark = session.signals.count
        try await session.set("LoopStatus", .string("Playlist"))
        try await session.waitForPlayerChange(after: mark, "LoopStatus Playlist") {
            $0["LoopStatus"] == .string("Playlist")
        }
        #expect(try await session.get("CanGoNext") == .boolean(true))
        var cycle: [ObjectPath] = []
        for _ in 1..<ids.count { cycle.append(try await step(session, "Next")) }
        #expect(
            Set(cycle) == Set(ids).subtracting([played.last!]) && cycle.count == ids.count - 1,
            "the second cycle: \(cycle) after \(played.last!)")
        played += cycle

        // Previous walks back through what was played (paused, so always at 0 s).
        for back in 1...4 {
            let expected = played[played.count - 1 - back]
            #expect(try await step(session, "Previous") == expected, "Previous #\(back) in \(played)")
        }

        // Off: Next is the track after the current one in the queue (wrapping: Playlist).
        mark = session.signals.count
        try await session.set("Shuffle", .boolean(false))
        try await session.waitForPlayerChange(after: mark, "Shuffle off") { $0["Shuffle"] == .boolean(false) }
        let current = try #require(try await session.currentTrackID())
        let index = try #require(ids.firstIndex(of: current))
        #expect(try await step(session, "Next") == ids[(index + 1) % ids.count])
        let after = try #require(try await session.currentTrackID())
        let afterIndex = try #require(ids.firstIndex(of: after))
        #expect(try await step(session, "Next") == ids[(afterIndex + 1) % ids.count])
    }
}
