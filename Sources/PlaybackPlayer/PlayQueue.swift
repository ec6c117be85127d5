import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// The entries of a play queue in order, found by id in constant time on average.
///
/// Built for long queues (100,000 entries) edited anywhere: entries are small (tags are
/// boxed); an append touches only the new entries; an insertion or removal elsewhere is
/// logged rather than renumbering everything after it. A lookup takes the index an id had
/// when it was last numbered and applies the edits logged since; once the log is long, the
/// whole queue is renumbered (so an edit costs O(n / maximumLoggedEdits) on average).
struct PlayQueue {
    private(set) var entries: [Player.Entry] = []
    /// Where each id was, as of an epoch (the number of edits logged before it was numbered).
    private var slots: [UInt64: Slot] = [:]
    /// Edits since the queue was last numbered, in order: `count` entries inserted (positive)
    /// or removed (negative) at `position`.
    private var edits: [(position: Int, count: Int)] = []
    /// Changes at each insertion, removal or replacement (not at tag updates).
    private(set) var revision = 0

    static let maximumLoggedEdits = 32

    /// 8 bytes, so that the table of a long queue stays small: a queue holds fewer than 2³²
    /// entries, and the log never holds more than `maximumLoggedEdits`.
    private struct Slot {
        var index: UInt32
        var epoch: UInt8

        init(index: Int, epoch: Int) {
            self.index = UInt32(index)
            self.epoch = UInt8(epoch)
        }
    }

    private var epoch: Int { edits.count }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var indices: Range<Int> { entries.indices }

    subscript(index: Int) -> Player.Entry {
        get { entries[index] }
        set {
            precondition(newValue.id == entries[index].id, "an entry's id never changes")
            entries[index] = newValue
        }
    }

    func contains(_ id: UInt64) -> Bool { slots[id] != nil }

    func index(of id: UInt64) -> Int? {
        guard let slot = slots[id] else { return nil }
        var index = Int(slot.index)
        for edit in edits[Int(slot.epoch)...] {
            if edit.count > 0 {
                if index >= edit.position { index += edit.count }
            } else if index > edit.position {
                index += edit.count
            }
        }
        assert(entries[index].id == id)
        return index
    }

    /// Inserts `new` before `position` (`count` appends).
    mutating func insert(_ new: [Player.Entry], at position: Int) {
        guard !new.isEmpty else { return }
        let position = min(position, entries.count)
        let appending = position == entries.count
        entries.insert(contentsOf: new, at: position)
        // An append moves no one; anything else is logged.
        if !appending { log(position: position, count: new.count) }
        for (offset, entry) in new.enumerated() { slots[entry.id] = Slot(index: position + offset, epoch: epoch) }
        revision &+= 1
    }

    @discardableResult
    mutating func remove(at index: Int) -> Player.Entry {
        let removed = entries.remove(at: index)
        slots[removed.id] = nil
        if index < entries.count { log(position: index, count: -1) }
        revision &+= 1
        return removed
    }

    mutating func removeAll() {
        entries = []
        slots = [:]
        edits = []
        revision &+= 1
    }

    private mutating func log(position: Int, count: Int) {
        edits.append((position, count))
        guard edits.count > Self.maximumLoggedEdits else { return }
        edits = []
        for (index, entry) in entries.enumerated() { slots[entry.id] = Slot(index: index, epoch: 0) }
    }
}

/// The queue as the play order reads it.
struct QueueView: PlayOrder.Queue {
    let queue: PlayQueue
    init(_ queue: PlayQueue) { self.queue = queue }
    var count: Int { queue.count }
    func id(at index: Int) -> UInt64 { queue[index].id }
    func index(of id: UInt64) -> Int? { queue.index(of: id) }
    func isPlayable(at index: Int) -> Bool { queue[index].failure == nil }
}
