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
///   does with an IFF picture named `.aiff`), or a race in a demuxer as playbin links it
///   (plugins-bad's aiffparse in GStreamer 1.22 can push before its pad is linked and stop
///   there): the file is loaded once more from NULL, with ``limit``, and skipped with the
///   reason when that decodes nothing either, and the queue goes on. With decoded audio
///   waiting, it is an output that takes none (a sound server that stopped taking it): the
///   file is loaded once more from NULL, and then the output counts as failed: the player
///   pauses there and says so, and Play tries again. A slow output (seconds per buffer)
///   stays well within the limit.
/// A network stream is not timed here: it has its ``StreamWatch``.
struct PrerollWatch: Sendable, Equatable {
    enum Stage: Sendable, Equatable {
        case off
        /// The next load is the current track's, again, after the stream handed over failed.
        case reloadAfterHandOver
        /// The load of `entry` is timed; `retried`: it was loaded again already for not
        /// prerolling in time; `afterHandOver`: the first case above.
        case watching(entry: UInt64, retried: Bool, afterHandOver: Bool)
        /// The load of `entry` decoded nothing within ``outputLimit``; its next load is the
        /// last try, timed with ``limit``.
        case retryingUndecoded(entry: UInt64)
        /// That last try is under way.
        case watchingUndecoded(entry: UInt64)
    }

    /// What a preroll that took too long leads to.
    enum Decision: Sendable, Equatable {
        /// Load the entry again, from NULL, and time it once more.
        case retry
        /// Skip the entry: it cannot be played after the failed hand-over.
        case skip
        /// Load the entry again, from NULL, once: no decoder made audio of it yet.
        case retryUndecoded
        /// Skip the entry: no decoder made audio of it, in two loads.
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
        case .retryingUndecoded(let watched) where watched == entry:
            stage = .watchingUndecoded(entry: entry)
            return Self.limit
        case .off, .watching, .retryingUndecoded, .watchingUndecoded:
            stage = isLocal ? .watching(entry: entry, retried: false, afterHandOver: false) : .off
        }
        guard case .watching(_, _, let afterHandOver) = stage else { return nil }
        return afterHandOver ? Self.limit : Self.outputLimit
    }

    /// The load of `entry` stopped as playbin linked it, before it prerolled (see
    /// ``PipelineError/stoppedUnlinked``). Returns whether it is loaded once more: the first
    /// time, as for a file that decoded nothing, and that last try is timed with ``limit``.
    mutating func stoppedUnlinked(_ entry: UInt64) -> Bool {
        guard case .watching(entry, retried: false, afterHandOver: false) = stage else { return false }
        stage = .retryingUndecoded(entry: entry)
        return true
    }

    /// The load prerolled (or a seek completed): nothing is timed any more.
    mutating func prerolled() {
        switch stage {
        case .watching, .retryingUndecoded, .watchingUndecoded: stage = .off
        case .off, .reloadAfterHandOver: break
        }
    }

    /// The limit passed while the timed load still prerolls; `decodedAudio`: some of its
    /// decoded audio reached the output.
    mutating func timedOut(decodedAudio: Bool) -> Decision? {
        if case .watchingUndecoded(let entry) = stage {
            // Audio decoded at last: the file plays, and its output has the usual limit.
            guard decodedAudio else {
                stage = .off
                return .undecodable
            }
            stage = .watching(entry: entry, retried: true, afterHandOver: false)
            return .retry
        }
        guard case .watching(let entry, let retried, let afterHandOver) = stage else { return nil }
        // After a failed hand-over nothing is decoded either: playbin itself is stuck, and a
        // load from NULL mends it.
        if !afterHandOver, !decodedAudio {
            guard retried else {
                stage = .retryingUndecoded(entry: entry)
                return .retryUndecoded
            }
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
