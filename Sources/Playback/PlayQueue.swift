/// The entries of a play queue in order, found by id in constant time on average.
///
/// Built for long queues (100,000 entries): entries are small (tags are boxed), an append
/// touches only the new entries, and an insertion or removal in the middle only marks the
/// id index stale from that point; it is brought up to date on the next lookup that needs it.
struct PlayQueue {
    private(set) var entries: [Player.Entry] = []
    /// The index each id had when last indexed; valid below `staleFrom`.
    private var indexByID: [UInt64: Int] = [:]
    private var staleFrom = 0
    /// Changes at each insertion, removal or replacement (not at tag updates).
    private(set) var revision = 0

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

    func contains(_ id: UInt64) -> Bool { indexByID[id] != nil }

    mutating func index(of id: UInt64) -> Int? {
        guard let index = indexByID[id] else { return nil }
        if index < staleFrom { return index }
        reindex()
        return indexByID[id]
    }

    /// Inserts `new` before `position` (`count` appends).
    mutating func insert(_ new: [Player.Entry], at position: Int) {
        guard !new.isEmpty else { return }
        let appending = position >= entries.count
        entries.insert(contentsOf: new, at: min(position, entries.count))
        if appending && staleFrom >= entries.count - new.count {
            for offset in new.indices { indexByID[new[offset].id] = position + offset }
            staleFrom = entries.count
        } else {
            for entry in new { indexByID[entry.id] = Int.max }  // known, index to be computed
            staleFrom = min(staleFrom, position)
        }
        revision &+= 1
    }

    @discardableResult
    mutating func remove(at index: Int) -> Player.Entry {
        let removed = entries.remove(at: index)
        indexByID[removed.id] = nil
        staleFrom = min(staleFrom, index)
        revision &+= 1
        return removed
    }

    mutating func removeAll() {
        entries = []
        indexByID = [:]
        staleFrom = 0
        revision &+= 1
    }

    private mutating func reindex() {
        for index in staleFrom..<entries.count { indexByID[entries[index].id] = index }
        staleFrom = entries.count
    }
}
