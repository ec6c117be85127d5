import DBus
import Testing

@testable import NowPlaying

/// A player whose changes take time to settle says where commands apply with
/// `NowPlayingInfoCenter.pendingItem`, and what they may do with the commands' own enabled
/// flags: Seek and SetPosition then act on the pending item, and every command runs exactly
/// when its published `Can*` flag says it may.
@MainActor
@Suite struct MPRISPendingItemTests {
    /// Published: item 101 playing at 0 s, the first of three. Pending: item 102 (180 s long)
    /// at 10 s, as if a Next and a seek had not settled yet.
    func harness() -> Harness {
        let h = Harness()
        h.start(0)
        h.info.pendingItem = PendingItem(queueItemID: 102, duration: .seconds(180), elapsedPlaybackTime: .seconds(10))
        return h
    }

    @Test func nextAndPreviousRunExactlyWhenTheirFlagsSayTheyMay() {
        let h = harness()
        #expect(h.value("CanGoPrevious") == .boolean(false), "published: the first item")
        #expect(h.call("Previous") == .success([]))
        #expect(h.engine.events == [], "a disabled command does nothing")
        // The player accepted a Next: it enables Previous from where it is headed, and
        // clients see it.
        h.commands.previousTrackCommand.isEnabled = true
        h.settle()
        #expect(h.value("CanGoPrevious") == .boolean(true))
        #expect(h.call("Previous") == .success([]))
        #expect(h.engine.events == [.previousTrack])
        h.engine.clearEvents()
        h.commands.nextTrackCommand.isEnabled = false
        h.settle()
        #expect(h.value("CanGoNext") == .boolean(false))
        #expect(h.call("Next") == .success([]))
        #expect(h.engine.events == [], "nothing follows the item the commands act on")
    }

    @Test func flagsSetWhilePendingReachClientsWithTheChangeThatSettlesIt() {
        let h = harness()
        h.commands.previousTrackCommand.isEnabled = true
        #expect(h.playerChanges(h.flush()).isEmpty, "held while the item is pending")
        // The player settles on item 102: its info and the flag go out in one signal.
        h.info.pendingItem = nil
        h.engine.load(1)
        h.commands.previousTrackCommand.isEnabled = true
        let changes = h.playerChanges(h.flush())
        #expect(changes.count == 1)
        let changed = changes.first?.changed ?? [:]
        #expect(changed["CanGoPrevious"] == .boolean(true))
        #expect(changed["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Two"))
    }

    @Test func setPositionNamesThePendingItem() {
        let h = harness()
        #expect(h.call("SetPosition", [h.trackID(101), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [], "the published item is stale once another was asked for")
        #expect(h.call("SetPosition", [h.trackID(102), .int64(181_000_000)]) == .success([]))
        #expect(h.engine.events == [], "past the end of the pending item")
        #expect(h.call("SetPosition", [h.trackID(102), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(5))])
    }

    @Test func seekMovesFromThePendingPosition() throws {
        let h = harness()
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.seek(offset: .seconds(5), position: .seconds(15))])
        h.engine.clearEvents()
        #expect(h.call("Seek", [.int64(170_000_000)]) == .success([]))
        #expect(h.engine.events == [.nextTrack], "10 s + 170 s is the end of the 180 s item: Next")
        h.engine.clearEvents()
        // The pending item's length is not known yet: it cannot seek.
        h.info.pendingItem?.duration = nil
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(102), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [])
        // Once settled, the published item is the target again (the Next above made it 102).
        h.info.pendingItem = nil
        h.settle()
        let published = try #require(h.info.nowPlayingInfo?.queueItemID)
        #expect(h.call("SetPosition", [h.trackID(published), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(5))])
    }

    @Test func aDisabledSeekDoesNothingWhateverIsPending() {
        let h = harness()
        h.commands.seekCommand.isEnabled = false
        h.commands.changePlaybackPositionCommand.isEnabled = false
        h.settle()
        #expect(h.value("CanSeek") == .boolean(false))
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(102), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [])
    }
}
