/// How a window of ids became another: the ids that left, and those that came in with the
/// id each follows in the new window (nil: first). Applied in order — removals, then
/// additions — they turn the old window into the new one.
struct WindowEdits: Equatable {
    var removed: [UInt64]
    var added: [(id: UInt64, after: UInt64?)]
    var count: Int { removed.count + added.count }

    static func == (a: WindowEdits, b: WindowEdits) -> Bool {
        a.removed == b.removed && a.added.map(\.id) == b.added.map(\.id) && a.added.map(\.after) == b.added.map(\.after)
    }

    /// Keeps the longest common subsequence (windows are short: about 20 ids).
    init(from old: [UInt64], to new: [UInt64]) {
        var length = Array(repeating: Array(repeating: 0, count: new.count + 1), count: old.count + 1)
        for i in stride(from: old.count - 1, through: 0, by: -1) {
            for j in stride(from: new.count - 1, through: 0, by: -1) {
                length[i][j] = old[i] == new[j] ? length[i + 1][j + 1] + 1 : max(length[i + 1][j], length[i][j + 1])
            }
        }
        var kept = Set<UInt64>()
        var i = 0
        var j = 0
        while i < old.count && j < new.count {
            if old[i] == new[j] {
                kept.insert(old[i])
                i += 1
                j += 1
            } else if length[i + 1][j] >= length[i][j + 1] {
                i += 1
            } else {
                j += 1
            }
        }
        removed = old.filter { !kept.contains($0) }
        added = new.indices.compactMap { index in
            kept.contains(new[index]) ? nil : (new[index], index > 0 ? new[index - 1] : nil)
        }
    }
}
