/// Whether a load's preroll is timed, and what follows when it takes too long.
///
/// Pure; the owner's timer says when ``limit`` has passed. A track loaded again after the
/// stream handed over to follow it failed may never preroll (the failed stream's decoder
/// can leave playbin unable to): it is loaded once more from NULL, and skipped should that
/// not preroll in time either, never a load that hangs. A network stream is not timed
/// here: it has its ``StreamWatch``.
struct PrerollWatch: Sendable, Equatable {
    enum Stage: Sendable, Equatable {
        case off
        /// The next load is the current track's, again, after the stream handed over failed.
        case reloadAfterHandOver
        /// The load of `entry` is timed; `retried`: it was loaded again already for not
        /// prerolling in time.
        case watching(entry: UInt64, retried: Bool)
    }

    /// What a preroll that took too long leads to.
    enum Decision: Sendable, Equatable {
        /// Load the entry again, from NULL, and time it once more.
        case retry
        /// Skip the entry.
        case giveUp
    }

    /// How long a timed load may take to preroll.
    static let limit = Duration.seconds(4)

    private(set) var stage = Stage.off

    /// The stream handed over for a gapless switch failed: the reload of the current track
    /// that follows is timed.
    mutating func handOverFailed() {
        stage = .reloadAfterHandOver
    }

    /// A load of `entry` starts (`isLocal`: a file). Returns whether to time its preroll.
    mutating func loadStarted(_ entry: UInt64, isLocal: Bool) -> Bool {
        switch stage {
        case .off:
            return false
        case .reloadAfterHandOver:
            stage = isLocal ? .watching(entry: entry, retried: false) : .off
        case .watching(let watched, let retried):
            if !(watched == entry && retried) { stage = .off }
        }
        return stage != .off
    }

    /// The load prerolled (or a seek completed): nothing is timed any more.
    mutating func prerolled() {
        if case .watching = stage { stage = .off }
    }

    /// The limit passed while the timed load still prerolls.
    mutating func timedOut() -> Decision? {
        guard case .watching(let entry, let retried) = stage else { return nil }
        stage = retried ? .off : .watching(entry: entry, retried: true)
        return retried ? .giveUp : .retry
    }
}
