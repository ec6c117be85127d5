import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the pipeline reported, and what the transport makes of it.
extension Transport {
    /// ASYNC_DONE: a preroll or a flushing seek completed. `current` and `pending`: the
    /// pipeline's states then.
    mutating func asyncDone(current: Pipeline.State, pending: Pipeline.State) -> [Action] {
        switch phase {
        case .prerolling(let load, let seek, let queued, let heading):
            if let queued { return start(queued, toward: heading) }
            if let seek {
                enter(.seeking(load, target: seek, reached: nil, toward: heading))
                return [.seek(seek)]
            }
            enter(.loaded(load, heading, confirmed: false))
            return settleIfReached(current: current, pending: pending)
        case .seeking(let load, _, _, let heading):
            changeUnderWay = false  // it landed
            enter(.loaded(load, heading, confirmed: false))
            let newTiming = shown.map { $0.status == heading && $0.entry == load.entry } ?? false
            let actions = settleIfReached(current: current, pending: pending)
            // Clients hear of the new timing once, with the settled state when it comes too.
            return newTiming && !actions.contains(.publish) ? [.publish] + actions : actions
        case .loaded:
            return settleIfReached(current: current, pending: pending)
        case nil, .idle, .buffering, .outputLost:
            return []
        }
    }

    /// The pipeline as a whole reached `new`, with nothing more pending.
    mutating func stateReached(_ new: Pipeline.State) -> [Action] {
        switch phase {
        case .loaded(let load, _, _):
            return reached(new, load)
        case .prerolling(let load, nil, nil, let heading):
            // Loaded straight to PLAYING: its state can come before its ASYNC_DONE.
            guard new == .playing else { return [] }
            enter(.loaded(load, heading, confirmed: false))
            // Pause came during the preroll: the pipeline went on to PLAYING all the same.
            guard heading == .playing else { return [.setState(.paused)] }
            return reached(new, load)
        default:
            return []  // a preroll's seek, a seek's flush or buffering comes first
        }
    }

    /// What the pipeline says its state is, when asked because it has not confirmed the one
    /// asked for within a while (see ``awaitsState``): settled if it is there, asked again if
    /// it is not heading there. A change still under way is left to finish once; found under
    /// way at the next check as well, it is taken for stalled (GStreamer can leave playbin's
    /// change to PLAYING under way for good after a gapless switch, with nothing flowing and
    /// no message to come): the entry is loaded again at `position`, from NULL, as for a
    /// pipeline that got stuck, and stalled once more it pauses there until Play.
    mutating func stateChecked(
        current: Pipeline.State, pending: Pipeline.State, position: Duration = .zero
    ) -> [Action] {
        if awaitsSeek, case .seeking(let load, let target, _, let heading) = phase {
            // A seek in a file lands within moments; one still in flight at two checks in a
            // row was lost (seen after a stuck pipeline was replaced, in an odd file: the
            // stream stayed in the seek, shown Playing, for good). The entry is loaded again
            // there, from NULL; a seek lost on such a reload loads it from the start.
            guard changeUnderWay else {
                changeUnderWay = true
                return []
            }
            pipelineFailed = true
            let at = target.flatMap { load.position == $0 ? nil : $0 }
            return start(load.at(at), toward: heading)
        }
        guard awaitsState, case .loaded(let load, let heading, _) = phase else { return [] }
        if heading == .paused, current == .paused, pending == .paused {
            // PAUSED with PAUSED still pending is a preroll GStreamer has not finished, and
            // may never (after a pause that overtook its change to PLAYING): nothing is heard
            // in PAUSED, so Paused is the truth. Play asks for PLAYING, which the rule below
            // watches.
            changeUnderWay = false
            return reached(current, load)
        }
        guard pending == heading.pipelineState, current != heading.pipelineState else {
            changeUnderWay = false
            return settleIfReached(current: current, pending: pending)
        }
        guard changeUnderWay else {
            changeUnderWay = true
            return []
        }
        changeUnderWay = false
        let restart = load.at(position)
        guard retryingAfterStuck?.entry != load.entry else {
            retryingAfterStuck = nil
            state = .active(.outputLost(restart, at: position), shown: Shown(status: .paused, entry: load.entry))
            return [.unload(fresh: true), .publish]
        }
        retryingAfterStuck = StuckRetry(entry: load.entry)
        pipelineFailed = true
        return start(restart, toward: heading)
    }

    /// A state change GStreamer refused at once (the errors it queued were reported first).
    mutating func stateChangeFailed() -> [Action] {
        failed(reason: "the pipeline could not start it")
    }

    /// A seek GStreamer refused: the stream stays where it was.
    mutating func seekRefused() -> [Action] {
        guard case .seeking(let load, _, let reached, let heading) = phase else { return [] }
        if let reached, reached != heading {
            // Play or Pause came during the seek: the pipeline is still where it was.
            enter(.loaded(load, heading, confirmed: false))
            return [.publish, .setState(heading.pipelineState)]
        }
        enter(.loaded(load, heading, confirmed: reached != nil))
        return [.publish]
    }

    /// The stream failed (`inOutput`: the audio output did, not the track). `position`: where
    /// the loaded entry was.
    mutating func failed(reason: String, inOutput: Bool, position: Duration) -> [Action] {
        pipelineFailed = true
        guard let load = loadedOrNil() else { return [] }  // an echo of a stream already taken down
        // The output is not the track's fault: what was asked for last pauses where it was to start.
        if inOutput { return outputLost(upcomingLoad() ?? load, at: position) }
        return failed(reason: reason)
    }

    /// A stream the pipeline held failed, and the owner handles it (a handed-over stream that
    /// stalled): nothing changes now, and the next teardown goes to NULL.
    mutating func failedElsewhere() -> [Action] {
        pipelineFailed = true
        return []
    }

    /// The next stream handed over for a gapless switch failed while the loaded one still
    /// played: the loaded one is loaded again at `position`, from a new pipeline state.
    mutating func handOverFailed(position: Duration) -> [Action] {
        pipelineFailed = true
        guard let phase, let load = loadedOrNil() else { return [] }
        // A load asked for meanwhile is what was asked for last.
        if case .prerolling(_, _, let queued?, let heading) = phase { return start(queued, toward: heading) }
        return start(load.at(position), toward: phase.heading)
    }

    /// The load in progress has not prerolled in time: it is loaded again, from NULL, where
    /// it was asked for.
    mutating func prerollTimedOut() -> [Action] {
        guard case .prerolling(let load, let seek, nil, let heading) = phase else { return [] }
        pipelineFailed = true
        return start(load.at(seek ?? load.position), toward: heading)
    }

    /// End of stream.
    mutating func endOfStream() -> [Action] {
        if case .prerolling(_, _, let queued?, let heading) = phase { return start(queued, toward: heading) }
        guard let load = loadedOrNil() else { return [] }
        return [.advance(from: load.entry)]
    }

    /// playbin switched, gaplessly, to the stream handed over: `load` is what is heard now.
    mutating func switched(to load: Load) -> [Action] {
        guard let phase, loadedOrNil() != nil else { return [] }
        switch phase {
        case .prerolling(_, _, let queued?, let heading):
            // The preroll is over (its stream played to the end): a load asked for meanwhile
            // is what the listener wants, whatever playbin switched to.
            return start(queued, toward: heading)
        case .prerolling(_, _, nil, .paused) where rate == 1:
            // Pause came during the preroll, and a switch happens only while playing: the
            // pipeline is asked to pause, and clients hear of the new entry once it has.
            retryingAfterStuck = nil
            enter(.loaded(load, .paused, confirmed: false))
            return [.setState(.paused)]
        default:
            var confirmed = false
            if case .loaded(_, _, true) = phase { confirmed = true }
            retryingAfterStuck = nil
            let heading = phase.heading
            if rate != 1 {  // a new stream starts at rate 1
                enter(.seeking(load, target: nil, reached: confirmed ? heading : nil, toward: heading))
                return settle(load.entry, force: true) + [.seek(.zero)]
            }
            enter(.loaded(load, heading, confirmed: confirmed))
            return settle(load.entry, force: true)
        }
    }

    /// The buffering level of a network stream that should play.
    ///
    /// It pauses only once the pipeline has confirmed PLAYING. GStreamer's BUFFERING message
    /// documentation has the application expect levels while the pipeline prerolls, and
    /// PAUSED asked for while the pipeline still heads for PLAYING on its own (after a
    /// preroll, a seek or the end of buffering) races GStreamer's own state change. The
    /// levels that follow PLAYING pause it if the buffer is still short.
    mutating func buffering(percent: Int) -> [Action] {
        switch phase {
        case .loaded(let load, .playing, confirmed: true) where percent < 100:
            enter(.buffering(load))
            return [.setState(.paused)]
        case .buffering(let load) where percent >= 100:
            enter(.loaded(load, .playing, confirmed: false))
            return [.setState(.playing)]
        default:
            return []
        }
    }

    /// The pipeline lost its clock (an output went away and another took its place): a
    /// pipeline heading for PLAYING goes through PAUSED and back, so that it picks a new clock.
    /// Nothing is published, as nothing clients see changes. Not while buffering: the pipeline
    /// is paused then, and picks its clock when the buffer is full.
    mutating func clockLost() -> [Action] {
        guard heading == .playing else { return [] }
        switch phase {
        case .prerolling, .seeking, .loaded: return [.reselectClock]
        case nil, .idle, .buffering, .outputLost: return []
        }
    }

    /// The preroll the queued load waits for did not end in time: load it anyway.
    mutating func prerollOverdue() -> [Action] {
        guard case .prerolling(_, _, let queued?, let heading) = phase else { return [] }
        return start(queued, toward: heading)
    }

    /// A call into GStreamer did not return in time. `position`: where the loaded entry was.
    /// The entry is loaded again in a new pipeline at `position` (the loaded entry's), or
    /// the one a load asked for meanwhile where it was asked for. Stuck again on the same
    /// entry before the retry got going, the output is likely at fault: the transport pauses
    /// there, and Play tries again; stuck again after the retry played, the entry is skipped.
    /// `ended`: the loaded entry was at its end, so what follows it plays instead.
    mutating func stuck(position: Duration, ended: Bool = false) -> [Action] {
        pipelineFailed = false
        guard let phase, let load = upcomingLoad() else { return [.replacePipeline] }
        if ended, pendingPosition == nil, load == loadedOrNil() {
            retryingAfterStuck = nil
            enter(.idle(phase.heading))
            return [.replacePipeline, .advance(from: load.entry)]
        }
        let restart = load.at(pendingPosition ?? position)
        if let retry = retryingAfterStuck, retry.entry == load.entry {
            retryingAfterStuck = nil
            guard !retry.reached else {
                // It played again and stuck again: the file makes GStreamer stick.
                enter(.idle(phase.heading))
                return [.replacePipeline, .skip(load.entry, reason: "GStreamer got stuck playing it, twice")]
            }
            let shown = shown.map { _ in Shown(status: .paused, entry: load.entry) }
            state = .active(.outputLost(restart, at: restart.position ?? .zero), shown: shown)
            return shown == nil ? [.replacePipeline] : [.replacePipeline, .publish]
        }
        retryingAfterStuck = StuckRetry(entry: load.entry)
        return [.replacePipeline] + start(restart, toward: phase.heading)
    }

    // MARK: - Helpers

    /// The track failed: a load being left while it prerolled is marked and the load asked
    /// for goes on; else the track is taken down (to NULL after an error) and skipped.
    private mutating func failed(reason: String) -> [Action] {
        guard let phase, let load = loadedOrNil() else { return [] }
        if case .prerolling(let old, _, let queued?, let heading) = phase {
            return [.skip(old.entry, reason: reason)] + start(queued, toward: heading)
        }
        enter(.idle(phase.heading))
        return [.unload(fresh: takeFailure()), .skip(load.entry, reason: reason)]
    }

    private mutating func outputLost(_ load: Load, at position: Duration) -> [Action] {
        pipelineFailed = false
        state = .active(.outputLost(load, at: position), shown: Shown(status: .paused, entry: load.entry))
        return [.unload(fresh: true), .publish]
    }

    /// After a preroll or a seek: go on to PLAYING if that is wanted, and settle the state the
    /// pipeline is in if it is the wanted one.
    private mutating func settleIfReached(current: Pipeline.State, pending: Pipeline.State) -> [Action] {
        guard case .loaded(let load, let heading, _) = phase else { return [] }
        if heading == .playing && current != .playing && pending != .playing { return [.setState(.playing)] }
        // Pause came while a load or a seek headed for PLAYING: nothing else pauses it.
        if heading == .paused && (current == .playing || pending == .playing) { return [.setState(.paused)] }
        guard pending == .voidPending else { return [] }
        return reached(current, load)
    }

    private mutating func reached(_ new: Pipeline.State, _ load: Load) -> [Action] {
        guard let heading, new == heading.pipelineState else { return [] }
        enter(.loaded(load, heading, confirmed: true))
        if retryingAfterStuck?.entry == load.entry { retryingAfterStuck?.reached = true }
        return settle(load.entry)
    }

    /// Tells clients the heading the pipeline has reached, for `entry`, if it is news.
    /// `force`: a gapless switch, which keeps the status clients know.
    mutating func settle(_ entry: EntryID, force: Bool = false) -> [Action] {
        guard case .active(let phase, let shown) = state else { return [] }
        let told = Shown(status: force ? shown?.status ?? phase.heading : phase.heading, entry: entry)
        guard force || shown != told else { return [] }
        state = .active(phase, shown: told)
        return [.publish]
    }
}
