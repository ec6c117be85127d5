import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// Which entry of the queue is selected, and where commands, failures and the ends of tracks
/// lead from it: the play order (``PlayOrder``) over the queue, with its shuffle cycle and
/// history, and the direction the selection last moved in. The queue itself is handed in.
struct Selection {
    /// The selected entry's index in the queue (nil: the queue is empty).
    var index: Int?
    /// The direction the selection last moved in: a failed entry is skipped the same way.
    private(set) var travelsForward = true
    private(set) var order = PlayOrder()
    private var random = SystemRandomNumberGenerator()
    private var nextID: UInt64 = 1

    /// New entries for `uris`, each with an id never used before in this process.
    mutating func makeEntries(_ items: [MediaItem]) -> [Player.Entry] {
        var prefixes: [Substring: Player.SharedPrefix] = [:]
        return items.map { item in
            defer { nextID += 1 }
            return Player.Entry(id: nextID, uri: item.uri, title: item.title, prefixes: &prefixes)
        }
    }

    /// `new` entries went into `queue` at `position`: the selection keeps its entry, and the
    /// shuffle cycle takes them in. Returns true when nothing was selected and the entry to
    /// start with now is.
    mutating func inserted(_ new: [Player.Entry], at position: Int, in queue: PlayQueue) -> Bool {
        if let index, index >= position { self.index = index + new.count }
        order.added(new.map(\.id), using: &random)
        guard index == nil else { return false }
        index = first(in: queue)
        return true
    }

    /// The entry at `removed`, not the selected one, left the queue.
    mutating func removed(at removed: Int) {
        if let index, index > removed { self.index = index - 1 }
    }

    /// The queue was emptied: nothing is selected, and the shuffle cycle and history go.
    mutating func reset() {
        index = nil
        order.reset()
    }

    mutating func setRepeatMode(_ mode: Player.RepeatMode) {
        order.repeatMode = mode
    }

    mutating func setShuffle(_ on: Bool, in queue: PlayQueue) {
        order.setShuffle(on, current: index.map { queue[$0].id }, ids: queue.entries.lazy.map(\.id), using: &random)
    }

    /// Whether a move by hand from the selected entry would change it (a queue of one on
    /// repeat-all restarts it instead). Asks without drawing: the shuffle stays as it is.
    func canMove(forward: Bool, in queue: PlayQueue) -> Bool {
        guard let index else { return false }
        var order = self.order
        var random = self.random
        let target = order.neighbour(
            of: index, in: QueueView(queue), forward: forward, automatic: false, using: &random)
        return target.map { $0 != index } ?? false
    }

    /// The entry to start with when nothing is selected.
    mutating func first(in queue: PlayQueue) -> Int? {
        order.first(in: QueueView(queue), using: &random)
    }

    /// The entry before or after the one at `index` in play order (`automatic`: at the end
    /// of a track, where repeat-one repeats, unless `allowRepeatOne` is false).
    mutating func neighbour(
        of index: Int, in queue: PlayQueue, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true
    ) -> Int? {
        order.neighbour(
            of: index, in: QueueView(queue), forward: forward, automatic: automatic, allowRepeatOne: allowRepeatOne,
            using: &random)
    }

    /// Selects the entry at `target`, going `forward` or back from the entry `from`, which
    /// the shuffle history records.
    mutating func move(from: UInt64?, to target: Int, in queue: PlayQueue, forward: Bool) {
        if let from { order.recordMove(from: from, to: queue[target].id, forward: forward) }
        index = target
        travelsForward = forward
    }

    /// Records a move in the shuffle history, the selection itself set apart.
    mutating func recordMove(from: UInt64, to: UInt64, forward: Bool) {
        order.recordMove(from: from, to: to, forward: forward)
    }
}
