import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The network streams' decisions: whether a buffering level pauses the stream and moves
/// its watch, and what a stall limit that passed leads to (see ``StreamWatch``).
extension EngineState {
    /// The loaded network stream, if the loaded entry is one.
    var loadedStream: Transport.Load? {
        guard let load = transport.loaded, transport.loadedEntry != nil, !MediaSources.isLocal(load.uri) else {
            return nil
        }
        return load
    }

    /// The loaded stream has settled (Playing or Paused) and is the one shown.
    func isSettled(_ id: UInt64) -> Bool {
        transport.settledEntry == id && transport.status != .stopped
    }

    /// A buffering level of `percent`; `playing`: the commands lead to playing. Only the
    /// loaded network stream that should play pauses while its buffer fills (not a file, nor
    /// the stream that follows it before it starts: playing on is right then). Returns that
    /// stream, what its watch does and the transport's actions; nil when it is none of its
    /// business.
    mutating func streamBuffering(_ percent: Int, playing: Bool)
        -> (stream: Transport.Load, watch: StreamWatch.Step, actions: [Transport.Action])?
    {
        guard playing, let stream = loadedStream else { return nil }
        let step = streamWatch.buffering(percent, isSettled: isSettled(stream.entry))
        return (stream, step, transport.buffering(percent: percent))
    }

    /// The stall limit of `wait` passed at `now`, the stream being at `place`, the commands
    /// leading to playing (`playing`) or not, the sources having sent `bytes`. The wait ends;
    /// returns the watch's verdict and, for a loaded stream that stalled, the transport's
    /// actions to take it down (its source may still wait on the socket). A handed-over
    /// stream that stalled is the owner's to skip: the next teardown goes to NULL.
    mutating func streamStalled(
        _ wait: StreamWatch.Wait, at place: StreamWatch.Place, playing: Bool, bytes: UInt64, now: Instant
    ) -> (verdict: StreamWatch.Verdict, actions: [Transport.Action]) {
        streamWatch.disarm()
        let verdict = streamWatch.verdict(on: wait, at: place, playing: playing, bytes: bytes, now: now)
        guard case .stalled(let reason) = verdict else { return (verdict, []) }
        if case .loaded = place {
            return (verdict, transport.failed(reason: reason, inOutput: false, position: clock.position(at: now)))
        }
        return (verdict, transport.failedElsewhere())
    }
}
