import Dispatch
import FoundationEssentials

/// Network streams: their tags and pictures, their duration once known, buffering, and the
/// watch that skips a stream sending nothing.
extension Player {
    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    func beginStream(_ id: UInt64, handedOver: Bool = false) {
        streamTags = StreamTags()
        bufferingPercent = -1
        if !handedOver {
            awaitingOwnStreamStart = true
            switchedAt = nil
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
        watchStall(id, buffering: percent)
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
        if let image = tags.image {
            tags.image = nil
            keepStreamArtwork(image, of: id)
        }
        streamTags.merge(tags)
        // Before the stream first plays, settling it applies them (in its first Metadata).
        if isSettled(id) { updateStreamInfo(at: index) }
    }

    /// What the pipeline and the stream's tags say of the stream at `index`: what the
    /// pipeline told when it first played (duration, seekability), with the tags heard since.
    func streamInfo(at index: Int) -> TrackInfo {
        var info: TrackInfo
        if let known = queue[index].info {
            info = known
            info.title = nil
            info.artists = []
            info.album = nil
            info.genres = []
        } else {
            info = TrackInfo()
            info.duration = facts.duration
            info.isSeekable = facts.isSeekable
            info.isLive = info.duration == nil
            info.audioStreams = 1
        }
        return streamTags.applied(to: info)
    }

    /// A new stream title (or other tag) was heard: the entry's metadata changes once per
    /// actual change, never for a repeat of what it already says.
    /// `facts`: new facts from the pipeline (a duration), tags aside.
    func updateStreamInfo(at index: Int, facts: TrackInfo? = nil) {
        let before = queue[index].info
        if let facts { queue[index].info = facts }
        let info = streamInfo(at: index)
        guard info != before else { return }
        let id = queue[index].id
        queue[index].info = info
        onChange?(.entryInfo(id))
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }

    /// A picture a stream carries is kept in the artwork cache off the main queue, then shown
    /// with the stream: in its first Metadata when kept before the stream settles, else in one
    /// update (none when it is the picture already shown). Dropped when another entry is
    /// loaded by then.
    func keepStreamArtwork(_ image: Data, of id: UInt64) {
        guard let artwork else { return }
        Self.readQueues[0].async { [weak self] in
            let url = artwork.store(image)
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

    /// A stream's duration became known after it started playing (an MP3 served over HTTP is
    /// measured as it plays): its length and seekability are published then, once. Later
    /// refinements of an estimate are not republished.
    func streamDurationChanged() {
        guard let id = transport.loadedEntry, isSettled(id), let index = queue.index(of: id), !isLocal(queue[index].uri),
            var info = queue[index].info, info.duration == nil, let duration = facts.duration
        else { return }
        info.duration = duration
        info.isLive = false
        info.isSeekable = facts.isSeekable
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    func reportEndIfStream(_ id: UInt64) {
        guard let entry = entry(id: id), !isLocal(entry.uri), entry.info?.duration == nil else { return }
        logger.warning("the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }

    /// Buffering of the loaded stream while it should play: the watch starts when the level
    /// first drops, and starts again whenever the level rises (data came).
    private func watchStall(_ id: UInt64, buffering percent: Int) {
        defer { bufferingPercent = percent }
        if percent >= 100 {
            // Full: the server did send. Once the stream has played that ends the watch;
            // before, the pipeline gets the whole limit again to start it (a busy machine
            // takes seconds), and settling ends the watch.
            if isSettled(id) { disarmStallWatch() } else { armStallWatch(for: id) }
        } else if stallWatch == nil || percent > bufferingPercent {
            armStallWatch(for: id)
        }
    }

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    func watchHandedOverStream() {
        guard let id = pipeline.handoff.committedEntryID, let next = entry(id: id), !isLocal(next.uri) else { return }
        armStallWatch(for: id)
    }

    /// (Re)starts the countdown after which the stream `id` counts as stalled. The wait began
    /// now when no watch ran, else at `began` (or when the running watch began).
    func armStallWatch(for id: UInt64, since began: ContinuousClock.Instant? = nil) {
        if stallWatch == nil || began != nil { stallWatchBegan = began ?? .now }
        stallWatchBytes = pipeline.bytesFromSources
        let timer =
            stallWatch
            ?? {
                let timer = DispatchSource.makeTimerSource(queue: .main)
                timer.resume()
                return timer
            }()
        stallWatch = timer
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.streamStalled(id) }
        }
        timer.schedule(deadline: .now() + streamStallTimeout.dispatchInterval, leeway: .milliseconds(100))
    }

    func disarmStallWatch() {
        stallWatch?.cancel()
        stallWatch = nil
    }

    /// The stall limit passed. A stream whose server sent nothing in that time is skipped
    /// (one log line naming it and why) rather than shown Playing, or stuck loading, for ever.
    /// One whose server did send is waited for again: a playing stream as long as data comes,
    /// one yet to start up to `streamStartLimit` from the start of the wait, which tells a slow
    /// start from a silent server.
    private func streamStalled(_ id: UInt64) {
        let began = stallWatchBegan
        let received = pipeline.bytesFromSources > stallWatchBytes
        disarmStallWatch()
        guard entry(id: id) != nil else { return }
        let isLoaded = transport.loadedEntry == id
        if isLoaded {
            // Paused by hand while it buffered: left be; Play fills the buffer, and watches, again.
            guard requestedStatus == .playing || !isSettled(id) else { return }
        } else {
            // A stream handed over for a gapless switch, which has not started.
            guard pipeline.handoff.committedEntryID == id, let playing = transport.loadedEntry.flatMap({ self.entry(id: $0) }) else { return }
            guard requestedStatus == .playing else { return }  // paused: the watch starts again with Play
            if let duration = playing.info?.duration, clock.position() < duration - .milliseconds(500) {
                return armStallWatch(for: id)  // the track before it still plays: the wait starts at its end
            }
        }
        // Data came, or a full buffer waits for the pipeline to start: the server is not silent.
        let sending = received || (isLoaded && bufferingPercent >= 100 && !isSettled(id))
        if sending && (isSettled(id) || ContinuousClock.now - began < streamStartLimit) {
            return armStallWatch(for: id, since: began)
        }
        let reason =
            if sending {
                "the stream did not start within \(Self.seconds(streamStartLimit)), though the server sends"
            } else if isSettled(id) {
                "the stream stalled: nothing from the server for \(Self.seconds(streamStallTimeout))"
            } else {
                "no audio from the server within \(Self.seconds(streamStallTimeout))"
            }
        if isLoaded {
            // Its source may still wait on the socket: the transport takes it all down.
            run(transport.failed(reason: reason, inOutput: false, position: clock.position()))
        } else if let index = queue.index(of: id) {
            // The track before it has ended: the stream is what the queue is at, and is
            // skipped from there (or stays current, when nothing follows it).
            transport.noteFailure()
            if let previous = transport.loadedEntry { order.recordMove(from: previous, to: id, forward: true) }
            selectedIndex = index
            travelsForward = true
            skip(id, reason: reason, intent: requestedStatus)
        }
    }

    /// `10 s`, `1.5 s`: a limit as the log names it.
    private static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration.nanoseconds) / 1e9
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
