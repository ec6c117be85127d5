package import PlaybackEngine
package import PlaybackPipeline
package import PlaybackVocabulary

/// Whether an interruption's end resumes playback: Apple's `shouldResume`.
///
/// The sound server corks a music stream (asks for PAUSED) while a call or an alarm plays,
/// and uncorks it (asks for PLAYING) when that ends. Playback resumes then only when it was
/// playing when corked and nobody has paused, stopped, played or changed track since. Pure.
package struct Interruption: Sendable, Equatable {
    /// What a request of the sound server asks of the player.
    package enum Response: Sendable, Equatable {
        /// Pause, and resume when the interruption ends.
        case pause
        /// The interruption is over: play again.
        case resume
        case nothing
    }

    /// Paused by an interruption, and nobody acted since.
    private(set) var shouldResume = false

    /// No interruption yet.
    package init() {}

    /// Someone acted (a command): the end of an interruption no longer resumes.
    package mutating func userActed() {
        shouldResume = false
    }

    /// The sound server asked for `state` while the commands lead to `requested`.
    package func response(to state: Pipeline.State, requested: PlaybackStatus) -> Response {
        switch state {
        case .paused where requested == .playing: .pause
        case .playing where shouldResume: .resume
        default: .nothing
        }
    }

    /// Playback was paused for the interruption (after the pause, which counts as acting).
    package mutating func interrupted() {
        shouldResume = true
    }
}
