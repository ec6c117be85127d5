/// When the saved session is written: the decisions of ``SessionSaver`` apart from the disk
/// and the main queue, so that a table test walks every one.
///
/// The session is saved at the moments that change it, never on a timer: a change asks for
/// a save at the end of the main queue's turn (so that the signals it caused go out first),
/// and the save compares what the player shows with what was last written. One write at a
/// time: what changes while one is under way is due after it, the newest queue and state
/// only (a burst of 2,000 AddTrack calls is a few writes). Closing writes what is still due
/// after the write under way, once, and nothing is written after it.
struct SessionSave: Equatable {
    /// What a write is to write.
    struct Due: Equatable {
        /// The queue: read from the player as the write starts, so always the newest.
        var queue = false
        /// The playback state, when it differs from the one last written.
        var state: SavedState?

        /// Nothing to write.
        var isEmpty: Bool { !queue && state == nil }

        /// `self` with what `later` asks for over it (the newer state wins).
        func merged(with later: Due) -> Due {
            Due(queue: queue || later.queue, state: later.state ?? state)
        }
    }

    /// What the player shows now, as far as the saved session goes.
    struct Snapshot: Equatable {
        /// The player's count of queue changes: another number means another queue.
        var queueRevision: Int
        /// Where playback is and with which options.
        var state: SavedState
    }

    /// Where the saving is.
    enum Phase: Equatable {
        /// Nothing is being written and nothing is asked for.
        case idle
        /// A save is asked for at the end of this turn of the main queue.
        case scheduled
        /// A write is under way: `next` is due after it, and `scheduled` says whether a save
        /// is asked for at the end of this turn as well.
        case writing(next: Due, scheduled: Bool)
        /// The last write is handed out (the daemon is stopping): nothing is written after it.
        case closed
    }

    /// What the executor carries out.
    enum Action: Equatable {
        /// Call ``turnEnded(_:)`` once the main queue has run what is already on it.
        case scheduleTurn
        /// Start writing, off the main queue; call ``writeFinished()`` when it is done.
        case write(Due)
        /// Write after any write under way, then report that the session is on disk.
        case writeLast(Due)
    }

    /// Where the saving is now.
    private(set) var phase = Phase.idle
    /// The queue revision last handed to a write (or restored from disk).
    private(set) var writtenQueueRevision: Int?
    /// The state last handed to a write.
    private(set) var writtenState: SavedState?

    /// The queue was restored from the file as it is: it need not be written again.
    mutating func restored(queueRevision: Int) {
        writtenQueueRevision = queueRevision
    }

    /// Something the session holds may have changed: save at the end of this turn.
    mutating func changed() -> [Action] {
        switch phase {
        case .idle:
            phase = .scheduled
        case .writing(let next, false):
            phase = .writing(next: next, scheduled: true)
        case .scheduled, .writing(_, true), .closed:
            return []
        }
        return [.scheduleTurn]
    }

    /// The turn a save was asked in has ended: save what the player shows (nil while it is
    /// not to be saved: before the session is restored, or while media is being queued).
    mutating func turnEnded(_ snapshot: Snapshot?) -> [Action] {
        switch phase {
        case .scheduled: phase = .idle
        case .writing(let next, true): phase = .writing(next: next, scheduled: false)
        case .idle, .writing(_, false), .closed: break
        }
        return save(snapshot)
    }

    /// Saves what the player shows now, when it differs from what was written last.
    mutating func save(_ snapshot: Snapshot?) -> [Action] {
        guard phase != .closed, let snapshot else { return [] }
        let due = takeDue(snapshot)
        switch phase {
        case .idle, .scheduled:
            guard !due.isEmpty else { return [] }
            phase = .writing(next: Due(), scheduled: phase == .scheduled)
            return [.write(due)]
        case .writing(let next, let scheduled):
            phase = .writing(next: next.merged(with: due), scheduled: scheduled)
            return []
        case .closed:
            return []
        }
    }

    /// The write under way is done: what became due meanwhile is written now.
    mutating func writeFinished() -> [Action] {
        guard case .writing(let next, let scheduled) = phase else { return [] }
        if next.isEmpty {
            phase = scheduled ? .scheduled : .idle
            return []
        }
        phase = .writing(next: Due(), scheduled: scheduled)
        return [.write(next)]
    }

    /// The daemon stops: what is due, and what the player shows now if it differs, is
    /// written after the write under way, and nothing after that.
    mutating func close(_ snapshot: Snapshot?) -> [Action] {
        var due = Due()
        if case .writing(let next, _) = phase { due = next }
        if phase != .closed, let snapshot { due = due.merged(with: takeDue(snapshot)) }
        phase = .closed
        return [.writeLast(due)]
    }

    /// The daemon ends without saving (another process owns the name, or the bus is gone):
    /// nothing more is written.
    mutating func abandon() {
        phase = .closed
    }

    /// What `snapshot` has that was not written, now counted as written.
    private mutating func takeDue(_ snapshot: Snapshot) -> Due {
        var due = Due()
        if snapshot.queueRevision != writtenQueueRevision {
            writtenQueueRevision = snapshot.queueRevision
            due.queue = true
        }
        if snapshot.state != writtenState {
            writtenState = snapshot.state
            due.state = snapshot.state
        }
        return due
    }
}
