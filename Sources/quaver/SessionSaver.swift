import CLibcShims
import Dispatch
import Logging
import Media
import PlaybackEngine
import PlaybackPlayer
import PlaybackVocabulary

/// What the saved session is read from: the player, through the daemon.
@MainActor
protocol SessionSource: AnyObject {
    /// What the player shows now; nil while it is not to be saved (before the session is
    /// restored, or while media is being queued: it is saved once it is all in).
    func sessionSnapshot() -> SessionSave.Snapshot?
    /// The queue as it is now, to write.
    func sessionQueue() -> [Player.Entry]
}

/// Writes the saved session (the queue and the playback state, see ``StateStore``) off the
/// main queue, as ``SessionSave`` decides and ``SessionCommit`` plans: the main actor never
/// waits for the disk, and the disk never holds half a save.
@MainActor
final class SessionSaver {
    private var save = SessionSave()
    private let store: StateStore
    private let logger: Logger
    /// Writes the session in order, off the main queue.
    private let writer = DispatchQueue(label: "quaver.state", qos: .utility)
    /// What the writer knows of the folder: used on the writer queue alone (the lock is
    /// what lets the main actor hand it over at start).
    private let disk = Locked(SessionCommit())
    /// The player, through the daemon that owns this saver.
    weak var source: (any SessionSource)?

    /// A saver that writes through `store`.
    init(store: StateStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Where the saving is (for the log and the tests).
    var phase: SessionSave.Phase { save.phase }

    /// Reads what the folder holds at start (see ``StateStore/start(restoring:)``) on the
    /// writer queue, and hands it to `found` on the main actor.
    func read(restoring: Bool, found: @escaping @MainActor @Sendable (StateStore.Found) -> Void) {
        let store = self.store
        writer.async {
            let read = store.start(restoring: restoring)
            DispatchQueue.main.async { MainActor.assumeIsolated { found(read) } }
        }
    }

    /// What the folder holds at start, before anything is written: `newest` is its highest
    /// queue generation, and `restored` the generation whose file the player's queue was
    /// restored from as it is, at `queueRevision` (it is not written again unchanged).
    func found(newest: Int, restored: (generation: Int, queueRevision: Int)? = nil) {
        if let restored { save.restored(queueRevision: restored.queueRevision) }
        let commit = SessionCommit(committed: restored?.generation, newest: newest)
        let disk = self.disk
        writer.async { disk.withLock { $0 = commit } }
    }

    /// Saves the session after this turn of the main queue, so that the PropertiesChanged
    /// and Seeked signals the change caused (queued the same way, earlier) go out before
    /// the file is written and synced: clients are not kept waiting on the disk.
    func setNeedsSave() {
        run(save.changed())
    }

    /// Saves what changed now (a load is all in).
    func saveNow() {
        run(save.save(source?.sessionSnapshot()))
    }

    /// Writes what is still due, after the write under way, and calls `done` on the main
    /// actor once it is on disk; nothing is written after it.
    func close(then done: @escaping @MainActor @Sendable () -> Void) {
        run(save.close(source?.sessionSnapshot()), closed: done)
    }

    /// Writes nothing more (the daemon ends without saving); a write under way finishes.
    func abandon() {
        save.abandon()
    }

    private func run(_ actions: [SessionSave.Action], closed: (@MainActor @Sendable () -> Void)? = nil) {
        for action in actions {
            switch action {
            case .scheduleTurn:
                DispatchQueue.main.async { [weak self] in
                    MainActor.assumeIsolated { self?.turnEnded() }
                }
            case .write(let due):
                write(due) { [weak self] outcome in
                    guard let self else { return }
                    run(save.writeFinished(outcome, source?.sessionSnapshot()))
                }
            case .writeLast(let due):
                write(due) { [weak self] outcome in
                    // Closed: only the report of how it went is left.
                    if let self { run(save.writeFinished(outcome, nil)) }
                    closed?()
                }
            case .reportFailure(let reason):
                logger.warning(
                    "could not save the session: \(reason); the last whole save stays on disk and playback goes on (each change tries again; this is said once until a save succeeds)"
                )
            case .reportRecovery:
                logger.notice("the session is saved again")
            }
        }
    }

    private func turnEnded() {
        run(save.turnEnded(source?.sessionSnapshot()))
    }

    /// Writes `due` on the writer queue (after what is on it), then calls `finished` on the
    /// main actor with how it went.
    private func write(
        _ due: SessionSave.Due, finished: @escaping @MainActor @Sendable (SessionSave.Outcome) -> Void
    ) {
        // The queue is read in the turn the state was taken in: they describe one queue.
        let queue = due.queue ? source?.sessionQueue() : nil
        let state = due.state
        let store = self.store
        let disk = self.disk
        writer.async {
            let outcome = Self.write(queue: queue, state: state, store: store, disk: disk)
            DispatchQueue.main.async { MainActor.assumeIsolated { finished(outcome) } }
        }
    }

    nonisolated private static func write(
        queue: [Player.Entry]?, state: SavedState?, store: StateStore, disk: Locked<SessionCommit>
    ) -> SessionSave.Outcome {
        guard let state else { return .written }  // nothing was due (a last write with nothing new)
        let outcome = disk.withLock { store.save(state, queue: queue?.map(\.uri), commit: &$0) }
        // Writing a long queue builds its text in memory: the pages it freed go back to the
        // system, or a daemon that runs all day keeps them.
        if let queue, queue.count >= 10_000 { csystem_trim_heap() }
        return outcome
    }
}
