package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

/// What the engine tells the one that owns it (the player), as values.
///
/// The engine never calls up in the middle of a step: what happens is queued as a report and
/// delivered, in order, once the step that caused it is done, so that the owner's answer (a
/// load, a stop) runs as a new step of its own.
package enum EngineReport: Sendable, Equatable {
    /// The transport settled in a new state (see ``Transport/Action/publish``).
    case settled
    /// The entry cannot play, for `reason`: what follows it plays (the transport is idle).
    case failed(UInt64, reason: String)
    /// The loaded entry ended.
    case ended(UInt64)
    /// playbin switched gaplessly from `from` (nil: nothing was loaded) to the entry handed
    /// over, `to`, which is now the loaded one.
    case switched(from: UInt64?, to: UInt64)
    /// The stream handed over to follow the loaded one failed before it started, for
    /// `reason`: the loaded one goes on.
    case handOverFailed(UInt64, reason: String)
    /// The stream handed over to follow the loaded one sent nothing within the stall limit
    /// after the loaded one ended.
    case handOverStalled(UInt64, reason: String)
    /// A load of this entry started: playbin may ask for what follows at any moment.
    case loadStarted(UInt64)
    /// The timing or the volume changed without a settled transition.
    case changed(PlaybackChange)
    /// The sound server asks for a state (it corks a stream while a call plays).
    case stateRequested(PipelineState)
    /// The loaded network stream's tags changed; `picture`: one it carries.
    case streamTagsChanged(UInt64, picture: StreamTags.Picture?)
    /// The loaded network stream's duration became known.
    case streamDurationChanged(UInt64)
    /// A stream started at its gain.
    case loudnessApplied(LoudnessPlan, gain: Double)
    /// A track without tags was measured whole.
    case loudnessMeasured(TrackSignature, MeasuredGain)
}

/// What the engine needs to know of an entry it loads or holds next, handed down with the
/// command that names it: the engine never asks for it.
package struct EntryFacts: Sendable, Equatable {
    /// The entry's length, from its tags (nil: not known; a stream's).
    package var length: Duration?
    /// The gain it plays at (nil: as it is).
    package var loudness: LoudnessPlan?

    /// Facts of an entry `length` long, to play at `loudness`.
    package init(length: Duration? = nil, loudness: LoudnessPlan? = nil) {
        self.length = length
        self.loudness = loudness
    }
}
