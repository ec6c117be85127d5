internal import CGStreamer
package import Media
package import PlaybackVocabulary

/// The values a ``Pipeline`` speaks in: its states, what it knows of the loaded stream, and
/// the events it reports.
extension Pipeline {
    /// The pipeline's state (see ``PipelineState``).
    package typealias State = PipelineState

    /// What the pipeline knows of the loaded stream (see ``PipelineFacts``).
    package typealias Facts = PipelineFacts

    package enum Event: Sendable {
        /// The whole pipeline's state changed (not one of its elements').
        /// `position`: where the stream was `at` that moment.
        case stateChanged(old: State, new: State, pending: State, position: Duration?, at: ContinuousClock.Instant)
        /// A preroll or a flushing seek completed.
        case asyncDone(Facts)
        /// The stream ended; `position`: where the output was then, as the pipeline said
        /// (nil when it did not).
        case endOfStream(position: Duration?)
        /// An error, with its GError's domain and code, the element that posted it and the
        /// URI it was about (see ``PipelineError``).
        case error(PipelineError)
        case warning(message: String, source: String)
        case streamStart
        case durationChanged(Facts)
        case buffering(percent: Int)
        case clockLost
        /// An element asks the application to change the pipeline's state: the sound server
        /// corks the stream (PAUSED) for a call or an alarm, and uncorks it (PLAYING) after.
        case requestState(State)
        /// The output's volume changed (on the cubic scale of desktop mixers): a mixer changed
        /// the stream's volume on the sound server, or Quaver did.
        case outputVolumeChanged(Double)
        /// Tags reached the sink (what is heard now): a stream's ICY title, a file's own tags.
        /// Lists with nothing a listener sees (a bit rate, a codec) are not reported.
        case tags(StreamTags)
        /// playbin took the prepared next URI (`about-to-finish`): it starts once the current
        /// stream ends. Posted from the streaming thread, so it arrives in order with the rest.
        case nextURITaken
        /// A state change GStreamer refused at once (after the errors it queued with it).
        case stateChangeFailed(State)
        /// A seek GStreamer refused.
        case seekRefused(Duration)
        /// The answer to ``checkState()``: the state the pipeline is in, and the one it
        /// heads for (``State/voidPending`` when none).
        case stateChecked(current: State, pending: State)
        /// The answer to ``queryPosition()``: where the stream was `at` that moment.
        case position(Duration?, at: ContinuousClock.Instant)
        /// The answer to ``sampleProgress()``: where the stream and the pipeline's clock were;
        /// or the first sample of a ``watchPace(_:)`` off its pace, `since` its last calm one.
        case progress(Progress, since: Progress?)
        /// The factory names of the elements the loaded stream is played with, once it
        /// prerolled (for diagnostics and tests).
        case elements([String])
        /// A stream started at this gain (`rgvolume`'s result, in dB), as `plan` set it.
        /// Reported from the streaming thread, whatever load it belongs to.
        case loudnessApplied(LoudnessPlan, gain: Double)
        /// `rganalysis` measured a whole track that has no tags. Reported from the streaming
        /// thread, whatever load it belongs to.
        case loudnessMeasured(TrackSignature, MeasuredGain)
        /// A call into GStreamer made at `since` did not return within `stuckLimit`, and was
        /// blocked (a deadlock inside GStreamer; ``Pipeline/stuck`` says how it was judged):
        /// the pipeline is stuck and must be replaced. Nothing else is reported after it.
        case stuck(since: ContinuousClock.Instant)
        /// A call into GStreamer made at `since` ran past `stuckLimit`, but is not stuck: it
        /// works, or the machine gives the process no CPU. Reported once a call.
        case slowCall(since: ContinuousClock.Instant, SlowCall)
        /// The call made at `since`, reported as a ``slowCall(since:_:)``, returned.
        case slowCallReturned(since: ContinuousClock.Instant)
    }

    /// An event with the number of the load it belongs to: events of a stream taken down
    /// can still be on their way when the next one is loaded.
    package struct Delivery: Sendable {
        package var load: Int
        package var event: Event
    }

    /// Why a pipeline could not be made.
    package struct SetupError: Error, CustomStringConvertible {
        package var description: String
    }
}

extension PipelineState {
    init(_ state: GstState) { self = PipelineState(rawValue: Int(state.rawValue)) ?? .voidPending }
    var gst: GstState { GstState(rawValue: UInt32(rawValue)) }
}
