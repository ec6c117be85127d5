/// When the saved session is written: the decisions of ``SessionSaver`` apart from the disk
/// and the main queue, so that a table test walks every one.
///
/// The session is saved at the moments that change it, never on a timer: a change asks for
/// a save at the end of the main queue's turn (so that the signals it caused go out first),
/// and the save compares what the player shows with what was last handed to a write. One
/// write at a time: what changes while one is under way is written when it finishes, from
/// what the player shows then (a burst of 2,000 AddTrack calls is a few writes). Closing
/// writes what is still due after the write under way, once, and nothing is written after it.
///
/// The queue is written only with the state of the same turn: the state names the queue
/// file it goes with (see ``SessionCommit``), so the two must describe the same queue. What
/// the player showed earlier (kept while it shows nothing, as media is being queued) may
/// give a state alone, and only while its queue is the one last written.
///
/// A write that fails (a full disk, a read-only folder) leaves the last whole save on disk.
/// Everything is then due again, and written at the next change, not at once: a full disk is
/// not tried in a loop. The first failure is reported, and then the first write that
/// succeeds after it; the failures between are not, so the log gets one line, not one a save.
struct SessionSave: Equatable {
    /// What a write is to write.
    struct Due: Equatable {
        /// The queue: read from the player as the write starts, in the turn `state` was taken.
        var queue = false
        /// The playback state: when it differs from the one last written, and always with the
        /// queue (the state names the queue file it goes with).
        var state: SavedState?

        /// Nothing to write.
        var isEmpty: Bool { !queue && state == nil }
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
        /// A write is under way; `scheduled` says whether a save is asked for at the end of
        /// this turn as well.
        case writing(scheduled: Bool)
        /// The last write is handed out (the daemon is stopping): nothing is written after it.
        case closed
    }

    /// How a write ended.
    enum Outcome: Equatable {
        /// All of it is on disk.
        case written
        /// It failed for this reason; the last whole save is still on disk.
        case failed(String)
        /// The folder is refused (a symbolic link): nothing is written there, and the folder
        /// has said so once already.
        case refused
    }

    /// What the executor carries out.
    enum Action: Equatable {
        /// Call ``turnEnded(_:)`` once the main queue has run what is already on it.
        case scheduleTurn
        /// Start writing, off the main queue; call ``writeFinished(_:_:)`` when it is done.
        case write(Due)
        /// Write after any write under way, then report that the session is on disk.
        case writeLast(Due)
        /// Say that the session could not be saved, and why (once, until a write succeeds).
        case reportFailure(String)
        /// Say that the session is saved again, after a failure was reported.
        case reportRecovery
    }

    /// Where the saving is now.
    private(set) var phase = Phase.idle
    /// The queue revision last handed to a write (or restored from disk); nil after a write
    /// failed, so that the queue is written again.
    private(set) var writtenQueueRevision: Int?
    /// The state last handed to a write; nil after a write failed.
    private(set) var writtenState: SavedState?
    /// The newest snapshot the player gave: what is saved when a write finishes, or the
    /// daemon closes, while the player shows none (media is being queued).
    private(set) var latest: Snapshot?
    /// Something changed since the last write was handed out. A snapshot taken when a write
    /// finishes differs from the one written whenever playback moves on (its position), so
    /// only a change noted meanwhile (or another queue) makes it due: otherwise a playing
    /// player would be written over and over, one write after the other.
    private(set) var changedSinceWrite = false
    /// A failure was reported and no write has succeeded since.
    private(set) var failing = false

    /// The queue was restored from the file the saved state names, as it is: it need not be
    /// written again.
    mutating func restored(queueRevision: Int) {
        writtenQueueRevision = queueRevision
    }

    /// Something the session holds may have changed: save at the end of this turn.
    mutating func changed() -> [Action] {
        switch phase {
        case .idle:
            phase = .scheduled
        case .writing(false):
            phase = .writing(scheduled: true)
            changedSinceWrite = true
        case .writing(true):
            changedSinceWrite = true
            return []
        case .scheduled, .closed:
            return []
        }
        return [.scheduleTurn]
    }

    /// The turn a save was asked in has ended: save what the player shows (nil while it is
    /// not to be saved: before the session is restored, or while media is being queued).
    mutating func turnEnded(_ snapshot: Snapshot?) -> [Action] {
        switch phase {
        case .scheduled: phase = .idle
        case .writing(true): phase = .writing(scheduled: false)
        case .idle, .writing(false), .closed: break
        }
        return save(snapshot)
    }

    /// Saves what the player shows now, when it differs from what was written last; during a
    /// write, once it finishes.
    mutating func save(_ snapshot: Snapshot?) -> [Action] {
        guard phase != .closed, let snapshot else { return [] }
        latest = snapshot
        switch phase {
        case .idle, .scheduled:
            let due = takeDue(snapshot)
            guard !due.isEmpty else { return [] }
            phase = .writing(scheduled: phase == .scheduled)
            changedSinceWrite = false
            return [.write(due)]
        case .writing:
            changedSinceWrite = true
            return []
        case .closed:
            return []
        }
    }

    /// The write under way ended as `outcome`; `snapshot` is what the player shows now (nil
    /// while it shows none). Written, what changed meanwhile is written now. Failed,
    /// everything is due at the next change. After closing, only the report is left to make.
    mutating func writeFinished(_ outcome: Outcome, _ snapshot: Snapshot?) -> [Action] {
        var actions: [Action] = []
        switch outcome {
        case .written:
            if failing {
                failing = false
                actions.append(.reportRecovery)
            }
        case .failed(let reason):
            forgetWritten()
            if !failing {
                failing = true
                actions.append(.reportFailure(reason))
            }
        case .refused:
            forgetWritten()
        }
        guard case .writing(let scheduled) = phase else { return actions }
        if let snapshot { latest = snapshot }
        let otherQueue = snapshot.map { $0.queueRevision != writtenQueueRevision } ?? false
        let due = outcome == .written && (changedSinceWrite || otherQueue) ? takeDue(snapshot) : Due()
        guard !due.isEmpty else {
            phase = scheduled ? .scheduled : .idle
            return actions
        }
        changedSinceWrite = false
        return actions + [.write(due)]
    }

    /// The daemon stops: what the player shows now, if it differs from what was written, is
    /// written after the write under way, and nothing after that.
    mutating func close(_ snapshot: Snapshot?) -> [Action] {
        var due = Due()
        if phase != .closed {
            if let snapshot { latest = snapshot }
            due = takeDue(snapshot)
        }
        phase = .closed
        return [.writeLast(due)]
    }

    /// The daemon ends without saving (another process owns the name, or the bus is gone):
    /// nothing more is written.
    mutating func abandon() {
        phase = .closed
    }

    /// What is not written of `snapshot` (the player's now), or of the latest snapshot when
    /// the player shows none; now counted as written.
    private mutating func takeDue(_ snapshot: Snapshot?) -> Due {
        guard let snapshot else {
            // An earlier snapshot's queue is not the player's now: its state goes alone, and
            // only while it names the queue already written.
            guard let latest, latest.queueRevision == writtenQueueRevision, latest.state != writtenState else {
                return Due()
            }
            writtenState = latest.state
            return Due(state: latest.state)
        }
        let queue = snapshot.queueRevision != writtenQueueRevision
        guard queue || snapshot.state != writtenState else { return Due() }
        writtenQueueRevision = snapshot.queueRevision
        writtenState = snapshot.state
        return Due(queue: queue, state: snapshot.state)
    }

    /// A write failed: the disk holds an older save, so nothing counts as written.
    private mutating func forgetWritten() {
        writtenQueueRevision = nil
        writtenState = nil
    }
}
