import Dispatch
import FoundationEssentials
internal import CSystem

/// Loading entries, and carrying out what the transport decides.
extension Player {
    func go(to index: Int, forward: Bool = true) {
        selection.move(from: selectedEntry?.id, to: index, in: queue, forward: forward)
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
        prefetch.discoverer.discover(entry.uri) { [weak self] result in
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
                prefetch.readAgain(entry.id, uri: entry.uri)
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
                seeks.loaded()
                beginStream(load.entry)
                clock.set(load.position ?? .zero, rate: 0)
                pipeline.load(load.uri, state: state, number: loadNumber, fresh: fresh, loudness: loudnessPlan(for: load.entry))
                if let limit = prerollWatch.loadStarted(load.entry, isLocal: isLocal(load.uri)) {
                    watchPreroll(of: load, limit: limit)
                } else {
                    prerollTimer.cancel()
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
            case .reselectClock:
                pipeline.setState(.paused)
                pipeline.setState(.playing)
            case .seek(let target):
                seeks.sent()
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

    /// Times the preroll of `load` (see ``PrerollWatch``).
    private func watchPreroll(of load: Transport.Load, limit: Duration) {
        let number = loadNumber
        prerollTimer.start(after: limit) { [weak self] in
            guard let self, loadNumber == number, case .prerolling = transport.phase, let decision = prerollWatch.timedOut() else { return }
            let name = MediaSources.displayName(load.uri)
            switch decision {
            case .skip:
                run(transport.failed(reason: "it did not start within \(StreamWatch.seconds(limit))", inOutput: false, position: .zero))
            case .outputFailed:
                streamFailed("it took no audio of \(name) within \(StreamWatch.seconds(limit)), twice", debug: nil, source: "quaver-audio-sink",
                             uri: load.uri, inOutput: true)
            case .retry:
                logger.warning("\(name) did not start within \(StreamWatch.seconds(limit)); loading it again")
                run(transport.prerollTimedOut())
            }
        }
    }

    /// A load waits for the preroll in progress, at most a second.
    private func awaitPreroll() {
        prerollWait.start(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            let actions = transport.prerollOverdue()
            if !actions.isEmpty {
                logger.debug("the previous track did not preroll within a second; loading the next one anyway")
            }
            run(actions)
        }
    }

    /// Tells the observer what the transport settled in.
    func settle() {
        if status == .stopped {
            // An entry found unplayable is never shown as the current one.
            current = selectedIndex.flatMap { queue[$0].failure == nil ? queue[$0] : nil }
        } else if let id = transport.settledEntry, let index = queue.index(of: id) {
            consecutiveFailures = 0
            ranOut = false
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
            let info = streamTags.info(known: queue[index].info, facts: facts)
            if info != queue[index].info {
                queue[index].info = info
                onChange?(.entryInfo(queue[index].id))
            }
        } else if queue[index].info == nil {
            record(TrackInfo(facts: facts), at: index)
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
            let target = neighbour(of: index, forward: selection.travelsForward, automatic: true, allowRepeatOne: false)
        else {
            if consecutiveFailures > queue.count { logger.error("nothing in the queue can be played") }
            if let index = queue.index(of: id), !isLocal(queue[index].uri) {
                // A network stream stays current when nothing follows it: its server may answer
                // next time, so it is shown, and Play tries it again.
                queue[index].failure = nil
                selectedIndex = index
                onChange?(.entryInfo(id))
            }
            ranOut = true  // before clients hear of the stop, so that they see why
            run(transport.stop())
            return
        }
        if let index = queue.index(of: id) { selection.recordMove(from: queue[index].id, to: queue[target].id, forward: selection.travelsForward) }
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
            selection.move(from: queue[index].id, to: next, in: queue, forward: true)
            load(next, intent: .playing)
            return
        }
        logger.debug("end of the queue")
        ranOut = true
        run(transport.stop())
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

    /// Parsing a picture over the limit (by the pipeline, or a read of its tags) leaves
    /// hundreds of MiB free but not given back: the heap's one arena keeps them between the
    /// chunks still in use. Two seconds after such a track is left or read, once the
    /// pipeline that played it is freed, they are handed back.
    func trimHeapSoon() {
        TagPrefetch.queues[0].asyncAfter(deadline: .now() + 2) { csystem_trim_heap() }
    }

    func discoverCurrentIfNeeded() {
        guard let index = selectedIndex, queue[index].needsRead else { return }
        let id = queue[index].id
        prefetch.discoverer.discover(queue[index].uri) { [weak self] result in
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

    /// Tells the pipeline which URI follows the current one, for a gapless switch (see
    /// ``HandOverPlan``), and reads that entry's tags ahead of time when they are needed first.
    func prepareNext() {
        let next = requestedStatus == .stopped ? nil : selectedIndex.flatMap { neighbour(of: $0, forward: true, automatic: true) }
        let plan = selectedIndex.map { HandOverPlan(current: queue[$0], next: next.map { queue[$0] }) } ?? .nothing
        if case .handOver(var item) = plan {
            item.loudness = loudnessPlan(for: item.entryID)
            pipeline.prepareNext(item)
        } else {
            pipeline.prepareNext(nil)
        }
        guard case .readFirst(let id, let uri) = plan else { return }
        prefetch.readAhead(id, uri: uri) { [weak self] result in
            guard let self, let index = queue.index(of: id) else { return }
            switch result {
            case .success(let info):
                record(info, at: index)
                showIfCurrent(index)
            case .failure(let error) where error.isTimeout:
                return  // slow to read is not broken: it is loaded when its turn comes
            case .failure(let error):
                recordFailure(error.reason, at: index)
            }
            prepareNext()
        }
    }

    /// The entry at `index` changed: when it is the current one, clients see it.
    func showIfCurrent(_ index: Int) {
        guard current?.id == queue[index].id else { return }
        current = queue[index]
        onChange?(.metadata)
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
        logger.error("GStreamer did not return from a call into the pipeline within \(StreamWatch.seconds(stuckLimit)) (a deadlock inside it); \(replacementPlan)")
        let since = ContinuousClock.now
        let limit = stuckLimit
        stuck.release { [logger] in
            let tenths = Int(((ContinuousClock.now - since + limit) / .milliseconds(100)).rounded())
            logger.notice("GStreamer let go of the stuck pipeline after \(tenths / 10).\(tenths % 10) s; it is freed")
        }
        pipeline = makePipeline()
        loadNumber += 1
    }

    /// What the new pipeline does, as the transport decided before it is made: the track
    /// loaded again, where; or kept, paused, until Play; or nothing.
    private var replacementPlan: String {
        switch transport.phase {
        case .prerolling(let load, _, _):
            let name = entry(id: load.entry).map { MediaSources.displayName($0.uri) } ?? load.uri
            return "going on in a new pipeline, loading \(name) again at \((load.position ?? .zero).clock)"
        case .outputLost(let load, let at):
            let name = entry(id: load.entry).map { MediaSources.displayName($0.uri) } ?? load.uri
            return "going on in a new pipeline, with \(name) paused at \(at.clock)"
        default:
            return "going on in a new pipeline, with nothing loaded"
        }
    }
}
