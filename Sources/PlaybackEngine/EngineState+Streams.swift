import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The network streams' decisions: whether a buffering level pauses the stream and moves
/// its watch, the tags heard in it, and what a stall limit that passed leads to (see
/// ``StreamWatch``).
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

    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    /// Its tags start afresh; a loaded network stream is watched from its load on, and a
    /// handed-over one was watched since playbin took it.
    mutating func streamBegan(_ id: UInt64, isStream: Bool, handedOver: Bool) -> [Action] {
        streamTags = StreamTags()
        streamWatch.streamBegan()
        return isStream && !handedOver ? [.armStreamWatch(id, since: nil)] : disarmStreamWatch()
    }

    /// (Re)arms the watch over the stream `id`, the sources having sent `bytes` by `now`
    /// (see ``StreamWatch/arm(_:bytes:now:since:)``), and starts its countdown.
    mutating func armStreamWatch(_ id: UInt64, bytes: UInt64, now: Instant, since: Instant?) -> [Action] {
        streamWatch.arm(id, bytes: bytes, now: now, since: since)
        return [.startStreamTimer(after: streamWatch.stallLimit)]
    }

    /// No stream is waited for.
    mutating func disarmStreamWatch() -> [Action] {
        streamWatch.disarm()
        return [.stopStreamTimer]
    }

    /// A buffering level of `percent`. Only the loaded network stream that should play
    /// pauses while its buffer fills (not a file, nor the stream that follows it before it
    /// starts: playing on is right then), and its watch follows the level. Nothing happens
    /// for any other.
    mutating func streamBuffering(_ percent: Int) -> [Action] {
        guard transport.intent == .playing, let stream = loadedStream else { return [] }
        let watch: [Action] =
            switch streamWatch.buffering(percent, isSettled: isSettled(stream.entry)) {
            case .arm: [.armStreamWatch(stream.entry, since: nil)]
            case .disarm: disarmStreamWatch()
            case .keep: []
            }
        let actions = transport.buffering(percent: percent)
        guard !actions.isEmpty else { return watch + Self.moved(actions) }
        let name = Self.name(of: stream)
        let note =
            percent < 100 ? "buffering \(name) (\(percent)%); paused until it is full" : "buffered \(name); playing on"
        return watch + [.log(.debug, note)] + Self.moved(actions)
    }

    /// Tags of what is heard now: a stream's title and the like (a file's tags were read
    /// before it played: one Metadata per file). Only the loaded network stream's are kept.
    mutating func streamTagsArrived(_ tags: StreamTags) -> [Action] {
        guard let stream = loadedStream else { return [] }
        var tags = tags
        let picture = tags.takePicture()
        streamTags.merge(tags)
        return [.report(.streamTagsChanged(stream.entry, picture: picture))]
    }

    /// playbin took `next` to follow the current track: a network stream has until the
    /// stall limit to start once this track ends.
    func nextTaken(_ next: GaplessHandoff.Item?) -> [Action] {
        guard let next, !MediaSources.isLocal(next.uri) else { return [] }
        return [.armStreamWatch(next.entryID, since: nil)]
    }

    /// Where the stream `id` is at `now`, its stall limit having passed; `handedOver`: the
    /// entry playbin holds next.
    func place(of id: UInt64, handedOver: UInt64?, now: Instant) -> StreamWatch.Place {
        if entries[id] == nil { return .elsewhere }  // no longer queued
        if transport.loadedEntry == id { return .loaded(isSettled: isSettled(id)) }
        guard handedOver == id, let playing = transport.loadedEntry else { return .elsewhere }
        let end = entries[playing]?.length.map { $0 - .milliseconds(500) }
        return .handedOver(previousPlays: end.map { clock.position(at: now) < $0 } ?? false)
    }

    /// The stall limit of `wait` passed at `now`, the stream being at `place`, the sources
    /// having sent `bytes`. The wait ends. A stream that sent is waited for again; one that
    /// stalled is skipped rather than shown Playing, or stuck loading, for ever: a loaded
    /// one is taken down (its source may still wait on the socket), a handed-over one is
    /// the owner's to skip (the track before it has ended: the stream is what the queue is
    /// at), and the next teardown goes to NULL.
    mutating func streamStalled(_ wait: StreamWatch.Wait, at place: StreamWatch.Place, bytes: UInt64, now: Instant)
        -> [Action]
    {
        let playing = transport.intent == .playing
        let stop = disarmStreamWatch()
        switch streamWatch.verdict(on: wait, at: place, playing: playing, bytes: bytes, now: now) {
        case .leave:
            return stop
        case .waitAgain(let since):
            return stop + [.armStreamWatch(wait.entry, since: since)]
        case .stalled(let reason):
            if case .loaded = place {
                return stop
                    + Self.moved(transport.failed(reason: reason, inOutput: false, position: clock.position(at: now)))
            }
            return stop + Self.moved(transport.failedElsewhere()) + [
                .report(.handOverStalled(wait.entry, reason: reason))
            ]
        }
    }
}
