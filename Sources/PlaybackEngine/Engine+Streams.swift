import FoundationEssentials
package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

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

    /// Buffering of a network stream (see ``EngineState/streamBuffering(_:playing:)``).
    func streamBuffering(_ percent: Int) {
        guard let (stream, step, actions) = state.streamBuffering(percent, playing: transport.intent == .playing)
        else { return }
        switch step {
        case .arm: armStreamWatch(for: stream.entry)
        case .disarm: disarmStreamWatch()
        case .keep: break
        }
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
        guard let stream = state.loadedStream else { return }
        var tags = tags
        let picture = tags.takePicture()
        state.streamTags.merge(tags)
        report(.streamTagsChanged(stream.entry, picture: picture))
    }

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    func handedOverTaken() {
        guard let next = pipeline.handoff.committedItem, !MediaSources.isLocal(next.uri) else { return }
        armStreamWatch(for: next.entryID)
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
        guard let wait = state.streamWatch.wait else { return }
        let id = wait.entry
        let bytes = pipeline.bytesFromSources
        streamTimer.cancel()
        let place: StreamWatch.Place
        if state.entries[id] == nil {
            place = .elsewhere  // no longer queued
        } else if transport.loadedEntry == id {
            place = .loaded(isSettled: state.isSettled(id))
        } else if pipeline.handoff.committedEntryID == id, let playing = transport.loadedEntry {
            let end = state.entries[playing]?.length.map { $0 - .milliseconds(500) }
            place = .handedOver(previousPlays: end.map { clock.position() < $0 } ?? false)
        } else {
            place = .elsewhere
        }
        let playing = transport.intent == .playing
        let (verdict, actions) = state.streamStalled(wait, at: place, playing: playing, bytes: bytes, now: .now)
        switch verdict {
        case .leave:
            break
        case .waitAgain(let since):
            armStreamWatch(for: id, since: since)
        case .stalled(let reason):
            run(actions)
            // The track before it has ended: the stream is what the queue is at, and is
            // skipped from there (or stays current, when nothing follows it).
            if case .loaded = place { return }
            report(.handOverStalled(id, reason: reason))
        }
    }
}
