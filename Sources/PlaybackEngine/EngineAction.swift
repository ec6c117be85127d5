import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

extension EngineState {
    /// What the engine carries out, in order: the one answer of every step of its state.
    ///
    /// Each case carries what the engine needs, so that it decides nothing itself: it talks
    /// to the pipeline, starts and stops its timers, reports to its owner and logs. A step
    /// answers with the transport's actions as they are (``transport(_:)``), and the engine
    /// hands each back, when its turn comes, to ``EngineState/carryingOut(_:now:)``: the
    /// state takes its part of it then (a load makes the reports of what was loaded stale),
    /// so that the commands it comes to carry the numbers of that moment.
    enum Action: Sendable, Equatable {
        /// An action of the transport, carried out through ``EngineState/carryingOut(_:now:)``.
        case transport(Transport.Action)
        /// After the transport moved: the state check and the progress watches follow it
        /// (``EngineState/followProgress(now:)``), then the owner hears of a timing that
        /// changed with no state to settle (`timingChanged`).
        case followTransport(timingChanged: Bool)

        /// Loads `uri` toward `state` as load number `load` (to NULL first when `fresh`), at
        /// the gain `loudness`.
        case loadPipeline(uri: String, Pipeline.State, load: Int, fresh: Bool, loudness: LoudnessPlan?)
        /// Takes down what is loaded; what the pipeline says of it from now on is about load
        /// number `load` (to NULL when `fresh`).
        case unloadPipeline(load: Int, fresh: Bool)
        /// Asks the pipeline for a state.
        case setPipelineState(Pipeline.State)
        /// Seeks the loaded stream to a position, at `rate`.
        case seekPipeline(Duration, rate: Double)
        /// The pipeline is stuck: a new one, number `number`, takes its place.
        case replacePipeline(number: Int)
        /// Sets the pipeline's volume, on the cubic scale of desktop mixers.
        case setPipelineVolume(Double)
        /// Asks the pipeline where it is (it answers with a position report).
        case queryPosition
        /// Asks the pipeline where it is twice in the next second and a half, while load
        /// number `load` plays: an output with latency of its own starts its clock late.
        case checkPositionSoon(load: Int)
        /// Lists the elements the loaded stream plays through, when the log shows them.
        case describeElements

        /// Times the preroll of `load`, load number `number`: the step after `limit` is
        /// ``EngineState/prerollLimitPassed(of:number:limit:decodedAudio:now:)``.
        case timePreroll(Transport.Load, limit: Duration, number: Int)
        /// The preroll is no longer timed.
        case stopPrerollTimer
        /// Waits a second at most for the preroll in progress, then takes
        /// ``EngineState/prerollOverdue()``.
        case awaitPreroll
        /// Arms the watch over the network stream `entry` with what the sources have sent by
        /// now (``EngineState/armStreamWatch(_:bytes:now:since:)``), the wait counted from
        /// `since` (nil: from when the running wait began, else now).
        case armStreamWatch(UInt64, since: Instant?)
        /// Starts the countdown after which the watched stream counts as stalled.
        case startStreamTimer(after: Duration)
        /// The stream watch's countdown stops.
        case stopStreamTimer
        /// Samples the audio's progress after a while.
        case sampleProgress(after: Duration)
        /// Has the pipeline sample the audio's progress on its own while it keeps its pace.
        case watchPace(PaceWatch)
        /// The transport no longer plays: the progress sampler and the look for a sound
        /// server stop.
        case stopProgressWatches
        /// While the fallback sink plays: looks whether a sound server answers now, and looks
        /// again in a while if none does (see ``EngineState/serverAnswered(at:now:)``).
        case checkForServer

        /// Tells the owner, once the step is done.
        case report(EngineReport)
        /// One line in the log.
        case log(Logger.Level, String)
    }

    /// The transport's `actions` as the engine's, then the state check and the progress
    /// watches following the transport they moved.
    static func moved(_ actions: [Transport.Action]) -> [Action] {
        actions.map(Action.transport) + [.followTransport(timingChanged: actions.contains(.timingChanged))]
    }
}
