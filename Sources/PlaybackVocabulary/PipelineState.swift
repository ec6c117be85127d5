/// A pipeline's state, in GStreamer's order (`GstState`'s values), so that states compare
/// as they are reached.
package enum PipelineState: Int, Sendable, Comparable {
    case voidPending = 0
    case null, ready, paused, playing
    package static func < (a: PipelineState, b: PipelineState) -> Bool { a.rawValue < b.rawValue }
}

/// What the pipeline knows of the loaded stream at the moment of an event, read on its
/// queue so that the main actor never has to ask.
package struct PipelineFacts: Sendable, Equatable {
    /// When the pipeline was asked: a position is as of then, however late it is read.
    package var at = ContinuousClock.now
    /// Where the stream was `at` that moment, when the pipeline said.
    package var position: Duration?
    /// The stream's length, when the pipeline knows it.
    package var duration: Duration?
    /// Whether the stream takes seeks.
    package var isSeekable = false
    /// The state reached and the one pending.
    package var current: PipelineState = .voidPending
    /// The state the pipeline heads for (``PipelineState/voidPending`` when none).
    package var pending: PipelineState = .voidPending

    /// Facts of no stream: no position, no duration, no state.
    package init() {}
}
