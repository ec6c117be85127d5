import CSystem
import Dispatch
import Logging
import Playback

/// The saved session: the queue and the playback state, written off the main queue.
extension Daemon {
    /// Saves the queue (when it changed) and the playback state (when it changed), off the
    /// main queue. Called at the moments that change them: never on a timer; not while media
    /// is still being queued (once it is all in). While a save is being written, further
    /// changes only mark what is due; the newest queue and state are written, in that
    /// order, as soon as it is done (a burst of 2,000 AddTrack calls is a few writes).
    func saveState() {
        guard connection != nil, loadsInProgress == 0 else { return }  // not before the session is restored
        if player.queueRevision != savedQueueRevision {
            savedQueueRevision = player.queueRevision
            queueSaveDue = true
        }
        let position = player.status == .stopped ? .zero : (player.position ?? .zero)
        let state = SavedState(
            queueCount: player.count, current: player.currentIndex,
            position: position.microseconds, volume: player.volume, rate: player.rate,
            loop: player.repeatMode.rawValue, shuffle: player.shuffle)
        if state != savedState {
            savedState = state
            stateSaveDue = state
        }
        writeDueSaves()
    }

    private func writeDueSaves() {
        guard !isWritingSave, queueSaveDue || stateSaveDue != nil else { return }
        isWritingSave = true
        let queue = queueSaveDue ? player.entries : nil
        let state = stateSaveDue
        queueSaveDue = false
        stateSaveDue = nil
        let store = self.store
        let logger = self.logger
        saveQueue.async {
            Self.write(queue: queue, state: state, store: store, logger: logger)
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    self?.isWritingSave = false
                    self?.writeDueSaves()
                }
            }
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

    /// Writes what is still due, waiting for a write under way first (before exit).
    func finishSaving() {
        saveQueue.sync {}
        if queueSaveDue || stateSaveDue != nil {
            Self.write(queue: queueSaveDue ? player.entries : nil, state: stateSaveDue, store: store, logger: logger)
            queueSaveDue = false
            stateSaveDue = nil
        }
    }
}
