/// The transport of the loaded entry as one value, and the pure function that moves it.
///
/// Each input is a `mutating func` named after what happened (a command, or what the pipeline
/// reported). It returns the ``Action``s to carry out, in order: the transport never touches
/// GStreamer, the queue or a clock, so a test can drive it through every state. `status` is
/// what clients are told; it changes only when the pipeline has confirmed it (or at once for
/// Stop, a failed output and the end of the queue), never for a preroll, a seek's flush, a
/// gapless switch or buffering.
package struct Transport: Sendable, Equatable {
    package typealias EntryID = UInt64

    /// What to load: an entry, its URI, and where to start (nil: at the beginning).
    package struct Load: Sendable, Equatable {
        var entry: EntryID
        var uri: String
        var position: Duration?

        /// The entry `entry` at `uri`, from `position` (nil: from the beginning).
        package init(entry: EntryID, uri: String, position: Duration? = nil) {
            self.entry = entry
            self.uri = uri
            self.position = position
        }
    }

    /// What the pipeline is doing. Each case says which it may move to.
    package enum Phase: Sendable, Equatable {
        /// Nothing is in the pipeline. → prerolling.
        case idle
        /// The URI is set and the pipeline prerolls. `seek`: where to go once it has (a start
        /// position, or zero to apply a rate other than 1). `queued`: a load asked for
        /// meanwhile, started once this preroll ends: GStreamer 1.22's playbin2 can deadlock
        /// when a stream is taken down while its first data reaches playbin's stream selector.
        /// → seeking, loaded, idle (failed), outputLost, prerolling (the queued load).
        case prerolling(Load, seek: Duration?, queued: Load?)
        /// A flushing seek is in flight (`target` nil: the seek that applies the rate after a
        /// gapless switch). `reached`: the state confirmed before it. → loaded, idle, outputLost.
        case seeking(Load, target: Duration?, reached: PlaybackStatus?)
        /// Loaded. `reached`: the state the pipeline confirmed (nil while it changes).
        /// → seeking, buffering, prerolling, idle, outputLost.
        case loaded(Load, reached: PlaybackStatus?)
        /// A network stream, paused until its buffer fills; clients still see `status`.
        /// → loaded, seeking, idle, outputLost.
        case buffering(Load)
        /// The audio output failed, or GStreamer got stuck twice: nothing is loaded, and Play
        /// loads the entry again where it was. → prerolling, idle.
        case outputLost(Load, at: Duration)
    }

    /// What the owner of the transport does, in order.
    package enum Action: Sendable, Equatable {
        /// Takes down what is loaded and loads `load` toward `state` (to NULL first when `fresh`).
        case load(Load, Pipeline.State, fresh: Bool)
        /// Takes down what is loaded (to NULL when `fresh`).
        case unload(fresh: Bool)
        case setState(Pipeline.State)
        /// Takes the pipeline through PAUSED and back to PLAYING, so that it picks a new
        /// clock; the position runs on meanwhile, as nothing clients see changes.
        case reselectClock
        /// Seeks the loaded stream to a position, at `rate`.
        case seek(Duration)
        /// Waits at most a while for the preroll in progress, then sends ``prerollOverdue()``.
        case awaitPreroll
        /// The pipeline is stuck: a new one takes its place (before the next action runs).
        case replacePipeline
        /// `status`, the loaded entry or the timing changed: tell clients.
        case publish
        /// The entry cannot be played: mark it, say why, and go on with what follows.
        case skip(EntryID, reason: String)
        /// The loaded stream ended: go on with what follows, or stop at the end.
        case advance(from: EntryID)
    }

    /// What the commands received ask for.
    package private(set) var intent: PlaybackStatus = .stopped
    package private(set) var phase: Phase = .idle
    /// What clients are told.
    private(set) var status: PlaybackStatus = .stopped
    /// The entry `status` was last settled with (nil when stopped).
    package private(set) var settledEntry: EntryID?
    /// The playback rate; a stream loaded at another rate than 1 seeks once prerolled to apply it.
    private(set) var rate: Double = 1
    /// The pipeline reported an error since it was last taken down: the next teardown goes
    /// to NULL, so that nothing of the failed stream is reused.
    private(set) var pipelineFailed = false
    /// The entry GStreamer got stuck on and that is being tried once more.
    private(set) var retryingAfterStuck: EntryID?
    /// Counts loads: a load of the entry already shown (a restart) is published all the same,
    /// so that clients hear of the new timing.
    private(set) var loads = 0
    private var settledLoad = 0
    /// The load whose change toward `intent` a state check found still under way: found so
    /// at the next check too, the change is taken for stalled.
    private var changeUnderWay: Int?

    /// Loaded, and the pipeline confirmed PLAYING.
    var isPlaying: Bool {
        if case .loaded(_, .playing) = phase { return true }
        return false
    }

    /// Loaded, and waiting for the pipeline to confirm the state asked for (Play, Pause, or
    /// the end of a preroll, a seek or buffering).
    var awaitsState: Bool {
        if case .loaded(_, nil) = phase { return true }
        return false
    }

    /// A flushing seek is in flight.
    var isSeeking: Bool {
        if case .seeking = phase { return true }
        return false
    }

    /// Loaded, not prerolling, seeking nor buffering: the pipeline's reports are about it.
    var isSettledLoad: Bool {
        if case .loaded = phase { return true }
        return false
    }

    /// The loaded entry's load, whatever the phase (nil when idle).
    var loaded: Load? {
        switch phase {
        case .idle: nil
        case .prerolling(let load, _, _), .seeking(let load, _, _), .loaded(let load, _), .buffering(let load): load
        case .outputLost(let load, _): load
        }
    }

    /// The entry whose stream is in the pipeline (nil when nothing is, or its output failed).
    package var loadedEntry: EntryID? {
        if case .outputLost = phase { return nil }
        return loaded?.entry
    }

    /// Where the commands received so far lead within the loaded entry, when that is not
    /// simply where the pipeline is: a seek or start position still on its way, or where the
    /// output failed. Nil otherwise.
    package var pendingPosition: Duration? {
        switch phase {
        case .prerolling(let load, let seek, let queued):
            queued.map { $0.position ?? .zero } ?? seek ?? load.position ?? .zero
        case .seeking(_, let target?, _): target
        case .outputLost(_, let at): at
        default: nil
        }
    }

    /// The entry that plays once the load in progress is done: a queued load's, else the loaded one.
    package var upcomingEntry: EntryID? {
        if case .prerolling(_, _, let queued?) = phase { return queued.entry }
        return loaded?.entry
    }

    // MARK: - Commands

    /// Loads an entry and heads for `intent` (paused or playing).
    mutating func load(_ load: Load, intent: PlaybackStatus) -> [Action] {
        precondition(intent != .stopped, "a load heads for paused or playing")
        self.intent = intent
        if case .prerolling(let current, let seek, _) = phase {
            phase = .prerolling(current, seek: seek, queued: load)
            return [.awaitPreroll]
        }
        return start(load)
    }

    /// Play: resumes what is loaded, or loads again an entry whose output failed. False when
    /// nothing is loaded (the owner then loads the selected entry).
    mutating func play() -> (handled: Bool, actions: [Action]) {
        switch phase {
        case .idle:
            return (false, [])
        case .outputLost(let load, let at):
            intent = .playing
            return (true, start(Load(entry: load.entry, uri: load.uri, position: at)))
        case .prerolling, .seeking, .buffering:
            intent = .playing
            return (true, [])
        case .loaded(let load, let reached):
            intent = .playing
            if reached == .playing { return (true, settle(load.entry)) }
            phase = .loaded(load, reached: nil)
            return (true, [.setState(.playing)])
        }
    }

    mutating func pause() -> [Action] {
        guard intent != .stopped else { return [] }
        intent = .paused
        switch phase {
        case .loaded(let load, let reached):
            if reached == .paused { return settle(load.entry) }
            phase = .loaded(load, reached: nil)
            return [.setState(.paused)]
        case .buffering(let load):
            phase = .loaded(load, reached: nil)
            return [.setState(.paused)]
        case .outputLost:
            return []
        case .idle, .prerolling, .seeking:
            return []  // a load or seek in progress settles paused
        }
    }

    mutating func stop() -> [Action] {
        let wasLoaded = phase != .idle
        let failed = pipelineFailed
        intent = .stopped
        phase = .idle
        pipelineFailed = false
        retryingAfterStuck = nil
        var actions: [Action] = wasLoaded ? [.unload(fresh: failed)] : []
        if status != .stopped || settledEntry != nil {
            status = .stopped
            settledEntry = nil
        }
        actions.append(.publish)
        return actions
    }

    /// Seeks within the loaded entry. `nextTaken`: playbin already holds the next URI for a
    /// gapless switch, so a seek would land in that track: the entry is loaded again there.
    /// False when nothing is loaded to seek in.
    mutating func seek(to target: Duration, nextTaken: Bool = false) -> (accepted: Bool, actions: [Action]) {
        let target = max(target, .zero)
        switch phase {
        case .idle:
            return (false, [])
        case .outputLost(let load, _):
            phase = .outputLost(load, at: target)
            return (true, [.publish])
        case .prerolling(let load, let seek, let queued?):
            phase = .prerolling(load, seek: seek, queued: Load(entry: queued.entry, uri: queued.uri, position: target))
            return (true, [])
        case .prerolling(let load, _, nil):
            phase = .prerolling(load, seek: target, queued: nil)
            return (true, [])
        case .seeking(let load, _, let reached):
            if nextTaken { return (true, start(Load(entry: load.entry, uri: load.uri, position: target))) }
            phase = .seeking(load, target: target, reached: reached)
            return (true, [.seek(target)])
        case .loaded(let load, let reached):
            if nextTaken { return (true, start(Load(entry: load.entry, uri: load.uri, position: target))) }
            phase = .seeking(load, target: target, reached: reached)
            return (true, [.seek(target)])
        case .buffering(let load):
            if nextTaken { return (true, start(Load(entry: load.entry, uri: load.uri, position: target))) }
            phase = .seeking(load, target: target, reached: nil)
            return (true, [.seek(target)])
        }
    }

    /// Sets the rate; a loaded stream seeks to `position` (where it is) to apply it.
    mutating func setRate(_ rate: Double, position: Duration) -> [Action] {
        guard rate != self.rate else { return [] }
        self.rate = rate
        switch phase {
        case .prerolling(let load, let seek, let queued):
            if queued == nil, seek == nil { phase = .prerolling(load, seek: .zero, queued: nil) }
            return []
        case .loaded, .seeking, .buffering:
            return seek(to: position).actions
        case .idle, .outputLost:
            return [.publish]
        }
    }

    // MARK: - What the pipeline reported

    /// ASYNC_DONE: a preroll or a flushing seek completed. `current` and `pending`: the
    /// pipeline's states then.
    mutating func asyncDone(current: Pipeline.State, pending: Pipeline.State) -> [Action] {
        switch phase {
        case .prerolling(let load, let seek, let queued):
            if let queued { return start(queued) }
            if let seek {
                phase = .seeking(load, target: seek, reached: nil)
                return [.seek(seek)]
            }
            phase = .loaded(load, reached: nil)
            return settleIfReached(current: current, pending: pending)
        case .seeking(let load, _, _):
            phase = .loaded(load, reached: nil)
            let newTiming = status == intent && settledEntry == load.entry
            let actions = settleIfReached(current: current, pending: pending)
            // Clients hear of the new timing once, with the settled state when it comes too.
            return newTiming && !actions.contains(.publish) ? [.publish] + actions : actions
        case .loaded:
            return settleIfReached(current: current, pending: pending)
        case .idle, .buffering, .outputLost:
            return []
        }
    }

    /// The pipeline as a whole reached `new`, with nothing more pending.
    mutating func stateReached(_ new: Pipeline.State) -> [Action] {
        switch phase {
        case .loaded(let load, _):
            return reached(new, load)
        case .prerolling(let load, nil, nil):
            // Loaded straight to PLAYING: its state can come before its ASYNC_DONE.
            guard new == .playing else { return [] }
            phase = .loaded(load, reached: nil)
            // Pause came during the preroll: the pipeline went on to PLAYING all the same.
            guard intent == .playing else { return [.setState(.paused)] }
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
    /// no message to come): the entry is loaded again where it was, from NULL, as for a
    /// pipeline that got stuck, and stalled once more it pauses there until Play.
    mutating func stateChecked(
        current: Pipeline.State, pending: Pipeline.State, position: Duration = .zero
    ) -> [Action] {
        guard awaitsState, case .loaded(let load, _) = phase else { return [] }
        let wanted: Pipeline.State = intent == .playing ? .playing : .paused
        guard pending == wanted, current != wanted else {
            changeUnderWay = nil
            return settleIfReached(current: current, pending: pending)
        }
        guard changeUnderWay == loads else {
            changeUnderWay = loads
            return []
        }
        changeUnderWay = nil
        let restart = Load(entry: load.entry, uri: load.uri, position: position)
        guard retryingAfterStuck != load.entry else {
            retryingAfterStuck = nil
            phase = .outputLost(restart, at: position)
            intent = .paused
            status = .paused
            settledEntry = load.entry
            return [.unload(fresh: true), .publish]
        }
        retryingAfterStuck = load.entry
        pipelineFailed = true
        return start(restart)
    }

    /// A state change GStreamer refused at once (the errors it queued were reported first).
    mutating func stateChangeFailed() -> [Action] {
        guard let load = loadedOrNil() else { return [] }
        if case .prerolling(let old, _, let queued?) = phase {
            // As for an error: the stream being left is marked, and the load asked for goes on.
            return [.skip(old.entry, reason: "the pipeline could not start it")] + start(queued)
        }
        return fail(load, reason: "the pipeline could not start it")
    }

    /// A seek GStreamer refused: the stream stays where it was.
    mutating func seekRefused() -> [Action] {
        guard case .seeking(let load, _, let reached) = phase else { return [] }
        if let reached, reached != intent {
            // Play or Pause came during the seek: the pipeline is still where it was.
            phase = .loaded(load, reached: nil)
            return [.publish, .setState(intent == .playing ? .playing : .paused)]
        }
        phase = .loaded(load, reached: reached)
        return [.publish]
    }

    /// The stream failed (`inOutput`: the audio output did, not the track). `position`: where
    /// the loaded entry was.
    mutating func failed(reason: String, inOutput: Bool, position: Duration) -> [Action] {
        pipelineFailed = true
        guard let load = loadedOrNil() else { return [] }  // an echo of a stream already taken down
        // The output is not the track's fault: what was asked for last pauses where it was to start.
        if inOutput { return outputLost(upcomingLoad() ?? load, at: position) }
        if case .prerolling(let old, _, let queued?) = phase {
            // The stream being left failed while it prerolled: mark it, and go on with the load asked for.
            return [.skip(old.entry, reason: reason)] + start(queued)
        }
        return fail(load, reason: reason)
    }

    /// The next stream handed over for a gapless switch failed while the loaded one still
    /// played: the loaded one is loaded again at `position`, from a new pipeline state.
    mutating func handOverFailed(position: Duration) -> [Action] {
        pipelineFailed = true
        guard let load = loadedOrNil() else { return [] }
        if case .prerolling(_, _, let queued?) = phase { return start(queued) }  // what was asked for last
        return start(Load(entry: load.entry, uri: load.uri, position: position))
    }

    /// A stream the pipeline held failed: the next teardown goes to NULL.
    mutating func noteFailure() {
        pipelineFailed = true
    }

    /// The load in progress has not prerolled in time: it is loaded again, from NULL, where
    /// it was asked for.
    mutating func prerollTimedOut() -> [Action] {
        guard case .prerolling(let load, let seek, nil) = phase else { return [] }
        pipelineFailed = true
        return start(Load(entry: load.entry, uri: load.uri, position: seek ?? load.position))
    }

    /// End of stream.
    mutating func endOfStream() -> [Action] {
        if case .prerolling(_, _, let queued?) = phase { return start(queued) }
        guard let load = loadedOrNil() else { return [] }
        return [.advance(from: load.entry)]
    }

    /// playbin switched, gaplessly, to the stream handed over: `load` is what is heard now.
    mutating func switched(to load: Load) -> [Action] {
        guard loadedOrNil() != nil else { return [] }
        // The preroll is over (its stream played to the end): a load asked for meanwhile is
        // what the listener wants, whatever playbin switched to.
        if case .prerolling(_, _, let queued?) = phase { return start(queued) }
        // Pause came during the preroll, and a switch happens only while playing: the
        // pipeline is asked to pause, and clients hear of the new entry once it has.
        if case .prerolling = phase, intent == .paused, rate == 1 {
            retryingAfterStuck = nil
            phase = .loaded(load, reached: nil)
            return [.setState(.paused)]
        }
        var reached: PlaybackStatus? = nil
        if case .loaded(_, let confirmed) = phase { reached = confirmed }
        retryingAfterStuck = nil
        if rate != 1 {  // a new stream starts at rate 1
            phase = .seeking(load, target: nil, reached: reached)
            return settle(load.entry, force: true) + [.seek(.zero)]
        }
        phase = .loaded(load, reached: reached)
        return settle(load.entry, force: true)
    }

    /// The buffering level of a network stream that should play.
    ///
    /// It pauses only once the pipeline has confirmed PLAYING. GStreamer's BUFFERING message
    /// documentation has the application expect levels while the pipeline prerolls, and
    /// PAUSED asked for while the pipeline still heads for PLAYING on its own (after a
    /// preroll, a seek or the end of buffering) races GStreamer's own state change. The
    /// levels that follow PLAYING pause it if the buffer is still short.
    mutating func buffering(percent: Int) -> [Action] {
        guard intent == .playing else { return [] }
        switch phase {
        case .loaded(let load, .playing) where percent < 100:
            phase = .buffering(load)
            return [.setState(.paused)]
        case .buffering(let load) where percent >= 100:
            phase = .loaded(load, reached: nil)
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
        guard intent == .playing else { return [] }
        switch phase {
        case .prerolling, .seeking, .loaded: return [.reselectClock]
        case .idle, .buffering, .outputLost: return []
        }
    }

    /// The preroll the queued load waits for did not end in time: load it anyway.
    mutating func prerollOverdue() -> [Action] {
        guard case .prerolling(_, _, let queued?) = phase else { return [] }
        return start(queued)
    }

    /// A call into GStreamer did not return in time. `position`: where the loaded entry was.
    /// The entry is loaded again in a new pipeline; stuck twice on the same entry, the
    /// transport pauses there, and Play tries again.
    mutating func stuck(position: Duration) -> [Action] {
        pipelineFailed = false
        guard let load = upcomingLoad() else {
            if case .outputLost = phase { return [.replacePipeline] }
            phase = .idle
            return [.replacePipeline]
        }
        let restart = Load(entry: load.entry, uri: load.uri, position: pendingPosition ?? position)
        if retryingAfterStuck == load.entry || intent == .stopped {
            retryingAfterStuck = nil
            phase = .outputLost(restart, at: restart.position ?? .zero)
            if intent != .stopped { intent = .paused }
            var actions: [Action] = [.replacePipeline]
            if status != .stopped {
                status = .paused
                settledEntry = load.entry
                actions.append(.publish)
            }
            return actions
        }
        retryingAfterStuck = load.entry
        phase = .idle
        return [.replacePipeline] + start(restart)
    }

    // MARK: - Helpers

    private func loadedOrNil() -> Load? {
        if case .outputLost = phase { return nil }
        return loaded
    }

    /// The load that plays next: a queued one, else the loaded one.
    private func upcomingLoad() -> Load? {
        if case .prerolling(_, _, let queued?) = phase { return queued }
        return loadedOrNil()
    }

    private mutating func start(_ load: Load) -> [Action] {
        loads += 1
        let seek = load.position ?? (rate != 1 ? .zero : nil)
        phase = .prerolling(load, seek: seek, queued: nil)
        let target: Pipeline.State = intent == .playing && seek == nil ? .playing : .paused
        let fresh = pipelineFailed
        pipelineFailed = false
        return [.load(load, target, fresh: fresh)]
    }

    private mutating func fail(_ load: Load, reason: String) -> [Action] {
        phase = .idle
        let fresh = pipelineFailed
        pipelineFailed = false
        return [.unload(fresh: fresh), .skip(load.entry, reason: reason)]
    }

    private mutating func outputLost(_ load: Load, at position: Duration) -> [Action] {
        phase = .outputLost(load, at: position)
        pipelineFailed = false
        guard intent != .stopped else {
            phase = .idle
            return [.unload(fresh: true)] + (status == .stopped ? [] : stopPublishing())
        }
        intent = .paused
        status = .paused
        settledEntry = load.entry
        return [.unload(fresh: true), .publish]
    }

    private mutating func stopPublishing() -> [Action] {
        status = .stopped
        settledEntry = nil
        return [.publish]
    }

    /// After a preroll or a seek: go on to PLAYING if that is wanted, and settle the state the
    /// pipeline is in if it is the wanted one.
    private mutating func settleIfReached(current: Pipeline.State, pending: Pipeline.State) -> [Action] {
        guard case .loaded(let load, _) = phase else { return [] }
        if intent == .playing && current != .playing && pending != .playing { return [.setState(.playing)] }
        // Pause came while a load or a seek headed for PLAYING: nothing else pauses it.
        if intent == .paused && (current == .playing || pending == .playing) { return [.setState(.paused)] }
        guard pending == .voidPending else { return [] }
        return reached(current, load)
    }

    private mutating func reached(_ new: Pipeline.State, _ load: Load) -> [Action] {
        let confirmed: PlaybackStatus? = new == .playing ? .playing : new == .paused ? .paused : nil
        guard let confirmed, confirmed == intent else { return [] }
        phase = .loaded(load, reached: confirmed)
        retryingAfterStuck = nil
        return settle(load.entry)
    }

    /// Tells clients the intent the pipeline has reached, for `entry`, if it is news.
    private mutating func settle(_ entry: EntryID, force: Bool = false) -> [Action] {
        let newStatus = force ? (status == .stopped ? intent : status) : intent
        guard force || status != newStatus || settledEntry != entry || settledLoad != loads else { return [] }
        guard newStatus != .stopped else { return [] }
        status = newStatus
        settledEntry = entry
        settledLoad = loads
        return [.publish]
    }
}
