package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

/// The transport of the loaded entry as one value, and the pure function that moves it.
///
/// Each input is a `mutating func` named after what happened (a command, or what the pipeline
/// reported). It returns the ``Action``s to carry out, in order: the transport never touches
/// GStreamer, the queue or a clock, so a test can drive it through every state. What clients
/// are told (``Shown``) changes only when the pipeline has confirmed it (or at once for Stop,
/// a failed output and the end of the queue), never for a preroll, a seek's flush, a gapless
/// switch or buffering.
///
/// The whole of it is ``state``, one value whose cases carry their data, beside facts about
/// the pipeline rather than the entry: ``rate``, ``pipelineFailed``, the entry a stuck
/// pipeline is being retried with, and whether a state check found a change under way.
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

        /// The same entry, from `position`.
        func at(_ position: Duration?) -> Load { Load(entry: entry, uri: uri, position: position) }
    }

    /// Where Play or Pause leads (Stop is ``State/stopped``).
    package enum Heading: Sendable, Equatable {
        case paused, playing

        /// The status clients are told once the pipeline is there.
        package var status: PlaybackStatus { self == .playing ? .playing : .paused }
        /// The pipeline state that confirms it.
        var pipelineState: Pipeline.State { self == .playing ? .playing : .paused }
    }

    /// What clients were told last, when it is not Stopped.
    package struct Shown: Sendable, Equatable {
        package var status: Heading
        package var entry: EntryID
        /// A load started since: clients hear of its new timing even with the same status
        /// and entry (a restart).
        var reloaded = false
    }

    /// The transport: stopped, or heading for Paused or Playing with the pipeline in a phase.
    package enum State: Sendable, Equatable {
        /// Stop: nothing is loaded nor asked for, and clients are told Stopped.
        case stopped
        /// Play or Pause was asked for, and the pipeline is in `phase`. `shown`: what clients
        /// were told (nil: still Stopped).
        case active(Phase, shown: Shown?)
    }

    /// What the pipeline is doing while Play or Pause is asked for. Each case says which it
    /// may move to; the heading is the case's, so that a buffering pause is always on the way
    /// to Playing and a lost output always waits, paused, for Play.
    package enum Phase: Sendable, Equatable {
        /// Nothing is in the pipeline: the loaded entry failed, and its owner goes on with
        /// what follows. → prerolling.
        case idle(Heading)
        /// The URI is set and the pipeline prerolls. `seek`: where to go once it has (a start
        /// position, or zero to apply a rate other than 1). `queued`: a load asked for
        /// meanwhile, started once this preroll ends: GStreamer 1.22's playbin2 can deadlock
        /// when a stream is taken down while its first data reaches playbin's stream selector.
        /// → seeking, loaded, idle (failed), outputLost, prerolling (the queued load).
        case prerolling(Load, seek: Duration?, queued: Load?, toward: Heading)
        /// A flushing seek is in flight (`target` nil: the seek that applies the rate after a
        /// gapless switch). `reached`: the state confirmed before it. → loaded, idle, outputLost.
        case seeking(Load, target: Duration?, reached: Heading?, toward: Heading)
        /// Loaded, heading for a state; `confirmed`: the pipeline said it is there.
        /// → seeking, buffering, prerolling, idle, outputLost.
        case loaded(Load, Heading, confirmed: Bool)
        /// A network stream that should play, paused until its buffer fills; clients still see
        /// what they were told. → loaded, seeking, idle, outputLost.
        case buffering(Load)
        /// The audio output failed, or GStreamer got stuck twice: nothing is loaded, the
        /// transport is paused, and Play loads the entry again at `at`. → prerolling.
        case outputLost(Load, at: Duration)

        /// Where Play or Pause leads.
        var heading: Heading {
            switch self {
            case .idle(let heading), .prerolling(_, _, _, let heading), .seeking(_, _, _, let heading),
                .loaded(_, let heading, _):
                heading
            case .buffering: .playing
            case .outputLost: .paused
            }
        }

        /// The entry's load, whatever the phase (nil when idle).
        var load: Load? {
            switch self {
            case .idle: nil
            case .prerolling(let load, _, _, _), .seeking(let load, _, _, _), .loaded(let load, _, _),
                .buffering(let load), .outputLost(let load, _):
                load
            }
        }
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
        /// Nothing is loaded to play or seek in: the command is the owner's (Play loads the
        /// selected entry).
        case refused
        /// What clients see of the timing changed at once, with no state to settle (a position
        /// or a rate asked for while a load or a seek is on its way): the owner is told once
        /// the other actions ran. The engine's state (``EngineState``) adds it to a command's.
        case timingChanged
    }

    /// Stopped, or where Play or Pause leads and what clients were told.
    package internal(set) var state = State.stopped
    /// The playback rate; a stream loaded at another rate than 1 seeks once prerolled to apply it.
    var rate: Double = 1
    /// The pipeline reported an error since it was last taken down: the next teardown goes
    /// to NULL, so that nothing of the failed stream is reused.
    var pipelineFailed = false
    /// An entry GStreamer got stuck on, being tried once more.
    struct StuckRetry: Sendable, Equatable {
        var entry: EntryID
        /// The retry reached the state asked for. Stuck again after that, the entry itself
        /// makes GStreamer stick (an odd file), not the output: it is skipped, where a retry
        /// that never got going pauses until Play.
        var reached = false
    }

    /// The entry GStreamer got stuck on and that is being tried once more.
    var retryingAfterStuck: StuckRetry?
    /// A state check found the change toward the heading still under way, during the load in
    /// progress: found so at the next check too, the change is taken for stalled.
    var changeUnderWay = false

    /// A transport that is stopped, at rate 1.
    package init() {}

    /// A transport in `state` (the tests start from each of the type's cases).
    init(
        _ state: State, rate: Double = 1, pipelineFailed: Bool = false, retryingAfterStuck: StuckRetry? = nil,
        changeUnderWay: Bool = false
    ) {
        self.state = state
        self.rate = rate
        self.pipelineFailed = pipelineFailed
        self.retryingAfterStuck = retryingAfterStuck
        self.changeUnderWay = changeUnderWay
    }

    /// What the pipeline is doing (nil when stopped).
    var phase: Phase? {
        if case .active(let phase, _) = state { return phase }
        return nil
    }

    /// What clients were told last (nil: Stopped).
    var shown: Shown? {
        if case .active(_, let shown) = state { return shown }
        return nil
    }

    /// Where the commands received lead (nil: Stop).
    var heading: Heading? { phase?.heading }

    /// What the commands received ask for.
    package var intent: PlaybackStatus { heading?.status ?? .stopped }
    /// What clients are told.
    package var status: PlaybackStatus { shown?.status.status ?? .stopped }
    /// The entry `status` was last settled with (nil when stopped).
    package var settledEntry: EntryID? { shown?.entry }

    /// Loaded, and the pipeline confirmed PLAYING.
    var isPlaying: Bool {
        if case .loaded(_, .playing, confirmed: true) = phase { return true }
        return false
    }

    /// Loaded, and waiting for the pipeline to confirm the state asked for (Play, Pause, or
    /// the end of a preroll, a seek or buffering).
    var awaitsState: Bool {
        if case .loaded(_, _, confirmed: false) = phase { return true }
        return false
    }

    /// A flushing seek is in flight in a local file, whose landing (ASYNC_DONE) comes within
    /// moments: one that does not is checked like a state not confirmed (a network stream's
    /// seek waits on its server, and is left to its stream watch).
    var awaitsSeek: Bool {
        if case .seeking(let load, _, _, _) = phase { return MediaSources.isLocal(load.uri) }
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

    /// The loaded entry's load, whatever the phase (nil when nothing is loaded).
    package var loaded: Load? { phase?.load }

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
        case .prerolling(let load, let seek, let queued, _):
            queued.map { $0.position ?? .zero } ?? seek ?? load.position ?? .zero
        case .seeking(_, let target?, _, _): target
        case .outputLost(_, let at): at
        default: nil
        }
    }

    /// The entry that plays once the load in progress is done: a queued load's, else the loaded one.
    package var upcomingEntry: EntryID? {
        if case .prerolling(_, _, let queued?, _) = phase { return queued.entry }
        return loaded?.entry
    }

    // MARK: - Moving between states

    /// Moves to `phase`, keeping what clients were told.
    mutating func enter(_ phase: Phase) {
        state = .active(phase, shown: shown)
    }

    /// The loaded load, unless its output failed (then nothing is in the pipeline).
    func loadedOrNil() -> Load? {
        if case .outputLost = phase { return nil }
        return loaded
    }

    /// The load that plays next: a queued one, else the loaded one.
    func upcomingLoad() -> Load? {
        if case .prerolling(_, _, let queued?, _) = phase { return queued }
        return loadedOrNil()
    }

    /// Loads `load` toward `heading`, from NULL if the pipeline failed since its last teardown.
    mutating func start(_ load: Load, toward heading: Heading) -> [Action] {
        if retryingAfterStuck?.entry != load.entry { retryingAfterStuck = nil }
        // A fresh load starts at zero: a seek there only applies a rate other than 1.
        let start = load.position.flatMap { $0 > .zero ? $0 : nil }
        let seek = start ?? (rate != 1 ? .zero : nil)
        var shown = self.shown
        shown?.reloaded = true
        changeUnderWay = false
        state = .active(.prerolling(load, seek: seek, queued: nil, toward: heading), shown: shown)
        let target: Pipeline.State = heading == .playing && seek == nil ? .playing : .paused
        return [.load(load, target, fresh: takeFailure())]
    }

    /// Whether the next teardown goes to NULL; it is the one, so the next one need not.
    mutating func takeFailure() -> Bool {
        defer { pipelineFailed = false }
        return pipelineFailed
    }
}
