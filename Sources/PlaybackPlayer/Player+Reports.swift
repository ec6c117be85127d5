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
            hasLoad: transport.loaded != nil, committedEntry: engine.pipeline.handoff.committedEntryID)
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
    /// False when the step, or the engine, refused a command.
    @discardableResult
    func step(_ body: (inout PlayerState) -> [PlayerState.Action]) -> Bool {
        let left = state.shown
        let actions = body(&state)
        if let left, left.id != state.shown?.id, left.info?.oversizedPictureBytes != nil { trimHeapSoon() }
        return perform(actions)
    }

    /// Runs the listener's `command` through the player's state. False when it was refused.
    @discardableResult
    func run(_ command: PlayerState.Command) -> Bool {
        let view = engineView
        return step { $0.command(command, view) }
    }

    /// Carries out what a step of the player's state decided, in order. False when a
    /// command was refused, by the step or by the engine.
    @discardableResult
    func perform(_ actions: [PlayerState.Action]) -> Bool {
        var accepted = true
        for action in actions {
            switch action {
            case .load(let position, let intent):
                step { $0.loadSelected(at: position, intent: intent) }
            case .readBeforeLoad(let id, let uri, let generation):
                readBeforeLoad(id, uri: uri, generation: generation)
            case .startLoad(let id, let position, let intent):
                startLoad(id, at: position, intent: intent)
            case .readAgain(let id, let uri):
                prefetch.readAgain(id, uri: uri)
            case .play:
                play()
            case .resume:
                // The step resumes only the entry the engine holds, which it always can; a
                // refusal would leave Play without effect, so the entry is loaded instead.
                if !engine.resume() { step { $0.loadSelected(at: nil, intent: .playing) } }
            case .pause:
                engine.pause()
            case .pauseForInterruption:
                let view = engineView
                step { $0.pausing(view) }
            case .stop:
                engine.stop()
            case .seek(let target):
                accepted = engine.seek(to: target) && accepted
            case .refused:
                accepted = false
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
            case .forget(let id):
                engine.forget(id)
            case .log(let level, let message):
                logger.log(level: level, "\(message)")
            case .announce(let change):
                onChange?(change)
            }
        }
        return accepted
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
