import DBus
import Foundation
import TestKit
import Testing

/// Player methods and writable properties with the spec's semantics, against the real binary.
@Suite("MPRIS Player semantics")
@MainActor
struct TransportTests {
    /// A playing session on three 10 s tracks.
    private func playing() async throws -> (Session, [URL]) {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        return (session, tracks)
    }

    private func trackID(_ session: Session) async throws -> ObjectPath {
        try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
    }

    @Test("SetPosition moves within the track and signals Seeked; stale ids and out-of-track positions are ignored")
    func setPosition() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        let current = try await trackID(session)

        var mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(6_000_000)])
        let seeked = try await session.waitForSignal(after: mark, "Seeked to 6 s") { $0.member == "Seeked" }
        let at = seeked.arguments.first?.int64 ?? -1
        #expect(at >= 6_000_000 && at < 6_300_000, "Seeked(\(at))")

        // Ignored calls, then a barrier call whose Seeked must be the first one to arrive.
        mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(ObjectPath("/quaver/track/999")!), .int64(1_000_000)])
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(-1)])
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(60_000_000)])
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(2_000_000)])
        let barrier = try await session.waitForSignal(after: mark, "Seeked to 2 s") { $0.member == "Seeked" }
        let barrierAt = barrier.arguments.first?.int64 ?? -1
        #expect(
            barrierAt >= 2_000_000 && barrierAt < 2_300_000, "the first Seeked after the ignored calls is \(barrierAt)")
        #expect(try await session.metadata()["mpris:trackid"]?.objectPath == current)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        session.expectNoPositionInPropertiesChanged()
    }

    @Test("Seek clamps at 0 and past the end acts as Next")
    func seek() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        var mark = session.signals.count
        _ = try await session.call("Seek", [.int64(-30_000_000)])
        let seeked = try await session.waitForSignal(after: mark, "Seeked(0)") { $0.member == "Seeked" }
        #expect((seeked.arguments.first?.int64 ?? -1) < 200_000)

        mark = session.signals.count
        _ = try await session.call("Seek", [.int64(60_000_000)])
        let next = try await session.waitForPlayerChange(after: mark, "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        #expect(next.changed["CanGoPrevious"] == .boolean(true))
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
    }

    @Test("Next and Previous keep Paused paused and Stopped stopped")
    func nextPreviousKeepState() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        var mark = session.signals.count
        try await session.playerctl("pause")
        try await session.waitForStatus("Paused", after: mark)

        mark = session.signals.count
        try await session.playerctl("next")
        let next = try await session.waitForPlayerChange(after: mark, "Track 2 while paused") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        #expect(next.changed["PlaybackStatus"] == nil || next.changed["PlaybackStatus"] == .string("Paused"))
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        #expect(!session.signals.dropFirst(mark).contains { $0.changed["PlaybackStatus"] == .string("Playing") })

        mark = session.signals.count
        try await session.playerctl("stop")
        try await session.waitForStatus("Stopped", after: mark)
        mark = session.signals.count
        try await session.playerctl("next")
        let stoppedNext = try await session.waitForPlayerChange(after: mark, "Track 3 while stopped") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
        #expect(stoppedNext.changed["CanGoNext"] == .boolean(false))
        #expect(try await session.get("PlaybackStatus") == .string("Stopped"))
        mark = session.signals.count
        try await session.playerctl("previous")
        try await session.waitForPlayerChange(after: mark, "Track 2 while stopped") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        #expect(try await session.get("PlaybackStatus") == .string("Stopped"))
        #expect(!session.signals.dropFirst(mark).contains { $0.changed["PlaybackStatus"] != nil })
    }

    @Test("Rate: a speed in range applies, 0 pauses, out of range is InvalidArgs and changes nothing")
    func rate() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("Rate", .double(1.5))
        let changed = try await session.waitForPlayerChange(after: mark, "Rate 1.5") { $0["Rate"] != nil }
        #expect(changed.changed["Rate"] == .double(1.5))
        #expect(try await session.get("Rate") == .double(1.5))
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))

        for bad in [5.0, 0.1, -1, .nan, .infinity] {
            await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
                try await session.set("Rate", .double(bad))
            }
        }
        await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
            try await session.set("Rate", .string("fast"))
        }
        #expect(try await session.get("Rate") == .double(1.5))

        mark = session.signals.count
        try await session.set("Rate", .double(0))
        try await session.waitForStatus("Paused", after: mark)
        #expect(try await session.get("Rate") == .double(1.5), "Rate is never 0: 0 means Pause")
        #expect(!session.signals.dropFirst(mark).contains { $0.changed["Rate"] != nil })
    }

    @Test("Volume: set, clamped at 0 and 1, signalled once")
    func volume() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        var mark = session.signals.count
        try await session.set("Volume", .double(-0.5))
        let zero = try await session.waitForPlayerChange(after: mark, "Volume 0") { $0["Volume"] != nil }
        #expect(zero.changed["Volume"] == .double(0))
        mark = session.signals.count
        try await session.set("Volume", .double(0.25))
        try await session.waitForPlayerChange(after: mark, "Volume 0.25") { $0["Volume"] == .double(0.25) }
        await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
            try await session.set("Volume", .double(.nan))
        }
        #expect(try await session.get("Volume") == .double(0.25))
        #expect(session.signals.dropFirst(mark).filter { $0.changed["Volume"] != nil }.count == 1)
    }

    @Test("OpenUri plays a file now; other schemes are InvalidArgs; a missing file is NoSuchContent")
    func openURI() async throws {
        let (session, tracks) = try await playing()
        defer { session.stop() }
        let mark = session.signals.count
        _ = try await session.call("OpenUri", [.string(tracks[2].absoluteString)])
        let opened = try await session.waitForPlayerChange(after: mark, "Track 3") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
        let openedID = opened.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath
        #expect(openedID != nil && openedID?.rawValue != "/quaver/track/3", "a new queue entry gets a new id")
        try await session.waitForStatus("Playing")

        await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
            _ = try await session.call("OpenUri", [.string("ftp://example.com/a.flac")])
        }
        await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
            _ = try await session.call("OpenUri", [.string("no scheme at all")])
        }
        await expectMPRISError("org.mpris.MediaPlayer2.quaver.Error.NoSuchContent") {
            _ = try await session.call("OpenUri", [.string("file:///nonexistent/quaver/test.flac")])
        }
        #expect(try await session.metadata()["mpris:trackid"]?.objectPath == openedID)
    }

    @Test("loop and shuffle through playerctl")
    func loopAndShuffle() async throws {
        let (session, _) = try await playing()
        defer { session.stop() }
        var mark = session.signals.count
        try await session.playerctl("loop", "Track")
        try await session.waitForPlayerChange(after: mark, "LoopStatus Track") { $0["LoopStatus"] == .string("Track") }
        #expect(try await session.playerctl("loop") == "Track")

        mark = session.signals.count
        try await session.playerctl("loop", "Playlist")
        try await session.waitForPlayerChange(after: mark, "LoopStatus Playlist") {
            $0["LoopStatus"] == .string("Playlist")
        }
        #expect(try await session.get("CanGoPrevious") == .boolean(true), "Playlist loop wraps backwards too")

        mark = session.signals.count
        try await session.playerctl("shuffle", "On")
        try await session.waitForPlayerChange(after: mark, "Shuffle on") { $0["Shuffle"] == .boolean(true) }
        #expect(try await session.playerctl("shuffle") == "On")
        await expectMPRISError("org.freedesktop.DBus.Error.InvalidArgs") {
            try await session.set("LoopStatus", .string("Forever"))
        }
        #expect(try await session.get("LoopStatus") == .string("Playlist"))
    }
}
