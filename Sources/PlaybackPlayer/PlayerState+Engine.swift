import Logging
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// What the engine reports, and what the queue makes of it: the steps that decide what
/// plays next. Each reads the engine through an ``EngineView`` taken when the report came.
extension PlayerState {
    /// What a step needs to know of the engine, read when its input comes.
    struct EngineView: Equatable {
        /// What clients are told of the transport.
        var status: PlaybackStatus = .stopped
        /// Where the engine's transport heads (a load waiting for tags aside).
        var intent: PlaybackStatus = .stopped
        /// The entry the settled status was told with.
        var settledEntry: UInt64?
        /// The entry that plays once the load in progress is done.
        var upcomingEntry: UInt64?
        /// The entry whose stream is in the pipeline.
        var loadedEntry: UInt64?
        /// Whether the transport holds a load (one whose output failed too).
        var hasLoad = false
        /// The entry playbin took for a gapless switch and has not started yet.
        var committedEntry: UInt64?
        /// What the pipeline tells of the settled entry, for one never read ahead (a network
        /// stream, a file read too slowly): its tags as the pipeline heard them.
        var settledInfo: TrackInfo?
    }

    /// Where the commands received so far lead: a load waiting for tags, else the engine.
    func requested(_ engine: EngineView) -> PlaybackStatus { reading?.intent ?? engine.intent }

    // MARK: - Engine reports

    /// The transport settled: clients see the settled entry (or, stopped, what Play would
    /// start), and what follows it is prepared.
    mutating func settled(_ engine: EngineView) -> [Action] {
        var actions: [Action] = []
        if engine.status == .stopped {
            // An entry found unplayable is never shown as the current one.
            show(selectedPlayable)
        } else if let id = engine.settledEntry, let index = queue.index(of: id) {
            consecutiveFailures = 0
            ranOut = false
            if reading == nil, engine.upcomingEntry == id { selection.index = index }
            if let info = engine.settledInfo, info != queue[index].info {
                let isNew = queue[index].info == nil || !queue[index].isLocal
                queue[index].info = info
                if isNew { actions.append(.announce(.entryInfo(id))) }
            }
            show(queue[index])
        } else if shown.map({ !queue.contains($0.id) }) ?? true {
            // What settled was removed from the queue meanwhile: the selected entry, on its
            // way, is shown in its place.
            show(selectedPlayable)
        }
        return actions + [.prepareNext, .announce(.transport)]
    }

    /// The entry `id` cannot play: one log line naming it and why, then the next one in the
    /// direction of travel, or stop at the end. Going back (Previous) onto an entry found
    /// unplayable at the start of the queue turns around to the first playable one after it,
    /// as Previous on the first track restarts it: a command never stops playback. An entry
    /// that is no longer the selected one is only marked. `intent`: where the skip leads
    /// (nil: where the commands received so far do).
    mutating func failed(_ id: UInt64, reason: String, intent: PlaybackStatus?, _ engine: EngineView) -> [Action] {
        var actions: [Action] = queue.index(of: id).map { recordFailure(reason, at: $0) } ?? []
        guard reading == nil, selectedID == id || engine.upcomingEntry == nil else { return actions }
        let intent = intent ?? requested(engine)
        consecutiveFailures += 1
        // The target is asked for last, only when playback goes on: with shuffle, asking
        // draws from the cycle.
        guard intent != .stopped, consecutiveFailures <= queue.count,
            let index = queue.index(of: id) ?? selection.index, let skip = skipTarget(from: index)
        else {
            if consecutiveFailures > queue.count { actions.append(.log(.error, "nothing in the queue can be played")) }
            if let index = queue.index(of: id), !queue[index].isLocal {
                // A network stream stays current when nothing follows it: its server may answer
                // next time, so it is shown, and Play tries it again.
                queue[index].failure = nil
                selection.index = index
                actions.append(.announce(.entryInfo(id)))
            }
            ranOut = true  // before clients hear of the stop, so that they see why
            return actions + [.stop]
        }
        selection.move(from: queue.contains(id) ? id : nil, to: skip.index, in: queue, forward: skip.forward)
        return actions + [.load(at: nil, intent: intent)]
    }

    /// Where a skip from the entry at `index` goes: on in the direction of travel, or, going
    /// back and finding nothing, turned around.
    private mutating func skipTarget(from index: Int) -> (index: Int, forward: Bool)? {
        let forward = selection.travelsForward
        if let target = selection.neighbour(
            of: index, in: queue, forward: forward, automatic: true, allowRepeatOne: false)
        {
            return (target, forward)
        }
        guard !forward else { return nil }
        return selection.neighbour(of: index, in: queue, forward: true, automatic: true, allowRepeatOne: false).map {
            ($0, true)
        }
    }

    /// The loaded stream ended: what follows plays, or playback stops at the end of the queue.
    mutating func ended(_ id: UInt64, _ engine: EngineView) -> [Action] {
        var actions = endOfStreamNote(id)
        guard reading == nil else { return actions }  // the selected entry loads once read
        if requested(engine) == .playing, let index = queue.index(of: id) ?? selection.index,
            let next = selection.neighbour(of: index, in: queue, forward: true, automatic: true)
        {
            // playbin asked for the next track before there was one (a short first track
            // while the rest of a folder was still being read): it plays now.
            actions.append(.log(.debug, "\(MediaSources.displayName(queue[index].uri)) ended; loading what follows"))
            selection.move(from: queue[index].id, to: next, in: queue, forward: true)
            return actions + [.load(at: nil, intent: .playing)]
        }
        ranOut = true
        return actions + [.log(.debug, "end of the queue"), .stop]
    }

    /// playbin switched gaplessly to the entry handed over: it becomes the selected one,
    /// unless another entry's tags are being read (its load follows and takes over). One
    /// removed from the queue since is left for what follows it.
    mutating func switched(from previous: UInt64?, to next: UInt64, _ engine: EngineView) -> [Action] {
        guard let index = queue.index(of: next) else {
            return [.log(.debug, "playbin switched to a track removed from the queue; going on with what follows")]
                + ended(next, engine)
        }
        var actions: [Action] = [.log(.debug, "gapless switch to \(MediaSources.displayName(queue[index].uri))")]
        if let previous {
            actions += endOfStreamNote(previous)
            selection.recordMove(from: previous, to: next, forward: true)
        }
        if reading == nil { selection.index = index }
        return actions
    }

    /// The network stream handed over for gapless playback failed while the current one was
    /// still playing: it is marked unplayable.
    mutating func handOverFailed(_ id: UInt64, reason: String) -> [Action] {
        queue.index(of: id).map { recordFailure(reason, at: $0) } ?? []
    }

    /// The stream handed over stalled after the track before it ended: the queue is at that
    /// stream, and it is skipped from there (or stays current, when nothing follows it).
    /// While the selected entry's tags are read, its load takes over: the stream is only
    /// marked.
    mutating func handOverStalled(_ id: UInt64, reason: String, _ engine: EngineView) -> [Action] {
        guard let index = queue.index(of: id) else { return [] }
        if reading == nil { selection.move(from: engine.loadedEntry, to: index, in: queue, forward: true) }
        return failed(id, reason: reason, intent: requested(engine), engine)
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Playback pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    mutating func stateRequested(_ state: PipelineState, _ engine: EngineView) -> [Action] {
        switch interruption.response(to: state, requested: requested(engine)) {
        case .pause:
            interruption.interrupted()
            return [
                .log(.info, "the sound server asked to pause (another stream, such as a call, takes priority)"),
                .pauseForInterruption,
            ]
        case .resume:
            return [.log(.info, "the interruption is over; playing again"), .play]
        case .nothing:
            return [.log(.debug, "the sound server asked for state \(state); nothing to do")]
        }
    }

    /// A command came: the end of an interruption no longer resumes playback.
    mutating func userActed() {
        interruption.userActed()
    }

    /// Stop was asked for: the queue did not run out.
    mutating func stopped() {
        ranOut = false
        abandonReading()
    }

    // MARK: - What follows the selected entry

    /// After a change to what follows the selected entry (loop, shuffle, an edit of the
    /// queue): what follows is prepared again. When playbin already took another entry for a
    /// gapless switch (it asks early, during preroll for a short track), the selected entry is
    /// loaded again where it is, so that the change applies to its end.
    mutating func nextMayHaveChanged(_ engine: EngineView) -> [Action] {
        guard let committed = engine.committedEntry, let index = selection.index, engine.loadedEntry != nil else {
            return [.prepareNext]
        }
        let wanted = selection.neighbour(of: index, in: queue, forward: true, automatic: true).map { queue[$0].id }
        guard wanted != committed else { return [] }
        return [
            .log(
                .debug,
                "what follows \(MediaSources.displayName(queue[index].uri)) changed after playbin took the next track; reloading it"
            ),
            .reloadSelected,
        ]
    }

    /// What playbin is told follows the stream in the pipeline, for a gapless switch (see
    /// ``HandOverPlan``). What follows the selection is the answer only for the selection's
    /// own stream: while another one is still in the pipeline (the selection's tags are read,
    /// or its load waits for a preroll), that one ends, and the selection's load answers for
    /// itself.
    mutating func handOverPlan(_ engine: EngineView) -> HandOverPlan {
        guard let selected = selection.index else { return .nothing }
        let selectionLoaded = reading == nil && queue[selected].id == engine.loadedEntry
        let next =
            requested(engine) == .stopped || !selectionLoaded
            ? nil : selection.neighbour(of: selected, in: queue, forward: true, automatic: true)
        return HandOverPlan(current: queue[selected], next: next.map { queue[$0] })
    }

    // MARK: - What is known of entries

    /// The entry at `index` cannot be played, for `reason`: marked, with one log line naming
    /// it and why and one announcement, the first time only.
    mutating func recordFailure(_ reason: String, at index: Int) -> [Action] {
        guard queue[index].failure == nil else { return [] }
        queue[index].failure = reason
        return [
            .log(.warning, "skipping \(MediaSources.displayName(queue[index].uri)): \(reason)"),
            .announce(.entryInfo(queue[index].id)),
        ]
    }

    /// Keeps what was read of the entry at `index`; the observer hears of an entry's tags
    /// once, the first time.
    mutating func record(_ info: TrackInfo, at index: Int) -> [Action] {
        let isNew = queue[index].info == nil
        queue[index].info = info
        return isNew ? [.announce(.entryInfo(queue[index].id))] : []
    }

    /// The entry at `index` changed: when it is the shown one, clients see it.
    mutating func showIfShown(_ index: Int) -> [Action] {
        showAgainIfShown(queue[index].id) ? [.announce(.metadata)] : []
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    private func endOfStreamNote(_ id: UInt64) -> [Action] {
        guard let index = queue.index(of: id), !queue[index].isLocal, queue[index].info?.duration == nil else {
            return []
        }
        return [
            .log(
                .warning,
                "the stream \(MediaSources.displayName(queue[index].uri)) ended: the server closed the connection")
        ]
    }
}
