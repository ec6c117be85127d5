import Foundation

/// Loading entries, and carrying out what the transport decides.
extension Player {
    func go(to index: Int, forward: Bool = true) {
        if let selectedIndex, selectedIndex != index {
            order.recordMove(from: queue[selectedIndex].id, to: queue[index].id, forward: forward)
        }
        selectedIndex = index
        travelsForward = forward
        let intent = requestedStatus
        guard intent != .stopped else {
            pendingRead = nil
            current = queue[index]
            discoverCurrentIfNeeded()
            onChange?(.transport)
            return
        }
        load(index, intent: intent)
    }

    /// Loads the entry at `index` toward `intent`; a local file's tags are read first.
    func load(_ index: Int, at position: Duration? = nil, intent: Status) {
        selectedIndex = index
        readGeneration += 1
        pendingRead = nil
        let entry = queue[index]
        guard entry.info == nil, isLocal(entry.uri) else {
            return start(entry, at: position, intent: intent)
        }
        logger.trace("reading the tags of \(MediaSources.displayName(entry.uri)) before loading it")
        let generation = readGeneration
        pendingRead = PendingRead(entry: entry.id, position: position, intent: intent, generation: generation)
        discoverer.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            guard let read = pendingRead, read.generation == generation, let index = queue.index(of: entry.id) else {
                logger.trace("\(MediaSources.displayName(entry.uri)) was read, but another load came since")
                return
            }
            pendingRead = nil
            switch result {
            case .success(let info):
                record(info, at: index)
                start(queue[index], at: read.position, intent: read.intent)
            case .failure(let error) where error.isTimeout:
                // Slow to read is not broken: let the pipeline try (it reports real errors).
                logger.debug("reading the tags of \(MediaSources.displayName(entry.uri)) timed out; playing it anyway")
                start(queue[index], at: read.position, intent: read.intent)
            case .failure(let error):
                skip(entry.id, reason: error.reason, intent: read.intent)
            }
        }
    }

    private func start(_ entry: Entry, at position: Duration?, intent: Status) {
        guard intent != .stopped else { return }
        logger.trace("loading \(MediaSources.displayName(entry.uri))")
        run(transport.load(.init(entry: entry.id, uri: entry.uri, position: position), intent: intent))
    }

    /// Carries out the transport's actions, in order.
    func run(_ actions: [Transport.Action]) {
        for action in actions {
            switch action {
            case .load(let load, let state, let fresh):
                loadNumber += 1
                beginStream(load.entry)
                clock.set(load.position ?? .zero, rate: 0)
                pipeline.load(load.uri, state: state, number: loadNumber, fresh: fresh)
                // playbin asks for the next URI as soon as it has read this one, which for a
                // short file is during preroll: the answer is ready before it starts.
                prepareNext()
            case .unload(let fresh):
                loadNumber += 1
                disarmStallWatch()
                pipeline.unload(number: loadNumber, fresh: fresh)
                clock.set(.zero, rate: 0)
            case .setState(let state):
                pipeline.setState(state)
                if state == .paused { clock.changeRate(to: 0) }
            case .seek(let target):
                pipeline.seek(to: target, rate: rate)
            case .awaitPreroll:
                awaitPreroll()
            case .replacePipeline:
                replacePipeline()
            case .publish:
                settle()
            case .skip(let id, let reason):
                skip(id, reason: reason)
            case .advance(let id):
                advance(from: id)
            }
        }
    }

    /// A load waits for the preroll in progress, at most a second.
    private func awaitPreroll() {
        prerollWaitGeneration += 1
        let generation = prerollWaitGeneration
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) { [weak self] in
            MainActor.assumeIsolated {
                guard let self, self.prerollWaitGeneration == generation else { return }
                let actions = self.transport.prerollOverdue()
                if !actions.isEmpty {
                    self.logger.debug("the previous track did not preroll within a second; loading the next one anyway")
                }
                self.run(actions)
            }
        }
    }

    /// Tells the observer what the transport settled in.
    func settle() {
        if status == .stopped {
            // An entry found unplayable is never shown as the current one.
            current = selectedIndex.flatMap { queue[$0].failure == nil ? queue[$0] : nil }
        } else if let id = transport.settledEntry, let index = queue.index(of: id) {
            consecutiveFailures = 0
            if pendingRead == nil, transport.upcomingEntry == id { selectedIndex = index }
            fillInInfo(at: index)
            current = queue[index]
        }
        if status == .playing || status == .paused {
            clock.changeRate(to: transport.isPlaying ? rate : 0)
        }
        prepareNext()
        onChange?(.transport)
    }

    /// An entry never read ahead (a stream, a file read too slowly) gets what the pipeline
    /// knows of it once it settles.
    private func fillInInfo(at index: Int) {
        if !isLocal(queue[index].uri) {
            disarmStallWatch()  // it played: the server sent what was awaited
            let info = streamInfo(at: index)
            if info != queue[index].info {
                queue[index].info = info
                onChange?(.entryInfo(queue[index].id))
            }
        } else if queue[index].info == nil {
            var info = TrackInfo()
            info.duration = facts.duration
            info.isSeekable = facts.isSeekable
            info.isLive = info.duration == nil
            info.audioStreams = 1
            record(info, at: index)
        }
    }

    /// Skips an entry that cannot play: one log line naming it and why, then the next one
    /// (in the direction of travel), or stop at the end. An entry that is no longer the
    /// selected one is only marked.
    func skip(_ id: UInt64, reason: String, intent: Status? = nil) {
        if let index = queue.index(of: id) { recordFailure(reason, at: index) }
        guard pendingRead == nil, selectedEntry?.id == id || transport.upcomingEntry == nil else { return }
        let intent = intent ?? requestedStatus
        consecutiveFailures += 1
        guard intent != .stopped, consecutiveFailures <= queue.count, let index = queue.index(of: id) ?? selectedIndex,
            let target = neighbour(of: index, forward: travelsForward, automatic: true, allowRepeatOne: false)
        else {
            if consecutiveFailures > queue.count { logger.error("nothing in the queue can be played") }
            if let index = queue.index(of: id), !isLocal(queue[index].uri) {
                // A network stream stays current when nothing follows it: its server may answer
                // next time, so it is shown, and Play tries it again.
                queue[index].failure = nil
                selectedIndex = index
                onChange?(.entryInfo(id))
            }
            run(transport.stop())
            ranOut = true
            return
        }
        if let index = queue.index(of: id) { order.recordMove(from: queue[index].id, to: queue[target].id, forward: travelsForward) }
        load(target, intent: intent)
    }

    /// The loaded stream ended: what follows plays, or playback stops at the end of the queue.
    func advance(from id: UInt64) {
        reportEndIfStream(id)
        guard pendingRead == nil else { return }  // the selected entry loads once read
        if requestedStatus == .playing, let index = queue.index(of: id) ?? selectedIndex,
            let next = neighbour(of: index, forward: true, automatic: true)
        {
            // playbin asked for the next track before there was one (a short first track
            // while the rest of a folder was still being read): it plays now.
            order.recordMove(from: queue[index].id, to: queue[next].id, forward: true)
            travelsForward = true
            load(next, intent: .playing)
            return
        }
        logger.debug("end of the queue")
        run(transport.stop())
        ranOut = true
    }

    /// Keeps what was read of an entry; the observer hears of an entry's tags (or of its
    /// failure) once, the first time.
    func record(_ info: TrackInfo, at index: Int) {
        let isNew = queue[index].info == nil
        queue[index].info = info
        if isNew { onChange?(.entryInfo(queue[index].id)) }
    }

    /// An entry found unplayable: one log line naming it and why, the first time only.
    func recordFailure(_ reason: String, at index: Int) {
        guard queue[index].failure == nil else { return }
        queue[index].failure = reason
        logger.warning("skipping \(MediaSources.displayName(queue[index].uri)): \(reason)")
        onChange?(.entryInfo(queue[index].id))
    }

    func needsDiscovery(_ entry: Entry) -> Bool {
        entry.info == nil && entry.failure == nil && isLocal(entry.uri)
    }

    func discoverCurrentIfNeeded() {
        guard let index = selectedIndex, needsDiscovery(queue[index]) else { return }
        let id = queue[index].id
        discoverer.discover(queue[index].uri) { [weak self] result in
            guard let self, let index = queue.index(of: id) else { return }
            switch result {
            case .success(let info): record(info, at: index)
            case .failure(let error) where error.isTimeout: break  // busy, not broken
            case .failure(let error): recordFailure(error.reason, at: index)
            }
            let stillSelected = selectedIndex == index && (current == nil || current?.id == id)
            if stillSelected, queue[index].failure != nil {
                // Unplayable: while stopped, the selection moves on to what Play would start.
                if requestedStatus == .stopped, let next = neighbour(of: index, forward: true, automatic: false) {
                    selectedIndex = next
                    current = nil
                    discoverCurrentIfNeeded()
                }
            } else if stillSelected {
                current = queue[index]
                onChange?(.metadata)
            }
        }
    }

    /// After a change to what follows the current entry (loop, shuffle, an edit of the
    /// queue): prepares the new next entry. When playbin already took another one for a
    /// gapless switch (it asks early, during preroll for a short track), the current entry
    /// is loaded again where it is, so that the change applies to its end.
    func nextMayHaveChanged() {
        guard let committed = pipeline.handoff.committedEntryID, let index = selectedIndex, transport.loadedEntry != nil else {
            return prepareNext()
        }
        let wanted = neighbour(of: index, forward: true, automatic: true).map { queue[$0].id }
        guard wanted != committed else { return }
        logger.debug("what follows \(MediaSources.displayName(queue[index].uri)) changed after playbin took the next track; reloading it")
        let position = requestedPosition
        clock.set(position, rate: 0)
        run(transport.seek(to: position, nextTaken: true).actions)
    }

    /// Tells the pipeline which URI follows the current one, for a gapless switch, and
    /// reads that entry's tags ahead of time.
    func prepareNext() {
        guard requestedStatus != .stopped, let index = selectedIndex,
            let next = neighbour(of: index, forward: true, automatic: true)
        else {
            pipeline.prepareNext(nil)
            return
        }
        let entry = queue[next]
        guard entry.info == nil, isLocal(entry.uri) else {
            pipeline.prepareNext(.init(entryID: entry.id, uri: entry.uri))
            return
        }
        // A local file is handed to playbin only once it has been read: a broken one is
        // then skipped here, never torn out of a pipeline that already switched to it.
        pipeline.prepareNext(nil)
        guard readingAhead != entry.id else { return }
        readingAhead = entry.id
        discoverer.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            if readingAhead == entry.id { readingAhead = nil }
            guard let index = queue.index(of: entry.id) else { return }
            switch result {
            case .success(let info):
                record(info, at: index)
                if current?.id == entry.id {
                    current = queue[index]
                    onChange?(.metadata)
                }
            case .failure(let error) where error.isTimeout:
                return  // slow to read is not broken: it is loaded when its turn comes
            case .failure(let error):
                recordFailure(error.reason, at: index)
            }
            prepareNext()
        }
    }

    // MARK: - A stuck pipeline

    /// GStreamer did not return from a call into the pipeline in time (a deadlock inside it).
    private func pipelineGotStuck() {
        let stuckEntry = transport.loaded.flatMap { self.entry(id: $0.entry) }
        run(transport.stuck(position: clock.position()))
        if case .outputLost(_, let at) = transport.phase, let entry = stuckEntry {
            logger.error(
                "GStreamer got stuck twice on \(MediaSources.displayName(entry.uri)); paused at \(at.clock) until Play tries again")
        }
    }

    /// A new pipeline takes the stuck one's place, so that the daemon goes on answering and
    /// playing; the stuck one is freed if GStreamer ever lets go of it.
    func replacePipeline() {
        let stuck = pipeline!
        pipelinesReplaced += 1
        logger.error("GStreamer did not return from a call into the pipeline within \(stuckLimit) (a deadlock inside it); going on in a new pipeline")
        let since = ContinuousClock.now
        let limit = stuckLimit
        stuck.release { [logger] in
            let tenths = Int(((ContinuousClock.now - since + limit) / .milliseconds(100)).rounded())
            logger.notice("GStreamer let go of the stuck pipeline after \(tenths / 10).\(tenths % 10) s; it is freed")
        }
        pipeline = makePipeline()
        loadNumber += 1
    }

    // MARK: - Pipeline events

    func receive(_ delivery: Pipeline.Delivery, fromPipeline number: Int) {
        guard number == pipelineNumber else { return }  // a replaced pipeline's
        switch delivery.event {
        case .stuck: return pipelineGotStuck()
        case .requestState(let state): return handleStateRequest(state)
        case .outputVolumeChanged(let heard): return outputVolumeChanged(heard)
        default: break
        }
        guard delivery.load == loadNumber else { return }  // about a stream taken down since
        handle(delivery.event)
    }

    private func handle(_ event: Pipeline.Event) {
        switch event {
        case .stateChanged(_, let new, let pending, let position, let at):
            guard pending == .voidPending else { return }
            let actions = transport.stateReached(new)
            // The clock takes the pipeline's word as of when it spoke, however late that is read.
            if let position, transport.isSettledLoad, (new == .playing) == transport.isPlaying {
                clock.set(position, rate: transport.isPlaying ? rate : 0, at: at)
            }
            run(actions)
        case .asyncDone(let facts):
            self.facts = facts
            let seeking = transport.isSeeking
            let actions = transport.asyncDone(current: facts.current, pending: facts.pending)
            if seeking || transport.isSettledLoad, let position = facts.position {
                clock.set(position, rate: transport.isPlaying ? rate : 0, at: facts.at)
            }
            run(actions)
        case .streamStart:
            streamStarted()
        case .endOfStream:
            run(transport.endOfStream())
        case .error(let message, let debug, let source, let inOutput):
            streamFailed(message, debug: debug, source: source, inOutput: inOutput)
        case .warning(let message, let source):
            warned(message, source: source)
        case .buffering(let percent):
            streamBuffering(percent)
        case .tags(let tags):
            streamTagsArrived(tags)
        case .clockLost:
            if transport.intent == .playing {
                pipeline.setState(.paused)
                pipeline.setState(.playing)
            }
        case .durationChanged(let facts):
            self.facts.duration = facts.duration
            self.facts.isSeekable = facts.isSeekable
            streamDurationChanged()
        case .nextURITaken:
            watchHandedOverStream()
        case .stateChangeFailed:
            run(transport.stateChangeFailed())
        case .seekRefused(let target):
            logger.warning("seek to \(target.clock) refused by the pipeline")
            pipeline.queryPosition()
            run(transport.seekRefused())
        case .position(let reported, let at):
            positionReported(reported, at: at)
        case .elements(let names):
            pipelineElementNames = names
        case .stuck, .requestState, .outputVolumeChanged:
            break  // handled above, whatever load they come with
        }
    }

    /// STREAM_START: the loaded stream's own, or a gapless switch to the handed-over one.
    private func streamStarted() {
        if awaitingOwnStreamStart {
            awaitingOwnStreamStart = false
            return
        }
        guard let switched = pipeline.handoff.takeCommitted(), let index = queue.index(of: switched.entryID) else { return }
        if let previous = transport.loadedEntry {
            reportEndIfStream(previous)
            order.recordMove(from: previous, to: switched.entryID, forward: true)
        }
        selectedIndex = index
        switchedAt = .now
        clock.set(.zero, rate: transport.isPlaying ? rate : 0)
        beginStream(switched.entryID, handedOver: true)
        run(transport.switched(to: .init(entry: switched.entryID, uri: switched.uri, position: nil)))
    }

    /// An error: the handed-over next stream's (the current one goes on), the output's (paused
    /// until Play), or the loaded stream's (skipped).
    private func streamFailed(_ message: String, debug: String?, source: String, inOutput: Bool) {
        logger.debug("pipeline error from \(source): \(debug ?? "-")")
        if let ignored = ignoredErrorSource, source.hasPrefix(ignored) {
            logger.debug("ignoring a further error of a skipped stream: \(message)")
            return
        }
        if !inOutput, let handedOver = pipeline.handoff.takeCommitted(), let next = queue.index(of: handedOver.entryID),
            queue[next].info == nil || !isLocal(queue[next].uri), transport.loadedEntry != nil
        {
            // The URI handed over for gapless playback failed while the current one was still
            // playing: that one is skipped, and the current one goes on where it was.
            recordFailure(message, at: next)
            ignoredErrorSource = Self.decoderPath(of: source)
            let position = clock.position()
            run(transport.handOverFailed(position: position))
            return
        }
        let failedEntry = transport.loadedEntry.flatMap { self.entry(id: $0) }
        let position = transport.pendingPosition ?? clock.position()
        let actions = transport.failed(reason: message, inOutput: inOutput, position: position)
        if inOutput, let entry = failedEntry, case .outputLost = transport.phase {
            logger.warning(
                "the audio output failed (\(message)); paused at \(position.clock) of \(MediaSources.displayName(entry.uri)) until Play")
        } else if inOutput {
            logger.warning("the audio output failed: \(message)")
        }
        run(actions)
    }

    private func warned(_ message: String, source: String) {
        if source.contains("audio-sink") || source.contains("autoaudiosink") {
            guard !warnedAboutNullSink else { return }
            warnedAboutNullSink = true
            logger.warning("no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
        } else if Self.isSkippedStreamNotice(message) {
            // decodebin's note on a video, picture or subtitle stream whose decoder is skipped
            // on purpose: nothing is wrong.
            logger.debug("not decoded, as intended: \(message)")
        } else {
            logger.warning("GStreamer warning from \(source): \(message)")
        }
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    private func handleStateRequest(_ state: Pipeline.State) {
        switch state {
        case .paused where requestedStatus == .playing:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            pause()
            resumeAfterInterruption = true
        case .playing where resumeAfterInterruption:
            logger.info("the interruption is over; playing again")
            play()
        default:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then equal but for rounding: not a change).
    private func outputVolumeChanged(_ heard: Double) {
        guard heard.isFinite, abs(heard - volume) > 0.001 else { return }
        volume = min(max(heard, 0), 1)
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        onChange?(.volume)
    }

    // MARK: - Position

    /// While playing, asks the pipeline where it is, at most once a second, so that the
    /// clock follows an output slower (or faster) than real time.
    func refreshPositionIfDue() {
        guard transport.isPlaying, switchedAt.map({ ContinuousClock.now - $0 > .seconds(2) }) ?? true else { return }
        let now = ContinuousClock.now
        if let last = lastPositionQuery, now - last < .seconds(1) { return }
        lastPositionQuery = now
        pipeline.queryPosition()
    }

    /// The pipeline said where it is: a clock that drifted from it by more than a quarter
    /// second takes its word, and clients are told the new timing.
    private func positionReported(_ reported: Duration?, at: ContinuousClock.Instant) {
        guard let reported, transport.isSettledLoad, at >= clock.stamp else { return }
        if let switchedAt, at - switchedAt < .seconds(2) { return }
        let predicted = clock.position(at: at)
        let drift = reported - predicted
        guard drift > .milliseconds(250) || drift < .milliseconds(-250) else { return }
        logger.debug("the pipeline is at \(reported), not \(predicted): the position follows it")
        clock.set(reported, rate: transport.isPlaying ? rate : 0, at: at)
        onChange?(.transport)
    }

    /// Whether a warning is decodebin's "No decoder available for type '…'" about a stream
    /// that is never decoded (video, pictures, subtitles). The caps are quoted in the
    /// message whatever its language.
    static func isSkippedStreamNotice(_ message: String) -> Bool {
        [
            "'video/", "'image/", "'text/", "'subpicture/", "'subtitle/", "'closedcaption/", "'application/x-ssa",
            "'application/x-ass", "'application/x-subtitle",
        ]
        .contains { message.contains($0) }
    }

    /// `/GstPlayBin:x/GstURIDecodeBin:uridecodebin1` of an element path inside it, or nil.
    static func decoderPath(of source: String) -> String? {
        let parts = source.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = parts.firstIndex(where: { $0.hasPrefix("GstURIDecodeBin:") }) else { return nil }
        return parts[...index].joined(separator: "/")
    }
}
