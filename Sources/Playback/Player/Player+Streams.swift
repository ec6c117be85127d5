import Dispatch
import FoundationEssentials

/// Network streams: their tags and pictures, their duration once known, buffering, and the
/// watch (``StreamWatch``) that skips a stream sending nothing.
extension Player {
    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    func beginStream(_ id: UInt64, handedOver: Bool = false) {
        streamTags = StreamTags()
        streamWatch.streamBegan()
        if !handedOver {
            awaitingOwnStreamStart = true
            positionFollow.loaded()
            facts = Pipeline.Facts()
        }
        let isStream = entry(id: id).map { !isLocal($0.uri) } ?? false
        if isStream && !handedOver { armStallWatch(for: id) } else { disarmStallWatch() }
    }

    /// The loaded entry has settled (Playing or Paused) and is the one shown.
    func isSettled(_ id: UInt64) -> Bool {
        current?.id == id && status != .stopped
    }

    /// Buffering of a network stream: only a stream pauses while its buffer fills (not a
    /// file, nor the stream that follows it before it starts: playing on is right then).
    func streamBuffering(_ percent: Int) {
        guard requestedStatus == .playing, let id = transport.loadedEntry, let loaded = entry(id: id), !isLocal(loaded.uri) else { return }
        switch streamWatch.buffering(percent, isSettled: isSettled(id)) {
        case .arm: armStallWatch(for: id)
        case .disarm: disarmStallWatch()
        case .keep: break
        }
        let actions = transport.buffering(percent: percent)
        if !actions.isEmpty {
            logger.debug(
                percent < 100
                    ? "buffering \(MediaSources.displayName(loaded.uri)) (\(percent)%); paused until it is full"
                    : "buffered \(MediaSources.displayName(loaded.uri)); playing on")
        }
        run(actions)
    }

    /// Tags of what is heard now: a stream's title and the like (a file's tags were read
    /// before it played: one Metadata per file).
    func streamTagsArrived(_ tags: StreamTags) {
        guard let id = transport.loadedEntry, let index = queue.index(of: id), !isLocal(queue[index].uri) else { return }
        var tags = tags
        if let picture = tags.takePicture() { keepStreamArtwork(picture, of: id) }
        streamTags.merge(tags)
        // Before the stream first plays, settling it applies them (in its first Metadata).
        if isSettled(id) { updateStreamInfo(at: index) }
    }

    /// A new stream title (or other tag) was heard: the entry's metadata changes once per
    /// actual change, never for a repeat of what it already says.
    /// `facts`: new facts from the pipeline (a duration), tags aside.
    func updateStreamInfo(at index: Int, facts: TrackInfo? = nil) {
        let before = queue[index].info
        if let facts { queue[index].info = facts }
        let info = streamTags.info(known: queue[index].info, facts: self.facts)
        guard info != before else { return }
        let id = queue[index].id
        queue[index].info = info
        onChange?(.entryInfo(id))
        showIfCurrent(index)
    }

    /// A picture a stream carries is copied out of GStreamer's buffer and kept in the artwork
    /// cache off the main actor, then shown with the stream: in its first Metadata when kept
    /// before the stream settles, else in one update (none when it is the picture already
    /// shown). Dropped when another entry is loaded by then.
    func keepStreamArtwork(_ picture: StreamTags.Picture, of id: UInt64) {
        guard let artwork else { return }
        TagPrefetch.queues[0].async { [weak self] in
            let url = picture.bytes.flatMap { artwork.store($0) }
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, let url, self.transport.loadedEntry == id, self.streamTags.artworkURL != url,
                        let index = self.queue.index(of: id)
                    else { return }
                    self.streamTags.artworkURL = url
                    if self.isSettled(id) { self.updateStreamInfo(at: index) }
                }
            }
        }
    }

    /// A stream's duration became known after it started playing: its length and
    /// seekability are published then, once.
    func streamDurationChanged() {
        guard let id = transport.loadedEntry, isSettled(id), let index = queue.index(of: id), !isLocal(queue[index].uri),
            let info = queue[index].info?.withDurationLearned(from: facts)
        else { return }
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    func reportEndIfStream(_ id: UInt64) {
        guard let entry = entry(id: id), !isLocal(entry.uri), entry.info?.duration == nil else { return }
        logger.warning("the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }

    // MARK: - The stall watch's shell

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    func watchHandedOverStream() {
        guard let id = pipeline.handoff.committedEntryID, let next = entry(id: id), !isLocal(next.uri) else { return }
        armStallWatch(for: id)
    }

    /// (Re)starts the countdown after which the stream `id` counts as stalled (see
    /// ``StreamWatch/arm(_:bytes:now:since:)``).
    func armStallWatch(for id: UInt64, since began: ContinuousClock.Instant? = nil) {
        streamWatch.arm(id, bytes: pipeline.bytesFromSources, now: .now, since: began)
        stallTimer.start(after: streamWatch.stallLimit, leeway: .milliseconds(100)) { [weak self] in self?.streamStalled() }
    }

    func disarmStallWatch() {
        stallTimer.cancel()
        streamWatch.disarm()
    }

    /// The stall limit passed: the stream is skipped (one log line naming it and why) rather
    /// than shown Playing, or stuck loading, for ever, unless the watch says to wait again.
    private func streamStalled() {
        guard let wait = streamWatch.wait else { return }
        let id = wait.entry
        let bytes = pipeline.bytesFromSources
        disarmStallWatch()
        let place: StreamWatch.Place
        if entry(id: id) == nil {
            place = .elsewhere
        } else if transport.loadedEntry == id {
            place = .loaded(isSettled: isSettled(id))
        } else if pipeline.handoff.committedEntryID == id, let playing = transport.loadedEntry.flatMap({ self.entry(id: $0) }) {
            let end = playing.info?.duration.map { $0 - .milliseconds(500) }
            place = .handedOver(previousPlays: end.map { clock.position() < $0 } ?? false)
        } else {
            place = .elsewhere
        }
        switch streamWatch.verdict(on: wait, at: place, playing: requestedStatus == .playing, bytes: bytes, now: .now) {
        case .leave:
            break
        case .waitAgain(let since):
            armStallWatch(for: id, since: since)
        case .stalled(let reason):
            if case .loaded = place {
                // Its source may still wait on the socket: the transport takes it all down.
                return run(transport.failed(reason: reason, inOutput: false, position: clock.position()))
            }
            // The track before it has ended: the stream is what the queue is at, and is
            // skipped from there (or stays current, when nothing follows it).
            guard let index = queue.index(of: id) else { return }
            transport.noteFailure()
            selection.move(from: transport.loadedEntry, to: index, in: queue, forward: true)
            skip(id, reason: reason, intent: requestedStatus)
        }
    }
}
