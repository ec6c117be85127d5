import Dispatch
import FoundationEssentials
internal import CSystem

/// Loading entries, and what follows when one settles, ends or cannot play.
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
        engine.load(.init(entry: entry.id, uri: entry.uri, position: position), intent: intent)
    }

    /// Tells the observer what the transport settled in.
    func settled() {
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
        prepareNext()
        onChange?(.transport)
    }

    /// An entry never read ahead (a stream, a file read too slowly) gets what the pipeline
    /// knows of it once it settles.
    private func fillInInfo(at index: Int) {
        if !isLocal(queue[index].uri) {
            let info = engine.streams.tags.info(known: queue[index].info, facts: engine.facts)
            if info != queue[index].info {
                queue[index].info = info
                onChange?(.entryInfo(queue[index].id))
            }
        } else if queue[index].info == nil {
            record(TrackInfo(facts: engine.facts), at: index)
        }
    }

    /// Skips an entry that cannot play: one log line naming it and why, then the next one
    /// (in the direction of travel), or stop at the end. An entry that is no longer the
    /// selected one is only marked.
    func skip(_ id: UInt64, reason: String, intent: Status?) {
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
            engine.stop()
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
        engine.stop()
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
        guard let committed = engine.pipeline.handoff.committedEntryID, let index = selectedIndex, transport.loadedEntry != nil else {
            return prepareNext()
        }
        let wanted = neighbour(of: index, forward: true, automatic: true).map { queue[$0].id }
        guard wanted != committed else { return }
        logger.debug("what follows \(MediaSources.displayName(queue[index].uri)) changed after playbin took the next track; reloading it")
        engine.reload(at: requestedPosition)
    }

    /// Tells the pipeline which URI follows the current one, for a gapless switch (see
    /// ``HandOverPlan``), and reads that entry's tags ahead of time when they are needed first.
    func prepareNext() {
        let next = requestedStatus == .stopped ? nil : selectedIndex.flatMap { neighbour(of: $0, forward: true, automatic: true) }
        let plan = selectedIndex.map { HandOverPlan(current: queue[$0], next: next.map { queue[$0] }) } ?? .nothing
        if case .handOver(var item) = plan {
            item.loudness = loudnessPlan(for: item.entryID)
            engine.prepareNext(item)
        } else {
            engine.prepareNext(nil)
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
}
