/// The player as its parts (the ``Conductor``, the ``Catalog``) see it: what they read of
/// its queue, selection and transport, and the changes they ask of it. The player alone
/// changes its state, in these methods: its current entry in ``setCurrent(_:)``, and
/// nothing else assigns it.
@MainActor
protocol PlayerHost: AnyObject {
    /// The queue, as it is now.
    var queue: PlayQueue { get }
    /// Which entry is selected, and the play order from it.
    var selection: Selection { get }
    /// The index of the selected entry.
    var selectedIndex: Int? { get }
    /// The entry clients are shown.
    var current: QueueEntry? { get }
    /// The queued entry with `id`, if any.
    func entry(id: UInt64) -> QueueEntry?
    /// The settled status.
    var status: PlaybackStatus { get }
    /// The status the commands received so far lead to.
    var requestedStatus: PlaybackStatus { get }
    /// Where in the selected entry the commands received so far lead.
    var requestedPosition: Duration { get }
    /// Whether a load waits for its entry's tags (the selected entry loads once they are in).
    var isReadingBeforeLoad: Bool { get }

    /// Makes `entry` the one clients are shown (nil: none).
    func setCurrent(_ entry: QueueEntry?)
    /// Changes the queued entry at `index` (what was read of it, its failure).
    func updateEntry(at index: Int, _ change: (inout QueueEntry) -> Void)
    /// Selects the entry at `index`.
    func select(_ index: Int)
    /// Selects the entry at `target`, going `forward` or back from the entry `from`.
    func moveSelection(from: UInt64?, to target: Int, forward: Bool)
    /// Records a move in the shuffle history, the selection itself set apart.
    func recordMove(from: UInt64, to: UInt64, forward: Bool)
    /// The entry before or after the one at `index` in play order (see ``Selection``).
    func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool) -> Int?
    /// Loads the entry at `index` toward `intent`.
    func load(_ index: Int, at position: Duration?, intent: PlaybackStatus)
    /// Pauses, as the command does.
    func pause()
    /// Plays, as the command does.
    @discardableResult func play() -> Bool
    /// Tells the observer of a change.
    func announce(_ change: PlaybackChange)
}

extension Player: PlayerHost {
    var isReadingBeforeLoad: Bool { state.reading != nil }

    func updateEntry(at index: Int, _ change: (inout QueueEntry) -> Void) {
        change(&state.queue[index])
    }

    // A load waiting for tags is the selected entry's: a move elsewhere abandons it.
    func select(_ index: Int) {
        if index != state.selectedIndex { state.abandonReading() }
        state.selection.index = index
    }

    func moveSelection(from: UInt64?, to target: Int, forward: Bool) {
        if target != state.selectedIndex { state.abandonReading() }
        state.selection.move(from: from, to: target, in: state.queue, forward: forward)
    }

    func recordMove(from: UInt64, to: UInt64, forward: Bool) {
        state.selection.recordMove(from: from, to: to, forward: forward)
    }

    func announce(_ change: PlaybackChange) {
        onChange?(change)
    }
}
