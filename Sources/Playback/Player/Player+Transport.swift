import Foundation
internal import CSystem

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
                // Slow to read is not broken: let the pipeline try (it reports real errors),
                // and read it again in the background with time to spare.
                logger.info("the tags of \(MediaSources.displayName(entry.uri)) take long to read; playing it meanwhile under its file name")
                start(queue[index], at: read.position, intent: read.intent)
                readAgainAfterTimeout(entry.id)
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
                seeksInFlight = 0
                beginStream(load.entry)
                clock.set(load.position ?? .zero, rate: 0)
                pipeline.load(load.uri, state: state, number: loadNumber, fresh: fresh, loudness: loudnessPlan(for: load.entry))
                if reloadingAfterHandOver {
                    reloadingAfterHandOver = false
                    watchPreroll(of: load)
                }
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
                seeksInFlight += 1
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

    /// A track loaded again after the stream handed over to follow it failed: should it not
    /// preroll within a few seconds (the failed stream's decoder can leave playbin unable
    /// to), it is loaded once more from NULL, then skipped: never a load that hangs. The
    /// timer is cancelled by the preroll, so an idle player wakes for nothing.
    private func watchPreroll(of load: Transport.Load) {
        prerollWatch?.cancel()
        prerollWatch = nil
        guard isLocal(load.uri) else { return }  // a stream has its stall watch
        let number = loadNumber
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + 4)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self, self.loadNumber == number, case .prerolling = self.transport.phase else { return }
                self.prerollWatch = nil
                let name = MediaSources.displayName(load.uri)
                if self.prerollRetried == load.entry {
                    self.prerollRetried = nil
                    self.run(self.transport.failed(reason: "it did not start within 4 s", inOutput: false, position: .zero))
                } else {
                    self.prerollRetried = load.entry
                    self.logger.warning("\(name) did not start within 4 s; loading it again")
                    self.run(self.transport.prerollTimedOut())
                }
            }
        }
        timer.resume()
        prerollWatch = timer
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
        if transport.isPlaying { checkPositionSoon() }
        prepareNext()
        onChange?(.transport)
    }

    /// An output with latency of its own (a sound server) starts its clock a moment after
    /// the pipeline reports PLAYING: the position is asked for twice in the first second and a
    /// half, so that the clock follows the output from the start, not from the first read.
    private func checkPositionSoon() {
        let load = loadNumber
        for delay in [0.4, 1.5] {
            DispatchQueue.main.asyncAfter(deadline: .now() + delay) { [weak self] in
                MainActor.assumeIsolated {
                    guard let self, self.loadNumber == load, self.transport.isPlaying else { return }
                    self.pipeline.queryPosition()
                }
            }
        }
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
            logger.debug("\(MediaSources.displayName(queue[index].uri)) ended; loading what follows")
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

    /// How long a second read of a file whose first read timed out may take: it runs in the
    /// background while the file plays, so it can wait for a busy machine.
    nonisolated static let patientReadTimeout = Duration.seconds(60)

    /// Parsing a picture over the limit (by the pipeline, or a read of its tags) leaves
    /// hundreds of MiB free but not given back: the heap's one arena keeps them between the
    /// chunks still in use. Two seconds after such a track is left or read, once the
    /// pipeline that played it is freed, they are handed back.
    func trimHeapSoon() {
        Self.readQueues[0].asyncAfter(deadline: .now() + 2) { csystem_trim_heap() }
    }

    /// Reads an entry again after its read before loading timed out; its tags and artwork
    /// reach clients in one later update.
    func readAgainAfterTimeout(_ id: UInt64) {
        guard let index = queue.index(of: id) else { return }
        let uri = queue[index].uri, artwork = self.artwork
        readsStarted &+= 1
        Self.readQueues[readsStarted % Self.readQueues.count].async { [weak self] in
            let result = Discoverer.discoverNow(uri, timeout: Self.patientReadTimeout, artwork: artwork)
            DispatchQueue.main.async {
                MainActor.assumeIsolated { self?.finishReadAgain(id, result) }
            }
        }
    }

    private func finishReadAgain(_ id: UInt64, _ result: Result<TrackInfo, MediaError>) {
        guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { return }
        switch result {
        case .success(let info):
            record(info, at: index)
            if info.oversizedPictureBytes != nil { trimHeapSoon() }
        case .failure(let error): logger.debug("reading the tags of \(MediaSources.displayName(queue[index].uri)) again: \(error.reason)")
        }
        guard current?.id == id else { return }
        current = queue[index]
        onChange?(.metadata)
        prepareNext()
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
        // playbin keeps a track's parsed tags for as long as the stream it switched from
        // gaplessly: a track that holds a picture over the limit ends with a load of what
        // follows instead, which frees them. So does a local file whose tags could not be
        // read in time: what they hold is not known.
        if queue[index].info?.oversizedPictureBytes != nil || needsDiscovery(queue[index]) {
            pipeline.prepareNext(nil)
            return
        }
        let entry = queue[next]
        guard entry.info == nil, isLocal(entry.uri) else {
            pipeline.prepareNext(.init(entryID: entry.id, uri: entry.uri, loudness: loudnessPlan(for: entry.id)))
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
    func pipelineGotStuck() {
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
}
