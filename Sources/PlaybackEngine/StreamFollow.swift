import FoundationEssentials
import Logging

/// The engine's network streams: their buffering, the tags heard in them, and the watch
/// (``StreamWatch``) that skips a stream sending nothing.
///
/// A part of the ``Engine``, which it acts through: buffering levels go to the transport,
/// a stall fails the loaded stream or tells the owner of a handed-over one.
@MainActor
package final class StreamFollow {
    /// The tags heard in the loaded stream so far.
    package var tags = StreamTags()
    /// When a stream counts as stalled, and the wait in progress.
    package var watch = StreamWatch()
    private let timer = Countdown()
    private unowned let engine: Engine

    init(engine: Engine) {
        self.engine = engine
    }

    private var transport: Transport { engine.transport }
    private var logger: Logger { engine.logger }

    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    /// A loaded network stream is watched from its load on; a handed-over one was watched
    /// since playbin took it.
    func began(_ id: UInt64, isStream: Bool, handedOver: Bool) {
        tags = StreamTags()
        watch.streamBegan()
        if isStream && !handedOver { arm(for: id) } else { disarm() }
    }

    /// The loaded network stream, if the loaded entry is one.
    private var loadedStream: Transport.Load? {
        guard let load = transport.loaded, transport.loadedEntry != nil, !MediaSources.isLocal(load.uri) else {
            return nil
        }
        return load
    }

    /// The loaded stream has settled (Playing or Paused) and is the one shown.
    private func isSettled(_ id: UInt64) -> Bool {
        transport.settledEntry == id && transport.status != .stopped
    }

    /// Buffering of a network stream: only a stream pauses while its buffer fills (not a
    /// file, nor the stream that follows it before it starts: playing on is right then).
    func buffering(_ percent: Int) {
        guard engine.owner?.requestedStatus == .playing, let stream = loadedStream else { return }
        switch watch.buffering(percent, isSettled: isSettled(stream.entry)) {
        case .arm: arm(for: stream.entry)
        case .disarm: disarm()
        case .keep: break
        }
        let actions = engine.decide { $0.buffering(percent: percent) }
        if !actions.isEmpty {
            let name = engine.name(of: stream)
            logger.debug(
                percent < 100
                    ? "buffering \(name) (\(percent)%); paused until it is full" : "buffered \(name); playing on")
        }
        engine.run(actions)
    }

    /// Tags of what is heard now: a stream's title and the like (a file's tags were read
    /// before it played: one Metadata per file).
    func tagsArrived(_ tags: StreamTags) {
        guard let stream = loadedStream else { return }
        var tags = tags
        let picture = tags.takePicture()
        self.tags.merge(tags)
        engine.owner?.streamTagsChanged(stream.entry, picture: picture)
    }

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    func handedOverTaken() {
        guard let id = engine.pipeline.handoff.committedEntryID, let next = engine.owner?.entry(id: id),
            !MediaSources.isLocal(next.uri)
        else { return }
        arm(for: id)
    }

    /// (Re)starts the countdown after which the stream `id` counts as stalled (see
    /// ``StreamWatch/arm(_:bytes:now:since:)``).
    func arm(for id: UInt64, since began: ContinuousClock.Instant? = nil) {
        watch.arm(id, bytes: engine.pipeline.bytesFromSources, now: .now, since: began)
        timer.start(after: watch.stallLimit, leeway: .milliseconds(100)) { [weak self] in self?.stalled() }
    }

    func disarm() {
        timer.cancel()
        watch.disarm()
    }

    /// The stall limit passed: the stream is skipped (one log line naming it and why) rather
    /// than shown Playing, or stuck loading, for ever, unless the watch says to wait again.
    private func stalled() {
        guard let wait = watch.wait, let owner = engine.owner else { return }
        let id = wait.entry
        let bytes = engine.pipeline.bytesFromSources
        disarm()
        let place: StreamWatch.Place
        if owner.entry(id: id) == nil {
            place = .elsewhere
        } else if transport.loadedEntry == id {
            place = .loaded(isSettled: isSettled(id))
        } else if engine.pipeline.handoff.committedEntryID == id,
            let playing = transport.loadedEntry.flatMap({ owner.entry(id: $0) })
        {
            let end = playing.info?.duration.map { $0 - .milliseconds(500) }
            place = .handedOver(previousPlays: end.map { engine.clock.position() < $0 } ?? false)
        } else {
            place = .elsewhere
        }
        let playing = owner.requestedStatus == .playing
        switch watch.verdict(on: wait, at: place, playing: playing, bytes: bytes, now: .now) {
        case .leave:
            break
        case .waitAgain(let since):
            arm(for: id, since: since)
        case .stalled(let reason):
            if case .loaded = place {
                // Its source may still wait on the socket: the transport takes it all down.
                let position = engine.clock.position()
                engine.run(engine.decide { $0.failed(reason: reason, inOutput: false, position: position) })
                return
            }
            // The track before it has ended: the stream is what the queue is at, and is
            // skipped from there (or stays current, when nothing follows it).
            engine.noteFailure()
            owner.handedOverStalled(id, reason: reason)
        }
    }
}
