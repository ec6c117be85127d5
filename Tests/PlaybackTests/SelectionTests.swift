import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// The selection over a queue, without a player: ids, shifts on edits, and moves.
@Suite("Selection")
struct SelectionTests {
    func queue(_ selection: inout Selection, _ count: Int) -> PlayQueue {
        var queue = PlayQueue()
        let new = selection.makeEntries((0..<count).map { MediaItem(uri: "file:///\($0).flac") })
        queue.insert(new, at: 0)
        _ = selection.inserted(new, at: 0, in: queue)
        return queue
    }

    @Test func entriesGetIdsNeverUsedBeforeAndTheFirstIsSelected() {
        var selection = Selection()
        let first = selection.makeEntries([MediaItem(uri: "file:///a.flac"), MediaItem(uri: "file:///a.flac")])
        let second = selection.makeEntries([MediaItem(uri: "file:///a.flac")])
        #expect(Set((first + second).map(\.id)).count == 3, "the same file queued twice has two ids")
        var queue = PlayQueue()
        queue.insert(first, at: 0)
        #expect(after { selection.inserted(first, at: 0, in: queue) })
        #expect(selection.index == 0)
        queue.insert(second, at: 0)
        #expect(!after { selection.inserted(second, at: 0, in: queue) }, "already selected")
        #expect(selection.index == 1, "the selection keeps its entry when one goes before it")
    }

    @Test func removingAnEntryBeforeTheSelectionKeepsItsEntry() {
        var selection = Selection()
        var queue = queue(&selection, 4)
        selection.move(from: nil, to: 2, in: queue, forward: true)
        queue.remove(at: 3)
        selection.removed(at: 3)
        #expect(selection.index == 2)
        queue.remove(at: 0)
        selection.removed(at: 0)
        #expect(selection.index == 1 && queue[1].uri == "file:///2.flac")
        selection.reset()
        #expect(selection.index == nil)
    }

    @Test func movesSetTheDirectionAFailureIsSkippedIn() {
        var selection = Selection()
        let queue = queue(&selection, 3)
        selection.move(from: queue[0].id, to: 2, in: queue, forward: false)
        #expect(selection.index == 2 && !selection.travelsForward)
        #expect(selection.neighbour(of: 2, in: queue, forward: selection.travelsForward, automatic: true) == 1)
    }

    @Test func askingWhetherNextWouldMoveDrawsNothing() {
        var selection = Selection()
        let queue = queue(&selection, 50)
        selection.setShuffle(true, in: queue)
        let before = selection.order.upcoming
        #expect(selection.canMove(forward: true, in: queue))
        #expect(!selection.canMove(forward: false, in: queue), "no history yet")
        #expect(selection.order.upcoming == before, "the shuffle cycle is untouched")
        let next = selection.neighbour(of: 0, in: queue, forward: true, automatic: false)
        #expect(next.map { queue[$0].id } == before.last, "the next one is the cycle's")
    }

    @Test func aQueueOfOneOnRepeatAllCannotChangeTrack() {
        var selection = Selection()
        let queue = queue(&selection, 1)
        selection.setRepeatMode(.all)
        #expect(!selection.canMove(forward: true, in: queue))
        #expect(!selection.canMove(forward: false, in: queue))
    }
}
