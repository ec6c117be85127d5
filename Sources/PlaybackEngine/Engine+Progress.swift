import FoundationEssentials
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The engine's side of the watches that run only while the transport plays (see
/// ``EngineState/followProgress(now:)``): its countdowns sample the pipeline, and, while the
/// silent fallback sink plays because no sound server answered, look for one. Both stop as
/// soon as the transport does not play, so a paused player never wakes for them.
extension Engine {
    /// How often a player on the fallback sink looks for a sound server.
    static let serverCheckInterval = Duration.seconds(2)

    /// Clients are shown playback waiting for the audio (Apple's rate 0).
    package var isWaitingForAudio: Bool { state.progress.watch.isWaiting }
    /// The position clock stands where the audio is.
    var isHoldingClock: Bool { state.progress.watch.isHolding }

    /// While the fallback sink plays: when a sound server answers, playback moves to it (see
    /// ``EngineState/serverAnswered(at:now:)``, whose actions it returns, to carry out in the
    /// step under way); otherwise it looks again in a while.
    func checkForServer() -> [EngineState.Action] {
        guard state.looksForServer(systemOutput: audioSink == nil) else {
            serverCheck.cancel()
            return []
        }
        let environment = ProcessInfo.processInfo.environment
        guard let socket = SoundServerSocket.path(environment: environment) else { return [] }
        guard SoundServerSocket.accepts(socket) else {
            serverCheck.start(after: Self.serverCheckInterval, leeway: .milliseconds(200)) { [weak self] in
                self?.run([.checkForServer])
            }
            return []
        }
        serverCheck.cancel()
        return state.serverAnswered(at: socket, now: .now)
    }
}
