import Media
import PlaybackEngine
import PlaybackVocabulary

/// A listener's commands (MPRIS methods, media keys, the daemon's start) as inputs of the
/// player's state: each decides what is selected and shown, and which ``Action``s the
/// ``Player`` carries out. What a command needs to know of the engine comes in the
/// ``EngineView``; what it needs of the moment (where playback is, whether the audio
/// waits) comes in the command itself.
extension PlayerState {
    /// A command, with what the player knew when it came.
    enum Command: Equatable {
        /// Play or resume the selected entry (else the first one in play order).
        case play
        /// Load an entry paused at `position`: the one at `index`, else the selected one,
        /// else the first one (the `--paused` start, a restored session).
        case preroll(index: Int?, at: Duration?)
        /// Play the entry at `index` from `position` (a restored session told to play).
        case playEntry(index: Int, at: Duration?)
        /// Pause what plays or is about to.
        case pause
        /// Pause when playing or about to, else play. `waitingForAudio`: the audio stands
        /// (shown as paused), so the toggle goes on playing.
        case togglePlayPause(waitingForAudio: Bool)
        /// Stop: nothing stays loaded.
        case stop
        /// The next entry in play order.
        case next
        /// The previous entry, or the selected one from its start when `position` (where the
        /// commands received so far leave it) is more than 3 s in.
        case previous(position: Duration)
        /// The entry with this id, keeping the play, pause or stop state.
        case goTo(UInt64)
        /// Seek within the selected entry.
        case seek(to: Duration)
        /// Play the entry with this id, just queued after the selected one (MPRIS
        /// `OpenUri`): Previous comes back to the entry it leaves.
        case playAdded(UInt64)
    }

    /// How far in Previous restarts the selected entry rather than going back a track.
    static let previousRestartsAfter = Duration.seconds(3)

    /// The listener's `command`: marks that someone acted (the end of an interruption no
    /// longer resumes playback), then decides. A command with nothing to act on returns
    /// ``Action/refused``.
    mutating func command(_ command: Command, _ engine: EngineView) -> [Action] {
        switch command {
        case .play:
            userActed()
            return play(engine)
        case .preroll(let index, let position):
            userActed()
            guard let index = index.flatMap({ queue.indices.contains($0) ? $0 : nil }) ?? selection.index ?? first()
            else { return [.refused] }
            return load(index, at: position, intent: .paused)
        case .playEntry(let index, let position):
            userActed()
            guard queue.indices.contains(index) else { return [.refused] }
            return load(index, at: position, intent: .playing)
        case .pause:
            userActed()
            return pausing(engine)
        case .togglePlayPause(let waiting):
            return requested(engine) == .playing && !waiting
                ? self.command(.pause, engine) : self.command(.play, engine)
        case .stop:
            userActed()
            stopped()
            return [.stop]
        case .next:
            userActed()
            guard let index = selection.index,
                let target = selection.neighbour(of: index, in: queue, forward: true, automatic: false),
                target != index
            else { return [] }
            return go(to: target, forward: true, engine)
        case .previous(let position):
            userActed()
            let active = requested(engine) != .stopped
            if active, position > Self.previousRestartsAfter { return seek(to: .zero, engine) }
            guard let index = selection.index,
                let target = selection.neighbour(of: index, in: queue, forward: false, automatic: false),
                target != index
            else { return active ? seek(to: .zero, engine) : [] }
            return go(to: target, forward: false, engine)
        case .goTo(let id):
            userActed()
            guard let index = queue.index(of: id) else { return [.refused] }
            return go(to: index, forward: true, engine)
        case .seek(let target):
            return seek(to: target, engine)
        case .playAdded(let id):
            userActed()
            guard let index = queue.index(of: id) else { return [.refused] }
            if let selected = selectedID { selection.recordMove(from: selected, to: id, forward: true) }
            return load(index, at: nil, intent: .playing)
        }
    }

    /// Pauses what plays or is about to, the listener's command or the sound server's: a
    /// load waiting for tags loads paused.
    mutating func pausing(_ engine: EngineView) -> [Action] {
        readingPaused()
        guard engine.intent == .playing || engine.status == .playing else { return [] }
        return [.pause]
    }

    // MARK: - Helpers

    /// The first entry in play order.
    private mutating func first() -> Int? { selection.first(in: queue) }

    private mutating func play(_ engine: EngineView) -> [Action] {
        guard let index = selection.index ?? first() else { return [.refused] }
        selection.index = index
        let id = queue[index].id
        if isReading(id) {
            readingPlays()
            return []
        }
        // The entry the engine holds or is loading resumes where it is.
        return engine.upcomingEntry == id ? [.resume] : load(index, at: nil, intent: .playing)
    }

    /// Selects the entry at `index` and loads it toward `intent`.
    private mutating func load(_ index: Int, at position: Duration?, intent: PlaybackStatus) -> [Action] {
        selection.index = index
        return [.load(at: position, intent: intent)]
    }

    /// Moves the selection to `index` (in the direction of travel `forward`) keeping where
    /// the commands lead: a stopped player shows it (once read), any other loads it.
    private mutating func go(to index: Int, forward: Bool, _ engine: EngineView) -> [Action] {
        let intent = requested(engine)
        selection.move(from: selectedID, to: index, in: queue, forward: forward)
        guard intent != .stopped else {
            abandonReading()
            show(queue[index])
            return [.readSelected, .announce(.transport)]
        }
        return [.load(at: nil, intent: intent)]
    }

    /// Seeks within the selected entry, or moves the start of a load waiting for its tags.
    /// Refused when nothing of the selected entry is loaded or on its way.
    private mutating func seek(to position: Duration, _ engine: EngineView) -> [Action] {
        let target = max(position, .zero)
        if reading != nil {
            readingSeeks(to: target)  // loads there once its tags are in
            return []
        }
        guard requested(engine) != .stopped || engine.hasLoad, engine.upcomingEntry == selectedID else {
            return [.refused]
        }
        return [.seek(to: target)]
    }
}
