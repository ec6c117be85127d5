import FoundationEssentials

/// The engine's network streams: their buffering, the tags heard in them, and the watch
/// (``StreamWatch``) that skips a stream sending nothing.
///
/// The tags and the watch are the engine's state (``EngineState``); the engine carries out
/// what they decide with its stream timer: buffering levels go to the transport, a stall
/// fails the loaded stream or tells the owner of a handed-over one.
extension Engine {
    /// The tags heard in the loaded stream so far.
    package var streamTags: StreamTags { state.streamTags }

    /// How long a network stream may send nothing before it is reported and skipped.
    package var stallLimit: Duration {
        get { state.streamWatch.stallLimit }
        set { state.streamWatch.stallLimit = newValue }
    }

    /// Keeps the artwork found in the loaded stream (its file's URL), shown with its tags.
    package func keepStreamArtwork(_ url: String) {
        state.streamTags.artworkURL = url
    }

    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    /// A loaded network stream is watched from its load on; a handed-over one was watched
    /// since playbin took it.
    func streamBegan(_ id: UInt64, isStream: Bool, handedOver: Bool) {
        state.streamTags = StreamTags()
        state.streamWatch.streamBegan()
        if isStream && !handedOver { armStreamWatch(for: id) } else { disarmStreamWatch() }
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
    func streamBuffering(_ percent: Int) {
        guard owner?.requestedStatus == .playing, let stream = loadedStream else { return }
        switch state.streamWatch.buffering(percent, isSettled: isSettled(stream.entry)) {
        case .arm: armStreamWatch(for: stream.entry)
        case .disarm: disarmStreamWatch()
        case .keep: break
        }
        let actions = state.transport.buffering(percent: percent)
        if !actions.isEmpty {
            let name = name(of: stream)
            logger.debug(
                percent < 100
                    ? "buffering \(name) (\(percent)%); paused until it is full" : "buffered \(name); playing on")
        }
        run(actions)
    }

    /// Tags of what is heard now: a stream's title and the like (a file's tags were read
    /// before it played: one Metadata per file).
    func streamTagsArrived(_ tags: StreamTags) {
        guard let stream = loadedStream else { return }
        var tags = tags
        let picture = tags.takePicture()
        state.streamTags.merge(tags)
        owner?.streamTagsChanged(stream.entry, picture: picture)
    }

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    func handedOverTaken() {
        guard let id = pipeline.handoff.committedEntryID, let next = owner?.entry(id: id),
            !MediaSources.isLocal(next.uri)
        else { return }
        armStreamWatch(for: id)
    }

    /// (Re)starts the countdown after which the stream `id` counts as stalled (see
    /// ``StreamWatch/arm(_:bytes:now:since:)``).
    func armStreamWatch(for id: UInt64, since began: ContinuousClock.Instant? = nil) {
        state.streamWatch.arm(id, bytes: pipeline.bytesFromSources, now: .now, since: began)
        streamTimer.start(after: state.streamWatch.stallLimit, leeway: .milliseconds(100)) { [weak self] in
            self?.streamStalled()
        }
    }

    func disarmStreamWatch() {
        streamTimer.cancel()
        state.streamWatch.disarm()
    }

    /// The stall limit passed: the stream is skipped (one log line naming it and why) rather
    /// than shown Playing, or stuck loading, for ever, unless the watch says to wait again.
    private func streamStalled() {
        guard let wait = state.streamWatch.wait, let owner else { return }
        let id = wait.entry
        let bytes = pipeline.bytesFromSources
        disarmStreamWatch()
        let place: StreamWatch.Place
        if owner.entry(id: id) == nil {
            place = .elsewhere
        } else if transport.loadedEntry == id {
            place = .loaded(isSettled: isSettled(id))
        } else if pipeline.handoff.committedEntryID == id,
            let playing = transport.loadedEntry.flatMap({ owner.entry(id: $0) })
        {
            let end = playing.info?.duration.map { $0 - .milliseconds(500) }
            place = .handedOver(previousPlays: end.map { clock.position() < $0 } ?? false)
        } else {
            place = .elsewhere
        }
        let playing = owner.requestedStatus == .playing
        switch state.streamWatch.verdict(on: wait, at: place, playing: playing, bytes: bytes, now: .now) {
        case .leave:
            break
        case .waitAgain(let since):
            armStreamWatch(for: id, since: since)
        case .stalled(let reason):
            if case .loaded = place {
                // Its source may still wait on the socket: the transport takes it all down.
                let position = clock.position()
                run(state.transport.failed(reason: reason, inOutput: false, position: position))
                return
            }
            // The track before it has ended: the stream is what the queue is at, and is
            // skipped from there (or stays current, when nothing follows it).
            run(state.transport.failedElsewhere())
            owner.handedOverStalled(id, reason: reason)
        }
    }
}
