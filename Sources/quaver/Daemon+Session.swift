import PlaybackPlayer

/// The saved session as the player shows it: what ``SessionSaver`` writes.
extension Daemon: SessionSource {
    func sessionSnapshot() -> SessionSave.Snapshot? {
        guard connection != nil, !loads.isLoading else { return nil }  // not before the session is restored
        let position = player.status == .stopped ? .zero : (player.position ?? .zero)
        let state = SavedState(
            queueCount: player.count, current: player.currentIndex,
            position: position.microseconds, volume: player.volume, rate: player.rate,
            loop: player.repeatMode.rawValue, shuffle: player.shuffle)
        return SessionSave.Snapshot(queueRevision: player.queueRevision, state: state)
    }

    func sessionQueue() -> [Player.Entry] { player.entries }
}
