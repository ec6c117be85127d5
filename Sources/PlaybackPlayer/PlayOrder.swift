import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// The order entries play in: neighbours in the queue, repeat, and shuffle with its history.
///
/// A pure value over a view of the queue (ids in order, and which entries are known to
/// fail): no GStreamer and no clock, so every rule is unit-tested on its own. The random
/// order comes from the generator given, so a test can seed it.
struct PlayOrder: Sendable {
    /// What the order reads of the queue.
    protocol Queue {
        var count: Int { get }
        func id(at index: Int) -> UInt64
        func index(of id: UInt64) -> Int?
        func isPlayable(at index: Int) -> Bool
    }

    var repeatMode: Player.RepeatMode = .off
    private(set) var shuffle = false
    /// Shuffle: the entries still to play in this cycle (the next one last).
    private(set) var upcoming: [UInt64] = []
    /// Shuffle: the entries played, most recent last, which Previous walks back through.
    private(set) var history: [UInt64] = []

    /// How far back Previous walks with Shuffle on (the history is cut to this once it is
    /// twice as long: skipping for hours must not grow it for ever).
    static let historyLimit = 1_000

    /// Turns shuffle on (a new cycle of every entry but `current`) or off (queue order from
    /// the current entry).
    mutating func setShuffle(
        _ on: Bool, current: UInt64?, ids: some Sequence<UInt64>, using random: inout some RandomNumberGenerator
    ) {
        shuffle = on
        history = []
        upcoming = on ? ids.filter { $0 != current }.shuffled(using: &random) : []
    }

    /// Forgets the shuffle cycle and history (the queue was replaced).
    mutating func reset() {
        upcoming = []
        history = []
    }

    /// New entries join the current shuffle cycle.
    mutating func added(_ ids: [UInt64], using random: inout some RandomNumberGenerator) {
        guard shuffle else { return }
        upcoming += ids
        upcoming.shuffle(using: &random)
    }

    /// The entry to start with when nothing is selected, taken out of the shuffle cycle.
    mutating func first(in queue: some Queue, using random: inout some RandomNumberGenerator) -> Int? {
        guard queue.count > 0 else { return nil }
        guard shuffle, let index = shuffleNext(after: nil, in: queue, using: &random) else { return 0 }
        upcoming.removeLast()  // it is now the current one
        return index
    }

    /// The entry after (or before) `index` in play order, skipping entries known to fail.
    /// `automatic` is the end of a track: it repeats the track in repeat-one mode, unless
    /// `allowRepeatOne` is false (the track failed).
    mutating func neighbour(
        of index: Int, in queue: some Queue, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true,
        using random: inout some RandomNumberGenerator
    ) -> Int? {
        guard index >= 0, index < queue.count else { return nil }
        if automatic && allowRepeatOne && repeatMode == .one && queue.isPlayable(at: index) { return index }
        if shuffle {
            return forward
                ? shuffleNext(after: queue.id(at: index), in: queue, using: &random) : shufflePrevious(in: queue)
        }
        var candidate = index
        for _ in 0..<queue.count {
            candidate += forward ? 1 : -1
            if candidate >= queue.count || candidate < 0 {
                guard repeatMode == .all else { return nil }
                candidate = forward ? 0 : queue.count - 1
            }
            if candidate == index { return repeatMode == .all && queue.isPlayable(at: index) ? index : nil }
            if queue.isPlayable(at: candidate) { return candidate }
        }
        return nil
    }

    /// Shuffle: the next entry of this cycle, without taking it; with repeat-all a new cycle
    /// begins when this one is over. Entries removed, failed or current are dropped from the
    /// cycle on the way.
    private mutating func shuffleNext(
        after currentID: UInt64?, in queue: some Queue, using random: inout some RandomNumberGenerator
    ) -> Int? {
        while let id = upcoming.last {
            if id != currentID, let index = queue.index(of: id), queue.isPlayable(at: index) { return index }
            upcoming.removeLast()
        }
        guard repeatMode == .all else { return nil }
        upcoming = (0..<queue.count).compactMap {
            queue.isPlayable(at: $0) && queue.id(at: $0) != currentID ? queue.id(at: $0) : nil
        }
        upcoming.shuffle(using: &random)
        if let id = upcoming.last { return queue.index(of: id) }
        // A queue of one: it repeats.
        return currentID.flatMap { queue.index(of: $0) }.flatMap { queue.isPlayable(at: $0) ? $0 : nil }
    }

    /// Shuffle: the entry played before the current one, most recent first.
    private mutating func shufflePrevious(in queue: some Queue) -> Int? {
        while let id = history.last {
            if let index = queue.index(of: id), queue.isPlayable(at: index) { return index }
            history.removeLast()
        }
        return nil
    }

    /// Shuffle bookkeeping for a move from one entry to another: forward takes the target
    /// out of this cycle and remembers where it came from; backward walks the history back
    /// and puts the entry left at the front of what is to come.
    mutating func recordMove(from oldID: UInt64, to newID: UInt64, forward: Bool) {
        guard shuffle, oldID != newID else { return }
        if forward {
            if upcoming.last == newID {
                upcoming.removeLast()
            } else if let position = upcoming.lastIndex(of: newID) {
                upcoming.remove(at: position)
            }
            history.append(oldID)
            if history.count > 2 * Self.historyLimit {
                history.removeFirst(history.count - Self.historyLimit)
            }
        } else {
            if history.last == newID { history.removeLast() }
            upcoming.append(oldID)
        }
    }
}
