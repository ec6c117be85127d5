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
    /// Everything the engine decides with. Only the engine's own files change it (its
    /// events, streams and progress are extensions in files of their own, which Swift's
    /// `private` would not reach); its owner reads it through the accessors below.
    var state = EngineState()
    /// Hears the engine's reports, in order, each once the step that caused it is done.
    package var onReport: (@MainActor (EngineReport) -> Void)?
    /// Reports not delivered yet: a step under way (`depth` above zero) or a delivery in
    /// progress holds them, so that no report handler runs inside a step.
    private var outbox: [EngineReport] = []
    private var depth = 0
    private var delivering = false

    package private(set) var pipeline: Pipeline!
    let audioSink: String?
    let stuckLimit: Duration
    let logger: Logger

    let prerollTimer = Countdown()
    /// Runs while a load waits for the preroll in progress.
    let prerollWait = Countdown()
    /// Runs while the pipeline has not confirmed the state asked for (see ``watchState()``).
    let stateCheck = Countdown()
    /// How long the pipeline has to confirm a state before it is asked where it is.
    static let stateCheckDelay: Duration = .seconds(3)
    /// Runs while a network stream is waited for (see ``StreamWatch``).
    let streamTimer = Countdown()
    /// Runs while playing, until the next sample of the audio's progress.
    let progressSampler = Countdown()
    /// Runs while the fallback sink plays, until the next look for a sound server.
    let serverCheck = Countdown()

    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    /// - Parameter stuckLimit: how long a call into GStreamer may take before the pipeline is
    ///   taken for stuck and replaced.
    package init(audioSink: String?, stuckLimit: Duration, logger: Logger) throws {
        self.audioSink = audioSink
        self.stuckLimit = stuckLimit
        self.logger = logger
        do {
            try Pipeline.validate(audioSink: audioSink)
        } catch {
            throw MediaError(error.description)
        }
        pipeline = makePipeline()
    }

    isolated deinit {
        pipeline?.release()  // nil when init threw
    }

    private func makePipeline() -> Pipeline {
        let number = state.pipelineMade()
        return Pipeline(audioSink: audioSink, volume: state.volume, stuckLimit: stuckLimit) { [weak self] delivery in
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
        let (position, query) = state.position(now: .now)
        if query { pipeline.queryPosition() }
        return position
    }

    // MARK: - Commands

    /// Loads `load`, an entry with `facts`, toward `intent` (the pipeline reports when it is
    /// there).
    package func load(_ load: Transport.Load, facts: EntryFacts, intent: PlaybackStatus) {
        state.know(load.entry, facts)
        run(state.transport.load(load, intent: intent))
    }

    /// The entry `id` left the queue: a stream of it that stalls is no longer the queue's.
    package func forget(_ id: UInt64) {
        state.forget(id)
    }

    /// Plays the entry loaded or being loaded; false when the transport has none to play.
    package func resume() -> Bool {
        run(state.transport.play())
    }

    package func pause() { run(state.transport.pause()) }

    /// Unloads the stream; the position goes back to zero.
    package func stop() { run(state.transport.stop()) }

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
        state.setVolume(volume, now: .now)
        pipeline.setVolume(volume)
    }

    /// Tells playbin what follows the loaded stream (or, after a gapless switch, the stream
    /// switched to), for a gapless switch. Given at once, not through the pipeline's queue:
    /// the `about-to-finish` handler may be waiting for it, and a command queued on that
    /// queue may be waiting on the handler. The load number keeps it from a stream taken down.
    /// `facts`: those of the entry handed over, if one is.
    package func prepareNext(_ answer: GaplessHandoff.Answer, facts: EntryFacts? = nil) {
        if case .item(let item) = answer, let facts { state.know(item.entryID, facts) }
        pipeline.handoff.answer(answer, load: loadNumber)
    }

    /// Counts a failure that the owner handles itself (a handed-over stream that stalled).
    func noteFailure() { run(state.transport.failedElsewhere()) }

    /// Feeds the transport an input and returns its actions without carrying them out: a
    /// test drops them to play a pipeline that never heard the command. The input must not
    /// read the engine: its arguments are worked out before.
    func decide(_ input: (inout Transport) -> [Transport.Action]) -> [Transport.Action] {
        input(&state.transport)
    }

    /// Stops the pipeline for good; `done` is called once GStreamer has let go of it.
    package func shutdown(done: (@MainActor @Sendable () -> Void)?) {
        prerollTimer.cancel()
        stateCheck.cancel()
        _ = state.transport.stop()
        pipeline.release(freed: done)
    }

    // MARK: - Carrying out the transport's actions

    /// Carries out the transport's actions, in order. False when the transport refused the
    /// command (nothing is loaded for it).
    @discardableResult
    func run(_ actions: [Transport.Action]) -> Bool {
        depth += 1
        // Reports wait until the step is done, so no owner's answer runs inside one.
        assert(depth == 1, "Engine.run is never re-entered")
        defer {
            depth -= 1
            deliverReports()
        }
        var accepted = true
        var timingChanged = false
        for action in actions {
            let prerollLimit = state.carryingOut(action, now: .now)
            switch action {
            case .load(let load, let target, let fresh):
                let isLocal = MediaSources.isLocal(load.uri)
                streamBegan(load.entry, isStream: !isLocal, handedOver: false)
                let loudness = state.entries[load.entry]?.loudness
                pipeline.load(load.uri, state: target, number: loadNumber, fresh: fresh, loudness: loudness)
                if let prerollLimit {
                    watchPreroll(of: load, limit: prerollLimit)
                } else {
                    prerollTimer.cancel()
                }
                // playbin asks for the next URI as soon as it has read this one, which for a
                // short file is during preroll: the owner answers at once.
                report(.loadStarted(load.entry))
            case .unload(let fresh):
                disarmStreamWatch()
                pipeline.unload(number: loadNumber, fresh: fresh)
            case .setState(let target):
                pipeline.setState(target)
            case .reselectClock:
                pipeline.setState(.paused)
                pipeline.setState(.playing)
            case .seek(let target):
                pipeline.seek(to: target, rate: rate)
            case .awaitPreroll:
                awaitPreroll()
            case .replacePipeline:
                replacePipeline()
            case .publish:
                settle()
            case .skip(let id, let reason):
                report(.failed(id, reason: reason))
            case .advance(let id):
                report(.ended(id))
            case .refused:
                accepted = false
            case .timingChanged:
                timingChanged = true
            }
        }
        watchState()
        syncProgress()
        if timingChanged { report(.changed(.transport)) }
        return accepted
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

    /// The transport settled: the clock runs at its rate, a stream that plays is no longer
    /// watched for a stall, and the owner tells its observer.
    private func settle() {
        if status != .stopped, let id = transport.settledEntry, let loaded = transport.loaded, loaded.entry == id,
            !MediaSources.isLocal(loaded.uri)
        {
            disarmStreamWatch()  // it played: the server sent what was awaited
        }
        state.settled(holding: isHoldingClock, now: .now)
        if transport.isPlaying { checkPositionSoon() }
        report(.settled)
    }

    /// Times the preroll of `load` (see ``PrerollWatch``).
    private func watchPreroll(of load: Transport.Load, limit: Duration) {
        let number = loadNumber
        prerollTimer.start(after: limit) { [weak self] in
            guard let self,
                let (decision, actions) = state.prerollLimitPassed(
                    load: number, limit: limit, decodedAudio: pipeline.hasDecodedAudio)
            else { return }
            let name = MediaSources.displayName(load.uri)
            let seconds = StreamWatch.seconds(limit)
            switch decision {
            case .outputFailed:
                // The output's failure, as if it had said so: paused there until Play.
                return streamFailed(
                    PipelineError(
                        message: "it took no audio of \(name) within \(seconds), twice", domain: .other("quaver"),
                        code: 0, source: ElementPath("/quaver-audio-sink"), uri: load.uri, inOutput: true))
            case .retry:
                logger.warning("\(name) did not start within \(seconds); loading it again")
            case .skip, .undecodable:
                break
            }
            run(actions)
        }
    }

    /// A load waits for the preroll in progress, at most a second.
    private func awaitPreroll() {
        prerollWait.start(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            let actions = state.transport.prerollOverdue()
            if !actions.isEmpty {
                logger.debug("the previous track did not preroll within a second; loading the next one anyway")
            }
            run(actions)
        }
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

    // MARK: - A stuck pipeline

    /// GStreamer did not return from a call into the pipeline made at `since` in time (a
    /// deadlock inside it).
    func pipelineGotStuck(since: ContinuousClock.Instant) {
        let stuckEntry = transport.loaded.map { name(of: $0) }
        let length = transport.loaded.flatMap { state.entries[$0.entry]?.length } ?? facts.duration
        run(state.stuck(since: since, length: length))
        if case .outputLost(_, let at) = transport.phase, let stuckEntry {
            logger.error("GStreamer got stuck twice on \(stuckEntry); paused at \(at.clock) until Play tries again")
        }
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

    /// A new pipeline takes the stuck one's place, so that the daemon goes on answering and
    /// playing; the stuck one is freed if GStreamer ever lets go of it.
    private func replacePipeline() {
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
        pipeline = makePipeline()
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
        MediaSources.displayName(load.uri)
    }
}
