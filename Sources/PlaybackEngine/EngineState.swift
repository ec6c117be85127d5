import Media
import PlaybackPipeline
import PlaybackVocabulary

/// Everything the engine decides with, as one value, and the pure steps that move it.
///
/// The ``Engine`` keeps this value private, beside the pipeline handle, its timers and its
/// owner. A command or a pipeline report goes through one step here, which returns the
/// ``Transport/Action``s to carry out (or a decision the engine logs and acts on); instants
/// are handed in, so a test drives it without GStreamer or a clock. It holds the transport,
/// the position clock and the facts of the loaded stream, the numbers that tell a current
/// report from a stale one, whose STREAM_START comes next, and the watches the engine's
/// decisions rest on (``SeeksInFlight``, ``ErrorAttribution``, ``PrerollWatch``,
/// ``EarlyEnd``, ``PositionFollow``, ``VolumeEchoes``).
struct EngineState: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// The transport state: what is loaded, and what clients are told of it.
    var transport = Transport()
    /// Where playback is, extrapolated from the pipeline's last report.
    var clock = PositionClock()
    /// What the pipeline last said of the loaded stream (its duration, whether it seeks).
    var facts = Pipeline.Facts()
    /// The factory names of the elements the loaded stream plays through.
    var elementNames: [String] = []
    /// How many pipelines GStreamer got stuck in and were replaced.
    var pipelinesReplaced = 0
    /// The volume, on the cubic scale of desktop mixers (0...1).
    var volume: Double = 1
    /// Which pipeline's events are heard: a replaced one's are not.
    var pipelineNumber = 0
    /// Which load's events are heard: those of a stream taken down are not.
    var loadNumber = 0
    /// The next STREAM_START of this load is its own stream's, not a gapless switch.
    var awaitingOwnStreamStart = false
    var positionFollow = PositionFollow()
    var seeks = SeeksInFlight()
    var errors = ErrorAttribution()
    var volumeEchoes = VolumeEchoes()
    var prerollWatch = PrerollWatch()
    var earlyEnd = EarlyEnd()
    /// The tags heard in the loaded network stream so far.
    var streamTags = StreamTags()
    /// When a network stream counts as stalled, and the wait in progress.
    var streamWatch = StreamWatch()
    /// While the transport plays: whether the audio moves, and what is watched.
    var progress = ProgressFollow()
    /// What the commands told of the entries loaded or handed over (their length, their
    /// gain); an entry that left the queue is forgotten.
    private(set) var entries: [UInt64: EntryFacts] = [:]

    /// How fast the audio moves against the rate asked for, while the transport plays: 1,
    /// unless the output takes it slower (or faster) than real time, as the pipeline's answers
    /// showed. The clock runs at the rate times this, so that it follows such an output
    /// calmly, without a correction every second.
    private(set) var pace = 1.0
    /// A pace closer to 1 than this is the jitter of the answers, not a slow output.
    static let paceTolerance = 0.05
    /// How far a pace refined while the position is within the tolerance must have moved
    /// the position over its stretch (see ``refinePace(_:predicted:at:)``).
    static let paceRefinement = Duration.milliseconds(100)

    /// The rate the clock runs at while the transport plays, else 0.
    var runningRate: Double { transport.isPlaying ? transport.rate * pace : 0 }

    // MARK: - Pipelines and loads

    /// A new pipeline is made: returns its number, whose events are heard from now on.
    mutating func pipelineMade() -> Int {
        pipelineNumber += 1
        return pipelineNumber
    }

    /// The stuck pipeline was replaced: nothing it or its load says is heard any more.
    mutating func pipelineReplaced() {
        pipelinesReplaced += 1
        loadNumber += 1
    }

    /// Whether a report of pipeline `pipeline` is heard: a replaced pipeline's is not.
    func hears(pipeline: Int) -> Bool { pipeline == pipelineNumber }

    /// Whether a report of pipeline `pipeline` about load `load` is about what is loaded now.
    func hears(pipeline: Int, load: Int) -> Bool { hears(pipeline: pipeline) && load == loadNumber }

    /// The state's part of carrying out `action` at `now`, before the engine carries out the
    /// rest: a load or unload makes the reports of what was loaded stale, a pause stops the
    /// clock, a seek is counted in flight, a replaced pipeline is counted. Returns how long
    /// a load's preroll may take (nil: not timed, or not a load).
    mutating func carryingOut(_ action: Transport.Action, now: Instant) -> Duration? {
        switch action {
        case .load(let load, _, _):
            return loadStarted(load, isLocal: MediaSources.isLocal(load.uri), now: now)
        case .unload:
            unloaded(now: now)
        case .setState(.paused):
            clock.changeRate(to: 0, at: now)
        case .seek:
            seeks.sent()
        case .replacePipeline:
            pipelineReplaced()
        default:
            break
        }
        return nil
    }

    /// A command told `facts` of the entry `id`, loaded or handed over.
    mutating func know(_ id: UInt64, _ facts: EntryFacts) {
        entries[id] = facts
    }

    /// The entry `id` left the queue.
    mutating func forget(_ id: UInt64) {
        entries[id] = nil
    }

    /// `load` starts loading at `now` (`isLocal`: a file): its own STREAM_START comes next,
    /// and the clock stands where it starts. Returns how long its preroll may take (nil: not
    /// timed, see ``PrerollWatch``). Only its entry's facts are kept: what is handed over
    /// after it is told anew.
    mutating func loadStarted(_ load: Transport.Load, isLocal: Bool, now: Instant) -> Duration? {
        entries = entries[load.entry].map { [load.entry: $0] } ?? [:]
        loadNumber += 1
        seeks.loaded()
        awaitingOwnStreamStart = true
        positionFollow.loaded()
        pace = 1
        facts = Pipeline.Facts()
        clock.set(load.position ?? .zero, rate: 0, at: now)
        return prerollWatch.loadStarted(load.entry, isLocal: isLocal)
    }

    /// What was loaded is taken down at `now`.
    mutating func unloaded(now: Instant) {
        loadNumber += 1
        clock.set(.zero, rate: 0, at: now)
    }

    /// STREAM_START: true when it is a gapless switch to the stream handed over, false when
    /// it is the loaded stream's own.
    mutating func streamStarted() -> Bool {
        guard awaitingOwnStreamStart else { return true }
        awaitingOwnStreamStart = false
        return false
    }

    /// playbin switched gaplessly to `load` at `now`: the clock starts again from zero.
    mutating func switched(to load: Transport.Load, now: Instant) -> [Transport.Action] {
        positionFollow.switched(at: now)
        pace = 1
        clock.set(.zero, rate: runningRate, at: now)
        return transport.switched(to: load)
    }

    // MARK: - Commands

    /// Seek: the clock stands at `target` until the pipeline says otherwise, and a position
    /// asked for while loading is told at once. ``Transport/Action/refused`` when nothing is
    /// loaded to seek in.
    mutating func seek(to target: Duration, nextTaken: Bool, now: Instant) -> [Transport.Action] {
        let actions = transport.seek(to: target, nextTaken: nextTaken)
        guard !actions.contains(.refused) else { return actions }
        positionFollow.loaded()
        pace = 1
        clock.set(target, rate: 0, at: now)
        return actions.isEmpty ? [.timingChanged] : actions
    }

    /// Loads the current stream again at `position`.
    mutating func reload(at position: Duration, now: Instant) -> [Transport.Action] {
        clock.set(position, rate: 0, at: now)
        return transport.seek(to: position, nextTaken: true)
    }

    /// Sets the rate, applied from `position` by a seek when a stream is loaded. Clients see
    /// the rate asked for at once; the seek that applies it follows.
    mutating func setRate(_ rate: Double, from position: Duration, now: Instant) -> [Transport.Action] {
        let actions = transport.setRate(rate, position: position)
        positionFollow.paceInterrupted()
        pace = 1
        if actions.contains(where: { if case .seek = $0 { true } else { false } }) {
            clock.set(position, rate: 0, at: now)
        }
        return actions.contains(.publish) ? actions : actions + [.timingChanged]
    }

    /// Sets the volume at `now` (its echo from the output is not a change).
    mutating func setVolume(_ volume: Double, now: Instant) {
        self.volume = volume
        volumeEchoes.set(volume, at: now)
    }

    /// The position shown at `now`, and whether to ask the pipeline where it is (see
    /// ``PositionFollow``): zero when nothing is loaded.
    mutating func position(now: Instant) -> (position: Duration, query: Bool) {
        if case .outputLost(_, let at) = transport.phase { return (at, false) }
        guard transport.status != .stopped, transport.loadedEntry != nil else { return (.zero, false) }
        let query = positionFollow.shouldQuery(now: now, isPlaying: transport.isPlaying)
        let position = clock.position(at: now)
        positionFollow.shown(position, load: loadNumber)
        return (position, query)
    }

    // MARK: - What the pipeline reported

    /// The pipeline as a whole reached `new`, at `position` as of `at`.
    mutating func stateReached(_ new: Pipeline.State, position: Duration?, at: Instant) -> [Transport.Action] {
        let actions = transport.stateReached(new)
        // The clock takes the pipeline's word as of when it spoke, however late that is read.
        if let position, transport.isSettledLoad, (new == .playing) == transport.isPlaying {
            clock.set(position, rate: runningRate, at: at)
        }
        return actions
    }

    /// ASYNC_DONE with the pipeline's `facts`. Nil when it is an earlier seek's, overtaken by
    /// one still on its way: nothing changes then.
    mutating func asyncDone(_ facts: Pipeline.Facts) -> [Transport.Action]? {
        prerollWatch.prerolled()
        let seeking = transport.isSeeking
        if seeking, !seeks.completed(landed: facts.position, target: transport.pendingPosition) { return nil }
        self.facts = facts
        let actions = transport.asyncDone(current: facts.current, pending: facts.pending)
        if seeking || transport.isSettledLoad, let position = facts.position {
            clock.set(position, rate: runningRate, at: facts.at)
        }
        return actions
    }

    /// The pipeline said it is at `reported` as of `at`; `holding`: the progress watch holds
    /// the clock where the audio stands; `nextTaken`: playbin holds the next stream's URI
    /// (see ``PositionFollow/follows(_:predicted:at:nextTaken:)``). Returns where the clock
    /// had it when the clock takes the pipeline's word (clients are then told the new
    /// timing), else nil.
    mutating func positionReported(_ reported: Duration?, at: Instant, holding: Bool, nextTaken: Bool = false)
        -> Duration?
    {
        guard let reported, transport.isSettledLoad, !holding, at >= clock.stamp else { return nil }
        if transport.isPlaying { positionFollow.answered(reported, at: at) }
        let predicted = clock.position(at: at)
        guard positionFollow.follows(reported, predicted: predicted, at: at, nextTaken: nextTaken) else {
            return refinePace(reported, predicted: predicted, at: at)
        }
        // A first drift, not far, before any pace could be measured: the next answer measures
        // it, so that an output slower than real time costs one correction, not two.
        let drift = reported - predicted
        if transport.isPlaying, pace == 1, drift < PositionFollow.tolerance * 2,
            drift > .zero - PositionFollow.tolerance * 2,
            positionFollow.stretchPace(to: reported, at: at) == nil
        {
            return nil
        }
        // The clock drifted: at the pace the audio really moves, when that is not the rate.
        // Only the pipeline's own answers measure the pace: the clock's snapshot (a state
        // reached) comes before an output's latency, which would pass for a slow pace.
        if transport.isPlaying, transport.rate > 0, let observed = positionFollow.corrected(to: reported, at: at) {
            let measured = observed / transport.rate
            pace = abs(measured - 1) < Self.paceTolerance || measured <= 0 ? 1 : measured
        }
        clock.set(reported, rate: runningRate, at: at)
        return predicted
    }

    /// A slow (or fast) output whose position is still within the tolerance: the pace
    /// measured over the longer stretch is taken as the clock's rate from where the clock has
    /// it, so that the first estimate's error does not grow into a second correction (a
    /// `Seeked`). Clients see the rate change and no jump. Only a difference that would have
    /// moved the position by ``paceRefinement`` over the stretch counts: a bursty output's
    /// answers jitter by about that much, and a rate change each second would be noise.
    /// Nil when the pace stays.
    private mutating func refinePace(_ reported: Duration, predicted: Duration, at: Instant) -> Duration? {
        guard pace != 1, transport.isPlaying, transport.rate > 0,
            let (observed, stretch) = positionFollow.stretchPace(to: reported, at: at)
        else { return nil }
        let measured = observed / transport.rate
        guard measured > 0, stretch * abs(measured - pace) > Self.paceRefinement else { return nil }
        pace = measured
        clock.set(predicted, rate: runningRate, at: at)
        return predicted
    }

    /// The loaded stream ended with the output at `reported` (nil: where the clock is at
    /// `now`); `length`: the loaded entry's known length. A file that ended far before it is
    /// loaded again there, once, from NULL: the pipeline that ended it keeps, through READY,
    /// what made it end (see ``EarlyEnd``); otherwise what follows plays. The
    /// decision is nil when the stream was not settled (a preroll or seek ended it).
    mutating func endOfStream(at reported: Duration?, length: Duration?, now: Instant)
        -> (decision: EarlyEnd.Decision?, actions: [Transport.Action])
    {
        guard let load = transport.loaded, transport.isSettledLoad else { return (nil, transport.endOfStream()) }
        let position = reported ?? clock.position(at: now)
        let decision = earlyEnd.ended(
            load.entry, at: position, length: length, isLocal: MediaSources.isLocal(load.uri))
        if case .reload(let at) = decision {
            let failed = transport.failedElsewhere()
            return (decision, failed + reload(at: at, now: now))
        }
        return (decision, transport.endOfStream())
    }

    /// The stream handed over for a gapless switch failed, with an error from `source`, while
    /// the loaded one played: its later errors are echoes, the reload of the loaded one is
    /// timed, and the loaded one is loaded again where it is at `now`.
    mutating func handOverFailed(source: ElementPath, now: Instant) -> [Transport.Action] {
        errors.handOverFailed(source: source)
        prerollWatch.handOverFailed()
        return transport.handOverFailed(position: clock.position(at: now))
    }

    /// The loaded stream failed (`inOutput`: the output did). Returns where it was, never
    /// before what clients were shown of it when the output failed, and the actions.
    mutating func failed(reason: String, inOutput: Bool, now: Instant)
        -> (position: Duration, actions: [Transport.Action])
    {
        var position = transport.pendingPosition ?? clock.position(at: now)
        if inOutput, let shown = positionFollow.furthestShown(load: loadNumber) { position = max(position, shown) }
        return (position, transport.failed(reason: reason, inOutput: inOutput, position: position))
    }

    /// The preroll limit `limit` of load number `load` passed; `decodedAudio`: some of its
    /// decoded audio reached the output. Nil when that load is gone or no longer prerolls;
    /// else what ``PrerollWatch`` decided, with the transport's actions (none for a failed
    /// output, which the engine treats as the output's error).
    mutating func prerollLimitPassed(load: Int, limit: Duration, decodedAudio: Bool)
        -> (decision: PrerollWatch.Decision, actions: [Transport.Action])?
    {
        guard load == loadNumber, case .prerolling = transport.phase,
            let decision = prerollWatch.timedOut(decodedAudio: decodedAudio)
        else { return nil }
        let seconds = StreamWatch.seconds(limit)
        switch decision {
        case .skip:
            let reason = "it did not start within \(seconds)"
            return (decision, transport.failed(reason: reason, inOutput: false, position: .zero))
        case .undecodable:
            let reason = "no audio was decoded from it within \(seconds)"
            return (decision, transport.failed(reason: reason, inOutput: false, position: .zero))
        case .retry:
            return (decision, transport.prerollTimedOut())
        case .outputFailed:
            return (decision, [])
        }
    }

    /// A call into GStreamer made at `since` did not return in time (see
    /// ``Transport/stuck(position:ended:)``). The audio stood from then on, so the entry
    /// goes on from where the clock had it when the call was made, never from a time the
    /// clock ran on while GStreamer was stuck; at or past its `length`, it has ended.
    mutating func stuck(since: Instant, length: Duration?) -> [Transport.Action] {
        let position = clock.position(at: max(since, clock.stamp))
        let actions = transport.stuck(position: position, ended: length.map { position >= $0 } ?? false)
        // Skipped or at its end, nothing plays until what follows is loaded.
        if case .idle = transport.phase { clock.set(position, rate: 0, at: max(since, clock.stamp)) }
        return actions
    }

    /// The output's volume is now `heard`: true when a mixer changed it, which the engine's
    /// volume then follows; false for an echo of Quaver's own change.
    mutating func outputVolumeChanged(_ heard: Double, now: Instant) -> Bool {
        guard volumeEchoes.isChange(heard, current: volume, at: now) else { return false }
        volume = min(max(heard, 0), 1)
        return true
    }

    /// The transport settled (see ``Transport/Action/publish``): the clock runs at the rate
    /// while the pipeline plays and the audio moves (`holding`: it stands).
    mutating func settled(holding: Bool, now: Instant) {
        guard transport.status == .playing || transport.status == .paused else { return }
        if !transport.isPlaying { positionFollow.paceInterrupted() }
        clock.changeRate(to: transport.isPlaying && !holding ? runningRate : 0, at: now)
    }
}
