import FoundationEssentials
import Logging

/// What follows in the queue: the engine's owner.
///
/// The ``Engine`` plays one entry and reports what happens to it (``EngineReport``), each
/// report once the engine's step is done; the conductor answers in terms of the queue. It tells clients once the transport settles, skips an entry that
/// cannot play (in the direction of travel), goes on at the end of one, follows playbin's
/// gapless switches, hands the next entry over ahead of time with its loudness plan, and
/// pauses for the sound server's interruptions. A part of the ``Player``: it reads the
/// queue and the selection through ``PlayerHost``, and asks the player for each change.
@MainActor
final class Conductor {
    /// The player, as its parts see it.
    unowned let host: any PlayerHost
    let engine: Engine
    let catalog: Catalog
    let logger: Logger
    /// Failures in a row: once every entry has failed, playback stops.
    private var consecutiveFailures = 0
    /// Whether the end of the sound server's interruption resumes playback.
    private var interruption = Interruption()
    /// Playback stopped because the queue ran out, not because someone stopped it.
    var ranOut = false
    /// How loudness is levelled.
    var loudness = LoudnessSettings()
    /// The gains measured for tracks without tags (nil: none are kept).
    var gainCache: GainCache?

    init(host: any PlayerHost, engine: Engine, catalog: Catalog, logger: Logger) {
        self.host = host
        self.engine = engine
        self.catalog = catalog
        self.logger = logger
    }

    var queue: PlayQueue { host.queue }

    var requestedStatus: Player.Status { host.requestedStatus }

    func entry(id: UInt64) -> Player.Entry? { host.entry(id: id) }

    /// What the engine reported, once its step is done.
    func handle(_ report: EngineReport) {
        switch report {
        case .settled: settled()
        case .failed(let id, let reason): skip(id, reason: reason, intent: nil)
        case .ended(let id): advance(from: id)
        case .switched(let previous, let next): switched(from: previous, to: next)
        case .handOverFailed(let id, let reason): handedOverFailed(id, reason: reason)
        case .handOverStalled(let id, let reason): handedOverStalled(id, reason: reason)
        case .loadStarted: prepareNext()
        case .changed(let change): host.announce(change)
        case .stateRequested(let state): stateRequested(state)
        case .streamTagsChanged(let id, let picture): catalog.streamTagsChanged(id, picture: picture)
        case .streamDurationChanged(let id): catalog.streamDurationChanged(id)
        case .loudnessApplied(let plan, let gain): loudnessApplied(plan, gain: gain)
        case .loudnessMeasured(let signature, let gain): loudnessMeasured(signature, gain)
        }
    }

    /// What the engine needs to know of the entry with `id` to play it.
    func facts(of id: UInt64) -> EntryFacts {
        EntryFacts(length: host.entry(id: id)?.info?.duration, loudness: loudnessPlan(for: id))
    }

    /// A command came: the end of an interruption no longer resumes playback.
    func userActed() {
        interruption.userActed()
    }

    // MARK: - The transport settled, or an entry ended or failed

    /// Tells the observer what the transport settled in.
    func settled() {
        let transport = engine.transport
        if host.status == .stopped {
            // An entry found unplayable is never shown as the current one.
            host.setCurrent(host.selectedIndex.flatMap { queue[$0].failure == nil ? queue[$0] : nil })
        } else if let id = transport.settledEntry, let index = queue.index(of: id) {
            consecutiveFailures = 0
            ranOut = false
            if !host.isReadingBeforeLoad, transport.upcomingEntry == id { host.select(index) }
            catalog.fillInInfo(at: index)
            host.setCurrent(queue[index])
        } else if host.current.map({ queue.index(of: $0.id) == nil }) ?? true {
            // What settled was removed from the queue meanwhile: the selected entry, on its
            // way, is shown in its place.
            host.setCurrent(host.selectedIndex.flatMap { queue[$0].failure == nil ? queue[$0] : nil })
        }
        prepareNext()
        host.announce(.transport)
    }

    /// Skips an entry that cannot play: one log line naming it and why, then the next one
    /// (in the direction of travel), or stop at the end. An entry that is no longer the
    /// selected one is only marked. `intent`: where the skip leads (nil: where the commands
    /// received so far do).
    func skip(_ id: UInt64, reason: String, intent: Player.Status?) {
        if let index = queue.index(of: id) { catalog.recordFailure(reason, at: index) }
        let selectedID = host.selectedIndex.map { queue[$0].id }
        guard !host.isReadingBeforeLoad, selectedID == id || engine.transport.upcomingEntry == nil else {
            return
        }
        let intent = intent ?? requestedStatus
        consecutiveFailures += 1
        let forward = host.selection.travelsForward
        guard intent != .stopped, consecutiveFailures <= queue.count,
            let index = queue.index(of: id) ?? host.selectedIndex,
            let target = host.neighbour(of: index, forward: forward, automatic: true, allowRepeatOne: false)
        else {
            if consecutiveFailures > queue.count { logger.error("nothing in the queue can be played") }
            if let index = queue.index(of: id), !MediaSources.isLocal(queue[index].uri) {
                // A network stream stays current when nothing follows it: its server may answer
                // next time, so it is shown, and Play tries it again.
                host.updateEntry(at: index) { $0.failure = nil }
                host.select(index)
                host.announce(.entryInfo(id))
            }
            ranOut = true  // before clients hear of the stop, so that they see why
            engine.stop()
            return
        }
        if let index = queue.index(of: id) {
            host.recordMove(from: queue[index].id, to: queue[target].id, forward: forward)
        }
        host.load(target, at: nil, intent: intent)
    }

    /// The loaded stream ended: what follows plays, or playback stops at the end of the queue.
    func advance(from id: UInt64) {
        catalog.reportEndIfStream(id)
        guard !host.isReadingBeforeLoad else { return }  // the selected entry loads once read
        if requestedStatus == .playing, let index = queue.index(of: id) ?? host.selectedIndex,
            let next = host.neighbour(of: index, forward: true, automatic: true, allowRepeatOne: true)
        {
            // playbin asked for the next track before there was one (a short first track
            // while the rest of a folder was still being read): it plays now.
            logger.debug("\(MediaSources.displayName(queue[index].uri)) ended; loading what follows")
            host.moveSelection(from: queue[index].id, to: next, forward: true)
            host.load(next, at: nil, intent: .playing)
            return
        }
        logger.debug("end of the queue")
        ranOut = true
        engine.stop()
    }

    /// playbin switched gaplessly to the handed-over entry: it becomes the selected one. One
    /// removed from the queue since is left for what follows it.
    func switched(from previous: UInt64?, to next: UInt64) {
        guard let index = queue.index(of: next) else {
            logger.debug("playbin switched to a track removed from the queue; going on with what follows")
            return advance(from: next)
        }
        logger.debug("gapless switch to \(MediaSources.displayName(queue[index].uri))")
        if let previous {
            catalog.reportEndIfStream(previous)
            host.recordMove(from: previous, to: next, forward: true)
        }
        // While the selected entry's tags are read, its load follows and takes over.
        if !host.isReadingBeforeLoad { host.select(index) }
    }

    /// The stream handed over for gapless playback failed while the current one was still
    /// playing: it is marked unplayable.
    func handedOverFailed(_ id: UInt64, reason: String) {
        guard let index = queue.index(of: id) else { return }
        catalog.recordFailure(reason, at: index)
    }

    /// The stream handed over stalled after the track before it ended: the queue is at that
    /// stream, and it is skipped from there (or stays current, when nothing follows it).
    func handedOverStalled(_ id: UInt64, reason: String) {
        guard let index = queue.index(of: id) else { return }
        // While the selected entry's tags are read, its load takes over: the stream is only marked.
        if !host.isReadingBeforeLoad {
            host.moveSelection(from: engine.transport.loadedEntry, to: index, forward: true)
        }
        skip(id, reason: reason, intent: requestedStatus)
    }

    // MARK: - What follows the current entry

    /// After a change to what follows the current entry (loop, shuffle, an edit of the
    /// queue): prepares the new next entry. When playbin already took another one for a
    /// gapless switch (it asks early, during preroll for a short track), the current entry
    /// is loaded again where it is, so that the change applies to its end.
    func nextMayHaveChanged() {
        guard let committed = engine.pipeline.handoff.committedEntryID, let index = host.selectedIndex,
            engine.transport.loadedEntry != nil
        else {
            return prepareNext()
        }
        let wanted = host.neighbour(of: index, forward: true, automatic: true, allowRepeatOne: true).map {
            queue[$0].id
        }
        guard wanted != committed else { return }
        logger.debug(
            "what follows \(MediaSources.displayName(queue[index].uri)) changed after playbin took the next track; reloading it"
        )
        engine.reload(at: host.requestedPosition)
    }

    /// Tells the pipeline which URI follows the current one, for a gapless switch (see
    /// ``HandOverPlan``), and reads that entry's tags ahead of time when they are needed first.
    /// While they are read, playbin is told to wait for the answer (for a while: see
    /// ``GaplessHandoff``), so that a short track does not end for want of it.
    func prepareNext() {
        let selected = host.selectedIndex
        // What follows the selection is the answer only for the selection's own stream: while
        // another one is still in the pipeline (the selection's tags are read, or its load
        // waits for a preroll), that one ends, and the selection's load answers for itself.
        let selectionLoaded =
            !host.isReadingBeforeLoad && selected.map { queue[$0].id } == engine.transport.loadedEntry
        let next =
            requestedStatus == .stopped || !selectionLoaded
            ? nil : selected.flatMap { host.neighbour(of: $0, forward: true, automatic: true, allowRepeatOne: true) }
        let plan = selected.map { HandOverPlan(current: queue[$0], next: next.map { queue[$0] }) } ?? .nothing
        switch plan {
        case .nothing:
            engine.prepareNext(.nothing)
        case .handOver(var item):
            let facts = facts(of: item.entryID)
            item.loudness = facts.loudness
            engine.prepareNext(.item(item), facts: facts)
        case .readFirst(let id, let uri):
            engine.prepareNext(.pending)
            catalog.readAhead(id, uri: uri) { [weak self] in self?.prepareNext() }
        }
    }

    // MARK: - What else the engine reports

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    func stateRequested(_ state: Pipeline.State) {
        switch interruption.response(to: state, requested: requestedStatus) {
        case .pause:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            host.pause()
            interruption.interrupted()
        case .resume:
            logger.info("the interruption is over; playing again")
            host.play()
        case .nothing:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }

}
