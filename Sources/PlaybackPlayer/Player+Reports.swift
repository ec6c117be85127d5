import Dispatch
import FoundationEssentials
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// What the engine reports, through the player's state, and how the player carries out what
/// its steps decide.
extension Player {
    /// The engine as the player's steps read it, now.
    var engineView: PlayerState.EngineView {
        let transport = engine.transport
        return PlayerState.EngineView(
            status: transport.status, intent: transport.intent, settledEntry: transport.settledEntry,
            upcomingEntry: transport.upcomingEntry, loadedEntry: transport.loadedEntry,
            committedEntry: engine.pipeline.handoff.committedEntryID)
    }

    /// What the engine reported, once its step is done.
    func handle(_ report: EngineReport) {
        let view = engineView
        switch report {
        case .settled:
            var settled = view
            settled.settledInfo = settledInfo()
            step { $0.settled(settled) }
        case .failed(let id, let reason): step { $0.failed(id, reason: reason, intent: nil, view) }
        case .ended(let id): step { $0.ended(id, view) }
        case .switched(let previous, let next): step { $0.switched(from: previous, to: next, view) }
        case .handOverFailed(let id, let reason): step { $0.handOverFailed(id, reason: reason) }
        case .handOverStalled(let id, let reason): step { $0.handOverStalled(id, reason: reason, view) }
        case .loadStarted: prepareNext()
        case .changed(let change): onChange?(change)
        case .stateRequested(let requested): step { $0.stateRequested(requested, view) }
        case .streamTagsChanged(let id, let picture): streamTagsChanged(id, picture: picture)
        case .streamDurationChanged(let id): streamDurationChanged(id)
        case .loudnessApplied(let plan, let gain): loudnessApplied(plan, gain: gain)
        case .loudnessMeasured(let signature, let gain): loudnessMeasured(signature, gain)
        }
    }

    /// What the pipeline tells of the settled entry when it was never read ahead (a network
    /// stream, a file read too slowly).
    private func settledInfo() -> TrackInfo? {
        guard status != .stopped, let id = transport.settledEntry, let index = queue.index(of: id) else { return nil }
        let entry = queue[index]
        if !entry.isLocal { return engine.streamTags.info(known: entry.info, facts: engine.facts) }
        return entry.info == nil ? TrackInfo(facts: engine.facts) : nil
    }

    /// Runs one step of the player's state and carries out what it decided. Leaving a shown
    /// track whose picture was over the limit hands the memory its parsing took back.
    func step(_ body: (inout PlayerState) -> [PlayerState.Action]) {
        let left = state.shown
        let actions = body(&state)
        if let left, left.id != state.shown?.id, left.info?.oversizedPictureBytes != nil { trimHeapSoon() }
        perform(actions)
    }

    /// Carries out what a step of the player's state decided, in order.
    func perform(_ actions: [PlayerState.Action]) {
        for action in actions {
            switch action {
            case .load(let position, let intent):
                guard let index = selectedIndex else { continue }
                load(index, at: position, intent: intent)
            case .play:
                play()
            case .pauseForInterruption:
                pauseTransport()
            case .stop:
                engine.stop()
            case .readSelected:
                readSelectedIfNeeded()
            case .nextMayHaveChanged:
                let view = engineView
                step { $0.nextMayHaveChanged(view) }
            case .prepareNext:
                prepareNext()
            case .reloadSelected:
                engine.reload(at: requestedPosition)
            case .trimHeap:
                trimHeapSoon()
            case .userActed:
                state.userActed()
            case .forget(let id):
                engine.forget(id)
            case .log(let level, let message):
                logger.log(level: level, "\(message)")
            case .announce(let change):
                onChange?(change)
            }
        }
    }

    /// Tells the pipeline which URI follows the current one, for a gapless switch (see
    /// ``HandOverPlan``), and reads that entry's tags ahead of time when they are needed first.
    /// While they are read, playbin is told to wait for the answer (for a while: see
    /// ``GaplessHandoff``), so that a short track does not end for want of it.
    func prepareNext() {
        switch state.handOverPlan(engineView) {
        case .nothing:
            engine.prepareNext(.nothing)
        case .handOver(var item):
            let facts = facts(of: item.entryID)
            item.loudness = facts.loudness
            engine.prepareNext(.item(item), facts: facts)
        case .readFirst(let id, _):
            engine.prepareNext(.pending)
            readAhead(id)
        }
    }

    /// What the engine needs to know of the entry with `id` to play it.
    func facts(of id: UInt64) -> EntryFacts {
        EntryFacts(length: entry(id: id)?.info?.duration, loudness: loudnessPlan(for: id))
    }
}
