import FoundationEssentials

/// What the engine asks of the player, and tells it: the queue-level side of gapless
/// switches, failures and interruptions.
extension Player: EngineOwner {
    /// playbin switched gaplessly to the handed-over entry: it becomes the selected one.
    func switches(from previous: UInt64?, to next: UInt64) -> Bool {
        guard let index = queue.index(of: next) else { return false }
        logger.debug("gapless switch to \(MediaSources.displayName(queue[index].uri))")
        if let previous {
            reportEndIfStream(previous)
            selection.recordMove(from: previous, to: next, forward: true)
        }
        selectedIndex = index
        return true
    }

    /// The URI handed over for gapless playback failed while the current one was still
    /// playing: it is marked unplayable, unless it is a file whose tags were read (then the
    /// error is the loaded stream's).
    func handedOverFailed(_ id: UInt64, reason: String) -> Bool {
        guard let index = queue.index(of: id), queue[index].info == nil || !isLocal(queue[index].uri) else { return false }
        recordFailure(reason, at: index)
        return true
    }

    /// The stream handed over stalled after the track before it ended: the queue is at that
    /// stream, and it is skipped from there (or stays current, when nothing follows it).
    func handedOverStalled(_ id: UInt64, reason: String) {
        guard let index = queue.index(of: id) else { return }
        selection.move(from: transport.loadedEntry, to: index, in: queue, forward: true)
        skip(id, reason: reason, intent: requestedStatus)
    }

    func engineChanged(_ change: Change) {
        onChange?(change)
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    func stateRequested(_ state: Pipeline.State) {
        switch interruption.response(to: state, requested: requestedStatus) {
        case .pause:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            pause()
            interruption.interrupted()
        case .resume:
            logger.info("the interruption is over; playing again")
            play()
        case .nothing:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }
}
