import FoundationEssentials
public import Media
import PlaybackPipeline
import PlaybackVocabulary

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
        var added: [Entry] = []
        step { state in
            let (new, actions) = state.insert(items, at: position, announce: announce)
            added = new
            return actions
        }
        return added
    }

    /// Removes the entry with `id`; removing the selected one moves on as Next would, or
    /// stops when nothing follows. False when no entry has that id.
    @discardableResult
    public func remove(id: UInt64) -> Bool {
        let requested = requestedStatus
        guard queue.contains(id) else { return false }
        step { $0.remove(id: id, requested: requested) ?? [] }
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
        step { $0.replace(with: items, play: shouldPlay) }
    }

    /// The queued entry with `id`, if any.
    public func entry(id: UInt64) -> Entry? {
        queue.index(of: id).map { queue[$0] }
    }
}
