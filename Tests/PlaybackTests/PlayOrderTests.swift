import SeededRandom
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPlayer

/// The play order on its own: a queue is a list of ids with some known to fail.
@Suite("Play order")
struct PlayOrderTests {
    struct Queue: PlayOrder.Queue {
        var ids: [UInt64]
        var failed: Set<UInt64> = []
        var count: Int { ids.count }
        func id(at index: Int) -> UInt64 { ids[index] }
        func index(of id: UInt64) -> Int? { ids.firstIndex(of: id) }
        func isPlayable(at index: Int) -> Bool { !failed.contains(ids[index]) }
    }

    @Test func neighboursFollowTheQueueAndSkipFailures() {
        var order = PlayOrder()
        var random = SplitMix(seed: 1)
        let queue = Queue(ids: [10, 11, 12, 13], failed: [11])
        #expect(order.neighbour(of: 0, in: queue, forward: true, automatic: false, using: &random) == 2)
        #expect(order.neighbour(of: 2, in: queue, forward: false, automatic: false, using: &random) == 0)
        #expect(order.neighbour(of: 3, in: queue, forward: true, automatic: true, using: &random) == nil, "the end")
        #expect(order.neighbour(of: 0, in: queue, forward: false, automatic: false, using: &random) == nil, "the start")
    }

    @Test func repeatAllWrapsAndRepeatOneRepeatsOnlyAtTheEndOfATrack() {
        var order = PlayOrder()
        var random = SplitMix(seed: 2)
        let queue = Queue(ids: [1, 2, 3])
        order.repeatMode = .all
        #expect(order.neighbour(of: 2, in: queue, forward: true, automatic: false, using: &random) == 0)
        #expect(order.neighbour(of: 0, in: queue, forward: false, automatic: false, using: &random) == 2)
        order.repeatMode = .one
        #expect(order.neighbour(of: 1, in: queue, forward: true, automatic: true, using: &random) == 1)
        #expect(
            order.neighbour(of: 1, in: queue, forward: true, automatic: false, using: &random) == 2,
            "Next still moves on")
        #expect(
            order.neighbour(of: 1, in: queue, forward: true, automatic: true, allowRepeatOne: false, using: &random)
                == 2,
            "a failed track is not repeated")
    }

    @Test func aQueueOfOneOnRepeatAllIsItsOwnNeighbour() {
        var order = PlayOrder()
        var random = SplitMix(seed: 3)
        order.repeatMode = .all
        #expect(order.neighbour(of: 0, in: Queue(ids: [7]), forward: true, automatic: false, using: &random) == 0)
    }

    @Test(
        "shuffle plays every entry once per cycle, and Previous walks back the way it came",
        arguments: [1, 2, 3] as [UInt64])
    func shuffleCyclesAndHistory(seed: UInt64) {
        var order = PlayOrder()
        var random = SplitMix(seed: seed)
        let queue = Queue(ids: Array(1...12))
        order.setShuffle(true, current: nil, ids: queue.ids, using: &random)
        var index = order.first(in: queue, using: &random)!
        var visited = [queue.ids[index]]
        while let next = order.neighbour(of: index, in: queue, forward: true, automatic: true, using: &random) {
            order.recordMove(from: queue.ids[index], to: queue.ids[next], forward: true)
            index = next
            visited.append(queue.ids[index])
        }
        #expect(visited.sorted() == queue.ids, "each entry once: \(visited)")
        var back: [UInt64] = [queue.ids[index]]
        while let previous = order.neighbour(of: index, in: queue, forward: false, automatic: false, using: &random) {
            order.recordMove(from: queue.ids[index], to: queue.ids[previous], forward: false)
            index = previous
            back.append(queue.ids[index])
        }
        #expect(back == visited.reversed(), "Previous retraces the cycle")
    }

    @Test func theShuffleHistoryIsBounded() {
        var order = PlayOrder()
        var random = SplitMix(seed: 4)
        order.setShuffle(true, current: nil, ids: [1, 2], using: &random)
        for step in 0..<(3 * PlayOrder.historyLimit) {
            order.recordMove(from: UInt64(step % 2 + 1), to: UInt64((step + 1) % 2 + 1), forward: true)
        }
        #expect(order.history.count <= 2 * PlayOrder.historyLimit && order.history.count >= PlayOrder.historyLimit)
    }
}
