import Dispatch
import PlaybackVocabulary

/// A one-shot timer on the main queue: the thin shell around a part whose decisions are
/// pure. Starting it again replaces the running countdown, and cancelling it (or freeing
/// it) means the handler never runs, so an idle player wakes for nothing.
///
/// One dispatch timer serves every countdown: it is armed again rather than made anew, and
/// disarmed rather than cancelled. Making and cancelling a source each time costs a wake-up
/// of a dispatch thread of its own, and the progress watch starts a countdown several times
/// a second while playing.
@MainActor
final class Countdown {
    private var timer: (any DispatchSourceTimer)?
    /// What runs when the countdown armed now ends (nil: none is armed).
    private var pending: (@MainActor () -> Void)?

    /// Whether a countdown runs.
    var isRunning: Bool { pending != nil }

    /// Runs `fire` on the main actor after `delay`, unless cancelled or started again first.
    func start(
        after delay: Duration, leeway: DispatchTimeInterval = .nanoseconds(0), _ fire: @escaping @MainActor () -> Void
    ) {
        pending = fire
        armedTimer().schedule(deadline: .now() + delay.dispatchInterval, leeway: leeway)
    }

    /// Stops the countdown; its handler does not run.
    func cancel() {
        guard pending != nil else { return }
        pending = nil
        timer?.schedule(deadline: .distantFuture)
    }

    /// The timer, made and resumed the first time it is armed.
    private func armedTimer() -> any DispatchSourceTimer {
        if let timer { return timer }
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                // A firing already queued when the countdown was cancelled finds none armed.
                guard let self, let fire = self.pending else { return }
                self.pending = nil
                fire()
            }
        }
        timer.resume()
        self.timer = timer
        return timer
    }

    isolated deinit { timer?.cancel() }
}
