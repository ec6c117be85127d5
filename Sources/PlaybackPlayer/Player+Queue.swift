import FoundationEssentials

/// Adding, removing and replacing entries of the queue.
extension Player {
    /// Queues URIs (already expanded) after the entry at `index` (nil: at the end) and
    /// returns their entries.
    @discardableResult
    public func enqueue(_ uris: [String], after index: Int? = nil) -> [Entry] {
        enqueue(uris.map { MediaItem(uri: $0) }, after: index)
    }

    /// Queues items (already expanded) after the entry at `index` (nil: at the end) and
    /// returns their entries.
    @discardableResult
    public func enqueue(_ items: [MediaItem], after index: Int? = nil) -> [Entry] {
        insert(items, at: index.map { min($0 + 1, queue.count) } ?? queue.count)
    }

    /// Queues URIs after the entry with id `afterID` (nil: at the start). Nil when no
    /// entry has that id.
    public func insert(_ uris: [String], afterID: UInt64?) -> [Entry]? {
        insert(uris.map { MediaItem(uri: $0) }, afterID: afterID)
    }

    /// Queues items after the entry with id `afterID` (nil: at the start). Nil when no
    /// entry has that id.
    public func insert(_ items: [MediaItem], afterID: UInt64?) -> [Entry]? {
        guard let afterID else { return insert(items, at: 0) }
        guard let index = queue.index(of: afterID) else { return nil }
        return insert(items, at: index + 1)
    }

    func insert(_ items: [MediaItem], at position: Int, announce: Bool = true) -> [Entry] {
        guard !items.isEmpty else { return [] }
        let new = selection.makeEntries(items)
        queue.insert(new, at: position)
        if selection.inserted(new, at: position, in: queue) {
            // A local file becomes `current` once its tags are read, so that clients see
            // one Metadata for it, not a file name followed by the real title.
            if let selectedIndex, !queue[selectedIndex].needsRead { setCurrent(queue[selectedIndex]) }
            catalog.discoverSelectedIfNeeded()
        }
        conductor.nextMayHaveChanged()
        if announce { onChange?(.queue) }
        return new
    }

    /// Removes the entry with `id`; removing the current one moves on as Next would, or
    /// stops when nothing follows. False when no entry has that id.
    @discardableResult
    public func remove(id: UInt64) -> Bool {
        guard let index = queue.index(of: id) else { return false }
        guard index == selectedIndex else {
            queue.remove(at: index)
            selection.removed(at: index)
            conductor.nextMayHaveChanged()
            onChange?(.queue)
            return true
        }
        conductor.userActed()  // the track an interruption paused is gone
        let followerID = neighbour(of: index, forward: true, automatic: false).map { queue[$0].id }
        queue.remove(at: index)
        if let followerID, followerID != id, let follower = queue.index(of: followerID) {
            selectedIndex = follower
            selection.recordMove(from: id, to: followerID, forward: true)
            onChange?(.queue)
            go(to: follower)
            return true
        }
        pendingRead = nil
        selectedIndex = queue.isEmpty ? nil : min(index, queue.count - 1)
        setCurrent(nil)
        onChange?(.queue)
        engine.stop()
        catalog.discoverSelectedIfNeeded()
        return true
    }

    /// Replaces the whole queue with URIs and plays it from the start, or stays stopped when
    /// `play` is false.
    public func replaceQueue(with uris: [String], play shouldPlay: Bool) {
        replaceQueue(with: uris.map { MediaItem(uri: $0) }, play: shouldPlay)
    }

    /// Replaces the whole queue (a playlist activated) and plays it from the start, or
    /// stays stopped when `play` is false.
    public func replaceQueue(with items: [MediaItem], play shouldPlay: Bool) {
        conductor.userActed()
        pendingRead = nil
        queue.removeAll()
        selection.reset()
        setCurrent(nil)
        engine.stop()
        // The first entry is shown at once, as Play would start it, while its tags are read:
        // clients hear of the new list and of its current entry together.
        let added = insert(items, at: 0, announce: false)
        setCurrent(selectedEntry.flatMap { $0.failure == nil ? $0 : nil })
        if !added.isEmpty { onChange?(.queue) }
        onChange?(.transport)
        if shouldPlay { play() }
    }

    /// The queued entry with `id`, if any.
    public func entry(id: UInt64) -> Entry? {
        queue.index(of: id).map { queue[$0] }
    }
}
