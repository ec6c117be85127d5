/// What the engine asks of, and tells, the one that owns it (the ``Player``).
@MainActor
package protocol EngineOwner: AnyObject {
    /// The status the commands received so far lead to, loads waiting on tags included.
    var requestedStatus: PlaybackStatus { get }
    /// The queued entry with `id`, if any.
    func entry(id: UInt64) -> QueueEntry?
    /// The gain the entry with `id` plays at.
    func loudnessPlan(for id: UInt64) -> LoudnessPlan?
    /// A load started: playbin may ask for what follows it at any moment.
    func prepareNext()
    /// The transport settled in a new state (see ``Transport/Action/publish``).
    func settled()
    /// The entry `id` cannot play, for `reason`: what follows it plays.
    func skip(_ id: UInt64, reason: String, intent: PlaybackStatus?)
    /// The loaded entry ended.
    func advance(from id: UInt64)
    /// playbin switched gaplessly from `previous` to `next`; false when `next` is no longer
    /// queued (the switch is then not followed).
    func switches(from previous: UInt64?, to next: UInt64) -> Bool
    /// The stream handed over to follow the loaded one failed before it started; false when
    /// the failure is the loaded stream's after all (the entry was read, and is a file).
    func handedOverFailed(_ id: UInt64, reason: String) -> Bool
    /// The stream handed over to follow the loaded one sent nothing within the stall limit
    /// after the loaded one ended.
    func handedOverStalled(_ id: UInt64, reason: String)
    /// The timing or the volume changed without a settled transition.
    func engineChanged(_ change: PlaybackChange)
    /// The sound server asks for a state (it corks a stream while a call plays).
    func stateRequested(_ state: Pipeline.State)
    /// The loaded network stream's tags changed; `picture`: one it carries.
    func streamTagsChanged(_ id: UInt64, picture: StreamTags.Picture?)
    /// The loaded network stream's duration became known.
    func streamDurationChanged(_ id: UInt64)
    /// A stream started at its gain.
    func loudnessApplied(_ plan: LoudnessPlan, gain: Double)
    /// A track without tags was measured whole.
    func loudnessMeasured(_ signature: TrackSignature, _ gain: MeasuredGain)
}
