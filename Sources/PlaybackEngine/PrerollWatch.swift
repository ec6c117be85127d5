import Media

/// How long a load's preroll may take, and what follows when it takes longer.
///
/// Pure; the owner's timer says when the limit ``loadStarted(_:isLocal:)`` returned has
/// passed. Two cases are timed:
/// - A track loaded again after the stream handed over to follow it failed may never preroll
///   (the failed stream's decoder can leave playbin unable to): it has ``limit``, is loaded
///   once more from NULL, and is skipped should that not preroll in time either.
/// - Any other local file has ``outputLimit``: a file that was read and decodes prerolls as
///   soon as the output takes its first buffer. A preroll that long with no decoded audio at
///   all is the file's fault (a demuxer that claims it and never makes a stream, as libav's
///   does with an IFF picture named `.aiff`): it is skipped with the reason, and the queue
///   goes on. With decoded audio waiting, it is an output that takes none (a sound server
///   that stopped taking it): the file is loaded once more from NULL, and then the output
///   counts as failed: the player pauses there and says so, and Play tries again. A slow
///   output (seconds per buffer) stays well within the limit.
/// A network stream is not timed here: it has its ``StreamWatch``.
struct PrerollWatch: Sendable, Equatable {
    enum Stage: Sendable, Equatable {
        case off
        /// The next load is the current track's, again, after the stream handed over failed.
        case reloadAfterHandOver
        /// The load of `entry` is timed; `retried`: it was loaded again already for not
        /// prerolling in time; `afterHandOver`: the first case above.
        case watching(entry: UInt64, retried: Bool, afterHandOver: Bool)
    }

    /// What a preroll that took too long leads to.
    enum Decision: Sendable, Equatable {
        /// Load the entry again, from NULL, and time it once more.
        case retry
        /// Skip the entry: it cannot be played after the failed hand-over.
        case skip
        /// Skip the entry: no decoder made audio of it.
        case undecodable
        /// The output takes no audio: pause there and say so.
        case outputFailed
    }

    /// How long the reload after a failed hand-over may take to preroll.
    static let limit = Duration.seconds(4)
    /// How long any other load of a local file may take to preroll.
    static let outputLimit = Duration.seconds(15)

    private(set) var stage = Stage.off

    /// The stream handed over for a gapless switch failed: the reload of the current track
    /// that follows is timed.
    mutating func handOverFailed() {
        stage = .reloadAfterHandOver
    }

    /// A load of `entry` starts (`isLocal`: a file). Returns how long its preroll may take,
    /// nil when it is not timed.
    mutating func loadStarted(_ entry: UInt64, isLocal: Bool) -> Duration? {
        switch stage {
        case .reloadAfterHandOver:
            stage = isLocal ? .watching(entry: entry, retried: false, afterHandOver: true) : .off
        case .watching(let watched, let retried, _) where watched == entry && retried:
            break  // the retry
        case .off, .watching:
            stage = isLocal ? .watching(entry: entry, retried: false, afterHandOver: false) : .off
        }
        guard case .watching(_, _, let afterHandOver) = stage else { return nil }
        return afterHandOver ? Self.limit : Self.outputLimit
    }

    /// The load prerolled (or a seek completed): nothing is timed any more.
    mutating func prerolled() {
        if case .watching = stage { stage = .off }
    }

    /// The limit passed while the timed load still prerolls; `decodedAudio`: some of its
    /// decoded audio reached the output.
    mutating func timedOut(decodedAudio: Bool) -> Decision? {
        guard case .watching(let entry, let retried, let afterHandOver) = stage else { return nil }
        // After a failed hand-over nothing is decoded either: playbin itself is stuck, and a
        // load from NULL mends it.
        if !afterHandOver, !decodedAudio {
            stage = .off
            return .undecodable
        }
        guard retried else {
            stage = .watching(entry: entry, retried: true, afterHandOver: afterHandOver)
            return .retry
        }
        stage = .off
        return afterHandOver ? .skip : .outputFailed
    }
}
