import CLibcShims
import Dispatch
import Logging
import Media
import PlaybackEngine
import PlaybackPlayer

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
/// main queue, as ``SessionSave`` decides: the main actor never waits for the disk.
@MainActor
final class SessionSaver {
    private var save = SessionSave()
    private let store: StateStore
    private let logger: Logger
    /// Writes the session in order, off the main queue.
    private let writer = DispatchQueue(label: "quaver.state", qos: .utility)
    /// The player, through the daemon that owns this saver.
    weak var source: (any SessionSource)?

    /// A saver that writes through `store`.
    init(store: StateStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Where the saving is (for the log and the tests).
    var phase: SessionSave.Phase { save.phase }

    /// The queue was restored from disk at this revision: it is not written again unchanged.
    func restored(queueRevision: Int) {
        save.restored(queueRevision: queueRevision)
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
                write(due) { [weak self] in
                    guard let self else { return }
                    run(save.writeFinished())
                }
            case .writeLast(let due):
                write(due) { closed?() }
            }
        }
    }

    private func turnEnded() {
        run(save.turnEnded(source?.sessionSnapshot()))
    }

    /// Writes `due` on the writer queue (after what is on it), then calls `finished` on the
    /// main actor.
    private func write(_ due: SessionSave.Due, finished: @escaping @MainActor @Sendable () -> Void) {
        let queue = due.queue ? source?.sessionQueue() : nil
        let state = due.state
        let store = self.store
        let logger = self.logger
        writer.async {
            Self.write(queue: queue, state: state, store: store, logger: logger)
            DispatchQueue.main.async { MainActor.assumeIsolated { finished() } }
        }
    }

    nonisolated private static func write(queue: [Player.Entry]?, state: SavedState?, store: StateStore, logger: Logger)
    {
        do {
            if let queue { try store.saveQueue(queue.map(\.uri)) }
            if let state { try store.save(state) }
        } catch {
            logger.warning("could not save the session (playback goes on): \(error)")
        }
        // Writing a long queue builds its text in memory: the pages it freed go back to the
        // system, or a daemon that runs all day keeps them.
        if let queue, queue.count >= 10_000 { csystem_trim_heap() }
    }
}
