import Dispatch
import FoundationEssentials
package import Logging
package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

/// Plays one entry at a time: the only owner of the ``Pipeline``, and of what follows it.
///
/// The engine carries out what its state (``EngineState``, over the ``Transport``) decides,
/// and feeds it what the pipeline reports; its timers turn a silent pipeline into an event
/// (``PrerollWatch``, ``StreamWatch``, and the replacement of a stuck pipeline). It knows
/// entries by id and URI, and what each command tells of them (``EntryFacts``); what follows
/// an entry and what to do when one fails are its owner's, the ``Player``'s, which hears of
/// them as ``EngineReport``s once the step that caused them is done. No call waits on
/// GStreamer: the pipeline runs each command on its own queue and answers with events.
@MainActor
package final class Engine {
    /// Everything the engine decides with. It changes only through its steps, whose actions
    /// ``run(_:)`` carries out (the engine's events, streams and progress are extensions in
    /// files of their own, which Swift's `private` would not reach); its owner reads it
    /// through the accessors below.
    var state = EngineState()
    /// Hears the engine's reports, in order, each once the step that caused it is done.
    package var onReport: (@MainActor (EngineReport) -> Void)?
    /// Reports not delivered yet: a step under way (`depth` above zero) or a delivery in
    /// progress holds them, so that no report handler runs inside a step.
    private var outbox: [EngineReport] = []
    private var depth = 0
    private var delivering = false

    package private(set) var pipeline: Pipeline!
    /// Where the audio goes.
    let output: AudioOutput
    /// The output's sink description (nil: the system's).
    var audioSink: String? { output.sinkDescription }
    let stuckLimit: Duration
    let logger: Logger

    let prerollTimer = Countdown()
    /// Runs while a load waits for the preroll in progress.
    let prerollWait = Countdown()
    /// Runs while the pipeline has not confirmed the state asked for (see ``watchState()``).
    let stateCheck = Countdown()
    /// How long the pipeline has to confirm a state before it is asked where it is.
    static let stateCheckDelay = EngineState.stateCheckDelay
    /// Runs while a network stream is waited for (see ``StreamWatch``).
    let streamTimer = Countdown()
    /// Runs while playing, until the next sample of the audio's progress.
    let progressSampler = Countdown()
    /// Runs while the fallback sink plays, until the next look for a sound server.
    let serverCheck = Countdown()

    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    /// - Parameter stuckLimit: how long a call into GStreamer may take before the pipeline is
    ///   taken for stuck and replaced.
    package convenience init(audioSink: String?, stuckLimit: Duration, logger: Logger) throws {
        try self.init(output: AudioOutput(audioSink: audioSink), stuckLimit: stuckLimit, logger: logger)
    }

    /// - Parameter output: where the audio goes.
    /// - Parameter stuckLimit: how long a call into GStreamer may take before the pipeline is
    ///   taken for stuck and replaced.
    package init(output: AudioOutput, stuckLimit: Duration, logger: Logger) throws {
        self.output = output
        self.stuckLimit = stuckLimit
        self.logger = logger
        state.progress.watch.waitsForOutput = output.waitsForReader
        state.progress.outputStallReason = output.stallReason
        do {
            try Pipeline.validate(audioSink: output.sinkDescription)
        } catch {
            throw MediaError(error.description)
        }
        pipeline = makePipeline(number: state.pipelineNumber)
    }

    isolated deinit {
        pipeline?.release()  // nil when init threw
    }

    /// A pipeline whose events are heard as pipeline number `number`'s.
    private func makePipeline(number: Int) -> Pipeline {
        Pipeline(audioSink: audioSink, volume: state.volume, stuckLimit: stuckLimit) { [weak self] delivery in
            self?.receive(delivery, fromPipeline: number)
        }
    }

    // MARK: - What the owner reads

    /// The transport state: what is loaded, and what clients are told of it.
    package var transport: Transport { state.transport }
    /// What the pipeline last said of the loaded stream (its duration, whether it seeks).
    package var facts: Pipeline.Facts { state.facts }
    /// The factory names of the elements the loaded stream plays through.
    package var pipelineElementNames: [String] { state.elementNames }
    /// How many pipelines GStreamer got stuck in and were replaced.
    package var pipelinesReplaced: Int { state.pipelinesReplaced }
    /// The volume, on the cubic scale of desktop mixers (0...1).
    package var volume: Double { state.volume }
    /// Where playback is, extrapolated from the pipeline's last report.
    var clock: PositionClock { state.clock }
    /// Which load's events are heard: those of a stream taken down are not.
    var loadNumber: Int { state.loadNumber }
    /// What clients are told: changes only once the pipeline confirms it.
    package var status: PlaybackStatus { transport.status }
    /// The playback rate (1: normal speed).
    package var rate: Double { transport.rate }
    /// The rate the audio really moves at while it plays: ``rate``, unless the output takes
    /// it slower or faster than real time.
    package var effectiveRate: Double { transport.rate * state.pace }
    /// The entry whose stream is loaded (or being loaded).
    var loadedEntry: UInt64? { transport.loadedEntry }
    /// Whether playbin holds the next entry's URI for a gapless switch.
    package var hasHandedOver: Bool { pipeline.handoff.hasCommitted }

    /// The position, extrapolated from the pipeline's last report: zero when nothing is
    /// loaded. While playing, one read a second asks the pipeline in the background, so that
    /// a drift (an output slower than real time) is corrected.
    package var position: Duration {
        let now = ContinuousClock.now
        let position = state.position(at: now)
        // A read may come at any time, even while a step runs: its one action, a query of
        // the pipeline, is carried out at once, outside the step's bookkeeping.
        for action in state.positionShown(now: now) { perform(action) }
        return position
    }

    // MARK: - Commands

    /// Loads `load`, an entry with `facts`, toward `intent` (the pipeline reports when it is
    /// there).
    package func load(_ load: Transport.Load, facts: EntryFacts, intent: PlaybackStatus) {
        run(state.load(load, facts: facts, intent: intent))
    }

    /// The entry `id` left the queue: a stream of it that stalls is no longer the queue's.
    package func forget(_ id: UInt64) {
        run(state.forget(id))
    }

    /// Plays the entry loaded or being loaded; false when the transport has none to play.
    package func resume() -> Bool {
        run(state.play())
    }

    package func pause() { run(state.pause()) }

    /// Unloads the stream; the position goes back to zero.
    package func stop() { run(state.stop()) }

    /// Seeks in the loaded stream; false when there is nothing to seek in.
    package func seek(to target: Duration) -> Bool {
        run(state.seek(to: target, nextTaken: pipeline.handoff.takesNext, now: .now))
    }

    /// Loads the current stream again at `position`, so that a new next entry (playbin took
    /// another one already) applies at its end.
    package func reload(at position: Duration) {
        run(state.reload(at: position, now: .now))
    }

    /// Sets the rate (already clamped), applied from `position`.
    package func setRate(_ rate: Double, from position: Duration) {
        run(state.setRate(rate, from: position, now: .now))
    }

    /// Sets the volume (already clamped to 0...1).
    package func setVolume(_ volume: Double) {
        run(state.setVolume(volume, now: .now))
    }

    /// Tells playbin what follows the loaded stream (or, after a gapless switch, the stream
    /// switched to), for a gapless switch. Given at once, not through the pipeline's queue:
    /// the `about-to-finish` handler may be waiting for it, and a command queued on that
    /// queue may be waiting on the handler. The load number keeps it from a stream taken down.
    /// `facts`: those of the entry handed over, if one is.
    package func prepareNext(_ answer: GaplessHandoff.Answer, facts: EntryFacts? = nil) {
        if case .item(let item) = answer, let facts { run(state.know(item.entryID, facts)) }
        pipeline.handoff.answer(answer, load: loadNumber)
    }

    /// Moves the transport by `input` without carrying out its actions: a test drops them to
    /// play a pipeline that never heard the command. The input must not read the engine: its
    /// arguments are worked out before.
    @discardableResult
    func decide(_ input: (inout Transport) -> [Transport.Action]) -> Bool {
        run(state.decide(input))
    }

    /// Stops the pipeline for good; `done` is called once GStreamer has let go of it.
    package func shutdown(done: (@MainActor @Sendable () -> Void)?) {
        run(state.shutDown())
        stateCheck.cancel()
        pipeline.release(freed: done)
    }

    // MARK: - Carrying out the state's actions

    /// Carries out the actions of a step of the state, in order; reports wait until they all
    /// ran. False when the transport refused the command (nothing is loaded for it).
    @discardableResult
    func run(_ actions: [EngineState.Action]) -> Bool {
        depth += 1
        // Reports wait until the step is done, so no owner's answer runs inside one.
        assert(depth == 1, "Engine.run is never re-entered")
        defer {
            depth -= 1
            deliverReports()
        }
        for action in actions { perform(action) }
        return !actions.contains(.transport(.refused))
    }

    /// Carries out one action. A transport's action and a stream watch armed are the
    /// state's steps in turn (their part of the state is taken when their turn comes), whose
    /// actions are carried out at once, within the same step.
    private func perform(_ action: EngineState.Action) {
        switch action {
        case .transport(let action):
            for next in state.carryingOut(action, now: .now) { perform(next) }
        case .followTransport(let timingChanged):
            watchState()
            for next in state.followProgress(now: .now) { perform(next) }
            if timingChanged { report(.changed(.transport)) }
        case .loadPipeline(let uri, let target, let load, let fresh, let loudness):
            pipeline.load(uri, state: target, number: load, fresh: fresh, loudness: loudness)
        case .unloadPipeline(let load, let fresh):
            pipeline.unload(number: load, fresh: fresh)
        case .setPipelineState(let target):
            pipeline.setState(target)
        case .seekPipeline(let target, let rate):
            pipeline.seek(to: target, rate: rate)
        case .replacePipeline(let number):
            replacePipeline(number: number)
        case .setPipelineVolume(let volume):
            pipeline.setVolume(volume)
        case .queryPosition:
            pipeline.queryPosition()
        case .checkPositionSoon(let load):
            checkPositionSoon(load: load)
        case .describeElements:
            if logger.logLevel <= .debug { pipeline.describeElements() }
        case .timePreroll(let load, let limit, let number):
            prerollTimer.start(after: limit) { [weak self] in
                guard let self else { return }
                let decodedAudio = pipeline.hasDecodedAudio
                run(
                    state.prerollLimitPassed(
                        of: load, number: number, limit: limit, decodedAudio: decodedAudio, now: .now))
            }
        case .stopPrerollTimer:
            prerollTimer.cancel()
        case .awaitPreroll:
            prerollWait.start(after: .seconds(1)) { [weak self] in
                guard let self else { return }
                run(state.prerollOverdue())
            }
        case .armStreamWatch(let id, let since):
            let bytes = pipeline.bytesFromSources
            for next in state.armStreamWatch(id, bytes: bytes, now: .now, since: since) { perform(next) }
        case .startStreamTimer(let limit):
            streamTimer.start(after: limit, leeway: .milliseconds(100)) { [weak self] in
                self?.streamStalled()
            }
        case .stopStreamTimer:
            streamTimer.cancel()
        case .sampleProgress(let delay):
            progressSampler.start(after: delay, leeway: .milliseconds(20)) { [weak self] in
                self?.pipeline.sampleProgress()
            }
        case .watchPace(let watch):
            progressSampler.cancel()
            pipeline.watchPace(watch)
        case .stopProgressWatches:
            progressSampler.cancel()
            pipeline.stopPaceWatch()
            serverCheck.cancel()
        case .checkForServer:
            for next in checkForServer() { perform(next) }
        case .report(let report):
            self.report(report)
        case .log(let level, let message):
            logger.log(level: level, "\(message)")
        }
    }

    /// Tells the owner `report`: at once between steps, else once the step is done.
    func report(_ report: EngineReport) {
        outbox.append(report)
        deliverReports()
    }

    /// Delivers the reports waiting, in order, unless a step or a delivery is under way (that
    /// one delivers them when it is done).
    private func deliverReports() {
        guard depth == 0, !delivering else { return }
        delivering = true
        defer { delivering = false }
        while !outbox.isEmpty {
            let next = outbox.removeFirst()
            onReport?(next)
        }
    }

    /// The pipeline reports each state it reaches, and the transport waits for that word. So
    /// that a report GStreamer never sends (a change lost between its own move toward PLAYING
    /// and one asked for) cannot leave a stream waiting for good, a state not confirmed
    /// within ``stateCheckDelay`` is asked of the pipeline, and asked for again if it is not
    /// on its way.
    private func watchState() {
        guard transport.awaitsState || transport.awaitsSeek else { return stateCheck.cancel() }
        guard !stateCheck.isRunning else { return }
        let number = loadNumber
        stateCheck.start(after: Self.stateCheckDelay) { [weak self] in
            guard let self, loadNumber == number, transport.awaitsState || transport.awaitsSeek else { return }
            pipeline.checkState()
        }
    }

    /// An output with latency of its own (a sound server) starts its clock a moment after
    /// the pipeline reports PLAYING: the position is asked for twice in the first second and a
    /// half, so that the clock follows the output from the start, not from the first read.
    private func checkPositionSoon(load: Int) {
        for delay in [0.4, 1.5] {
            DispatchQueue.main.asyncAfter(deadline: .now() + delay) { [weak self] in
                MainActor.assumeIsolated {
                    guard let self, self.loadNumber == load, self.transport.isPlaying else { return }
                    self.pipeline.queryPosition()
                }
            }
        }
    }

    // MARK: - A stuck pipeline

    /// GStreamer did not return from a call into the pipeline made at `since` in time (a
    /// deadlock inside it).
    func pipelineGotStuck(since: ContinuousClock.Instant) {
        run(state.stuck(since: since))
    }

    /// A call into GStreamer made at `since` ran past the stuck limit, but works, or waits
    /// for a CPU: the pipeline is kept, and the log says why (once a call).
    func callIsSlow(since: ContinuousClock.Instant, _ why: SlowCall) {
        let limit = StreamWatch.seconds(stuckLimit)
        switch why {
        case .working:
            let patience = StreamWatch.seconds(StarvationCheck.patience(limit: stuckLimit))
            logger.info(
                "GStreamer is still working in a call into the pipeline after \(limit) (a slow call, not a deadlock); waiting up to \(patience) for it"
            )
        case .starved:
            logger.info(
                "GStreamer has not returned from a call into the pipeline within \(limit), but the process is waiting for a CPU (the machine is busy, not a deadlock); waiting for it"
            )
        }
    }

    /// The slow call made at `since` returned.
    func slowCallReturned(since: ContinuousClock.Instant) {
        logger.info("GStreamer returned from the slow call after \(Self.tenths(ContinuousClock.now - since))")
    }

    /// A new pipeline, number `number`, takes the stuck one's place, so that the daemon goes
    /// on answering and playing; the stuck one is freed if GStreamer ever lets go of it.
    private func replacePipeline(number: Int) {
        let stuck = pipeline!
        let limit = StreamWatch.seconds(stuckLimit)
        // Only a call that was blocked is called a deadlock: without the kernel's scheduler
        // statistics, a starved process looks the same.
        let how =
            switch stuck.stuck?.why {
            case .blocked, nil: "within \(limit), neither working nor starved of CPU (a deadlock inside it)"
            case .busyPastCap:
                "within \(StreamWatch.seconds(StarvationCheck.patience(limit: stuckLimit))), though working all along (a call that does not end)"
            case .starvedPastCap:
                "within \(StreamWatch.seconds(StarvationCheck.patience(limit: stuckLimit))) while the machine was too busy to run it (or it waits behind a streaming thread that spins)"
            case .unjudged:
                "within \(limit) (a deadlock inside it, or a machine too busy to run it: this kernel does not report CPU starvation)"
            }
        logger.error("GStreamer did not return from a call into the pipeline \(how); \(replacementPlan)")
        let since = stuck.stuck?.since ?? ContinuousClock.now - stuckLimit
        stuck.release { [logger] in
            logger.notice(
                "GStreamer let go of the stuck pipeline after \(Self.tenths(ContinuousClock.now - since)); it is freed")
        }
        pipeline = makePipeline(number: state.pipelineNumber)
    }

    /// A duration in seconds, to a tenth ("4.8 s").
    private nonisolated static func tenths(_ duration: Duration) -> String {
        let tenths = Int((duration / .milliseconds(100)).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// What the new pipeline does, as the transport decided before it is made: the track
    /// loaded again, where; or kept, paused, until Play; or nothing.
    private var replacementPlan: String {
        switch transport.phase {
        case .prerolling(let load, _, _, _):
            "going on in a new pipeline, loading \(name(of: load)) again at \((load.position ?? .zero).clock)"
        case .outputLost(let load, let at):
            "going on in a new pipeline, with \(name(of: load)) paused at \(at.clock)"
        default:
            "going on in a new pipeline, with nothing loaded"
        }
    }

    /// How the log names a load: its entry's display name.
    func name(of load: Transport.Load) -> String {
        EngineState.name(of: load)
    }
}
