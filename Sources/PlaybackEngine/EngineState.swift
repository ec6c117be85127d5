import Media
import PlaybackPipeline
import PlaybackVocabulary

/// Everything the engine decides with, as one value, and the pure steps that move it.
///
/// The ``Engine`` keeps this value beside the pipeline handle, its timers and its owner, and
/// changes it only through the steps here: a command, a pipeline report or a timer that
/// fired goes through one step, which returns the ``Action``s to carry out, in order (the
/// transport's among them); instants and what only the pipeline knows are handed in, so a
/// test drives it without GStreamer or a clock. It holds the transport,
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
    /// Which pipeline's events are heard: a replaced one's are not (the first is number 0).
    private(set) var pipelineNumber = 0
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
    var pace = 1.0
    /// How long the pipeline has to confirm a state before the engine asks where it is.
    static let stateCheckDelay: Duration = .seconds(3)
    /// A pace closer to 1 than this is the jitter of the answers, not a slow output.
    static let paceTolerance = 0.05
    /// How far a pace refined while the position is within the tolerance must have moved
    /// the position over its stretch (see ``refinePace(_:predicted:at:)``).
    static let paceRefinement = Duration.milliseconds(100)

    /// The rate the clock runs at while the transport plays, else 0.
    var runningRate: Double { transport.isPlaying ? transport.rate * pace : 0 }

    // MARK: - Carrying out

    /// The state's part of carrying out `action` at `now`, when its turn comes, and the
    /// pipeline's commands, timers and reports it comes to: a load or unload makes the reports
    /// of what was loaded stale and starts the stream afresh, a pause stops the clock, a seek
    /// is counted in flight, a replaced pipeline is counted, a settled transport runs the
    /// clock. Never a ``Action/transport(_:)``.
    mutating func carryingOut(_ action: Transport.Action, now: Instant) -> [Action] {
        switch action {
        case .load(let load, let target, let fresh):
            let isLocal = MediaSources.isLocal(load.uri)
            let prerollLimit = loadStarted(load, isLocal: isLocal, now: now)
            let began = streamBegan(load.entry, isStream: !isLocal, handedOver: false)
            let loudness = entries[load.entry]?.loudness
            // playbin asks for the next URI as soon as it has read this one, which for a
            // short file is during preroll: the owner answers at once.
            return began + [
                .loadPipeline(uri: load.uri, target, load: loadNumber, fresh: fresh, loudness: loudness),
                prerollLimit.map { .timePreroll(load, limit: $0, number: loadNumber) } ?? .stopPrerollTimer,
                .report(.loadStarted(load.entry)),
            ]
        case .unload(let fresh):
            unloaded(now: now)
            return disarmStreamWatch() + [.unloadPipeline(load: loadNumber, fresh: fresh)]
        case .setState(let target):
            if target == .paused { clock.changeRate(to: 0, at: now) }
            return [.setPipelineState(target)]
        case .reselectClock:
            return [.setPipelineState(.paused), .setPipelineState(.playing)]
        case .seek(let target):
            seeks.sent()
            return [.seekPipeline(target, rate: transport.rate)]
        case .awaitPreroll:
            return [.awaitPreroll]
        case .replacePipeline:
            pipelineReplaced()
            return [.replacePipeline(number: pipelineNumber)]
        case .publish:
            return settle(now: now)
        case .skip(let id, let reason):
            return [.report(.failed(id, reason: reason))]
        case .advance(let id):
            return [.report(.ended(id))]
        case .refused, .timingChanged:
            return []  // answers to the command: the engine reads them off the step's actions
        }
    }

    /// The transport settled at `now`: the clock runs at the rate while the pipeline plays
    /// and the audio moves, a network stream that plays is no longer watched for a stall
    /// (its server sent what was awaited), and the owner tells its observer.
    private mutating func settle(now: Instant) -> [Action] {
        var actions: [Action] = []
        if transport.status != .stopped, let id = transport.settledEntry, let loaded = transport.loaded,
            loaded.entry == id, !MediaSources.isLocal(loaded.uri)
        {
            actions += disarmStreamWatch()
        }
        if transport.status == .playing || transport.status == .paused {
            if !transport.isPlaying { positionFollow.paceInterrupted() }
            let holding = progress.watch.isHolding
            clock.changeRate(to: transport.isPlaying && !holding ? runningRate : 0, at: now)
        }
        if transport.isPlaying { actions.append(.checkPositionSoon(load: loadNumber)) }
        return actions + [.report(.settled)]
    }

    // MARK: - Pipelines and loads

    /// The stuck pipeline is replaced by the next number: nothing it or its load says is
    /// heard any more.
    private mutating func pipelineReplaced() {
        pipelinesReplaced += 1
        pipelineNumber += 1
        loadNumber += 1
    }

    /// Whether a report of pipeline `pipeline` is heard: a replaced pipeline's is not.
    func hears(pipeline: Int) -> Bool { pipeline == pipelineNumber }

    /// Whether a report of pipeline `pipeline` about load `load` is about what is loaded now.
    func hears(pipeline: Int, load: Int) -> Bool { hears(pipeline: pipeline) && load == loadNumber }

    /// `load` starts loading at `now` (`isLocal`: a file): its own STREAM_START comes next,
    /// and the clock stands where it starts. Returns how long its preroll may take (nil: not
    /// timed, see ``PrerollWatch``). Only its entry's facts are kept: what is handed over
    /// after it is told anew. Part of carrying out a load (``carryingOut(_:now:)``).
    private mutating func loadStarted(_ load: Transport.Load, isLocal: Bool, now: Instant) -> Duration? {
        entries = entries[load.entry].map { [load.entry: $0] } ?? [:]
        loadNumber += 1
        seeks.loaded()
        errors.loadStarted()
        awaitingOwnStreamStart = true
        positionFollow.loaded()
        pace = 1
        facts = Pipeline.Facts()
        clock.set(load.position ?? .zero, rate: 0, at: now)
        return prerollWatch.loadStarted(load.entry, isLocal: isLocal)
    }

    /// What was loaded is taken down at `now`. Part of carrying out an unload.
    private mutating func unloaded(now: Instant) {
        loadNumber += 1
        clock.set(.zero, rate: 0, at: now)
    }

    // MARK: - Commands

    /// Loads `load`, an entry with `facts`, toward `intent`.
    mutating func load(_ load: Transport.Load, facts: EntryFacts, intent: PlaybackStatus) -> [Action] {
        entries[load.entry] = facts
        return Self.moved(transport.load(load, intent: intent))
    }

    /// A command told `facts` of the entry `id`, handed over to follow the loaded one.
    mutating func know(_ id: UInt64, _ facts: EntryFacts) -> [Action] {
        entries[id] = facts
        return []
    }

    /// The entry `id` left the queue: a stream of it that stalls is no longer the queue's.
    mutating func forget(_ id: UInt64) -> [Action] {
        entries[id] = nil
        return []
    }

    /// Play: ``Transport/Action/refused`` when nothing is loaded or being loaded.
    mutating func play() -> [Action] { Self.moved(transport.play()) }

    /// Pause.
    mutating func pause() -> [Action] { Self.moved(transport.pause()) }

    /// Stop: what is loaded is taken down.
    mutating func stop() -> [Action] { Self.moved(transport.stop()) }

    /// The engine stops for good: the transport stops, and nothing of it is carried out but
    /// the preroll timer's end (the pipeline is released whole).
    mutating func shutDown() -> [Action] {
        _ = transport.stop()
        return [.stopPrerollTimer]
    }

    /// A failure the owner handles itself (a handed-over stream that stalled): the next
    /// teardown goes to NULL.
    mutating func failedElsewhere() -> [Action] { Self.moved(transport.failedElsewhere()) }

    /// Feeds the transport `input` as a test does, to play a pipeline that never heard a
    /// command: its actions are left out, and the engine follows the transport that moved.
    mutating func decide(_ input: (inout Transport) -> [Transport.Action]) -> [Action] {
        _ = input(&transport)
        return Self.moved([])
    }

    /// Seek: the clock stands at `target` until the pipeline says otherwise, and a position
    /// asked for while loading is told at once. ``Transport/Action/refused`` when nothing is
    /// loaded to seek in.
    mutating func seek(to target: Duration, nextTaken: Bool, now: Instant) -> [Action] {
        let actions = transport.seek(to: target, nextTaken: nextTaken)
        guard !actions.contains(.refused) else { return Self.moved(actions) }
        positionFollow.loaded()
        pace = 1
        clock.set(target, rate: 0, at: now)
        return Self.moved(actions.isEmpty ? [.timingChanged] : actions)
    }

    /// Loads the current stream again at `position`, after the transport's actions `earlier`
    /// of the same step.
    mutating func reload(at position: Duration, now: Instant, after earlier: [Transport.Action] = []) -> [Action] {
        clock.set(position, rate: 0, at: now)
        return Self.moved(earlier + transport.seek(to: position, nextTaken: true))
    }

    /// Sets the rate, applied from `position` by a seek when a stream is loaded. Clients see
    /// the rate asked for at once; the seek that applies it follows.
    mutating func setRate(_ rate: Double, from position: Duration, now: Instant) -> [Action] {
        let actions = transport.setRate(rate, position: position)
        positionFollow.paceInterrupted()
        pace = 1
        if actions.contains(where: { if case .seek = $0 { true } else { false } }) {
            clock.set(position, rate: 0, at: now)
        }
        return Self.moved(actions.contains(.publish) ? actions : actions + [.timingChanged])
    }

    /// Sets the volume at `now` (its echo from the output is not a change).
    mutating func setVolume(_ volume: Double, now: Instant) -> [Action] {
        self.volume = volume
        volumeEchoes.set(volume, at: now)
        return [.setPipelineVolume(volume)]
    }

    /// The position shown at `now`: zero when nothing is loaded, where the output failed
    /// when it did.
    func position(at now: Instant) -> Duration {
        if case .outputLost(_, let at) = transport.phase { return at }
        guard transport.status != .stopped, transport.loadedEntry != nil else { return .zero }
        return clock.position(at: now)
    }

    /// The position at `now` was shown to a client: while playing, the pipeline is asked
    /// where it is about once a second (see ``PositionFollow``), so that a drift is corrected.
    mutating func positionShown(now: Instant) -> [Action] {
        if case .outputLost = transport.phase { return [] }
        guard transport.status != .stopped, transport.loadedEntry != nil else { return [] }
        let query = positionFollow.shouldQuery(now: now, isPlaying: transport.isPlaying)
        positionFollow.shown(clock.position(at: now), load: loadNumber)
        return query ? [.queryPosition] : []
    }

    /// Keeps the artwork found in the loaded stream (its file's URL), shown with its tags.
    mutating func keepStreamArtwork(_ url: String) -> [Action] {
        streamTags.artworkURL = url
        return []
    }

    /// How long a network stream may send nothing before it is reported and skipped.
    mutating func setStallLimit(_ limit: Duration) -> [Action] {
        streamWatch.stallLimit = limit
        return []
    }

    /// How the log names a load: its entry's display name.
    static func name(of load: Transport.Load) -> String {
        MediaSources.displayName(load.uri)
    }

    /// The loaded entry's name, for the log (nil when none is loaded).
    var loadedName: String? {
        transport.loaded.flatMap { transport.loadedEntry != nil ? Self.name(of: $0) : nil }
    }

    /// The loaded entry's length: its tags', else what the pipeline said of it.
    var loadedLength: Duration? {
        transport.loaded.flatMap { entries[$0.entry]?.length } ?? facts.duration
    }

    /// `5.33 s`: a position or a length, to the hundredth.
    static func seconds(_ duration: Duration) -> String {
        let hundredths = Int((Double(duration.nanoseconds) / 1e7).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) s"
    }
}
