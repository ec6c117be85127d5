import DBus
import NowPlaying
import Testing

/// A player that says what its commands act on (`MPRISServer.commandState`), ahead of what it
/// has published: Next, Previous, Seek and SetPosition follow that state, so that commands
/// sent in quick succession apply in order.
@MainActor
@Suite struct MPRISCommandStateTests {
    /// Published: item 101 playing at 0 s, the first of three (Previous disabled). The commands
    /// act on item 102 (180 s long) at 10 s, as if a Next and a seek had not settled yet.
    func harness() -> (Harness, Box) {
        let h = Harness()
        h.start(0)
        let box = Box()
        h.server.commandState = { box.state }
        return (h, box)
    }

    final class Box {
        var state = MPRISServer.CommandState(
            itemID: 102, duration: .seconds(180), position: .seconds(10), canSeek: true, canGoNext: true, canGoPrevious: true)
    }

    @Test func nextAndPreviousFollowTheCommandState() {
        let (h, box) = harness()
        #expect(h.value("CanGoPrevious") == .boolean(false), "published: the first item")
        #expect(h.call("Previous") == .success([]))
        #expect(h.engine.events == [.previousTrack], "the item the commands act on has one before it")
        h.engine.clearEvents()
        box.state.canGoNext = false
        #expect(h.value("CanGoNext") == .boolean(true), "published: items follow")
        #expect(h.call("Next") == .success([]))
        #expect(h.engine.events == [], "nothing follows the item the commands act on")
    }

    @Test func setPositionNamesTheItemTheCommandsActOn() {
        let (h, _) = harness()
        #expect(h.call("SetPosition", [h.trackID(101), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [], "the published item is stale once another was asked for")
        #expect(h.call("SetPosition", [h.trackID(102), .int64(181_000_000)]) == .success([]))
        #expect(h.engine.events == [], "past the end of the item the commands act on")
        #expect(h.call("SetPosition", [h.trackID(102), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(5))])
    }

    @Test func seekMovesFromThePositionTheCommandsLeave() {
        let (h, box) = harness()
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.seek(offset: .seconds(5), position: .seconds(15))])
        h.engine.clearEvents()
        #expect(h.call("Seek", [.int64(170_000_000)]) == .success([]))
        #expect(h.engine.events == [.nextTrack], "10 s + 170 s is the end of the 180 s item: Next")
        h.engine.clearEvents()
        box.state.canSeek = false
        #expect(h.value("CanSeek") == .boolean(true), "published: seekable")
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(102), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [], "the item the commands act on cannot seek (stopped, say)")
    }
}
