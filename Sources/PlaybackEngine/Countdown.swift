import Dispatch
import PlaybackVocabulary

/// A one-shot timer on the main queue: the thin shell around a part whose decisions are
/// pure. Starting it again replaces the running countdown, and cancelling it (or freeing
/// it) means the handler never runs, so an idle player wakes for nothing.
@MainActor
final class Countdown {
    private var timer: (any DispatchSourceTimer)?

    /// Whether a countdown runs.
    var isRunning: Bool { timer != nil }

    /// Runs `fire` on the main actor after `delay`, unless cancelled or started again first.
    func start(
        after delay: Duration, leeway: DispatchTimeInterval = .nanoseconds(0), _ fire: @escaping @MainActor () -> Void
    ) {
        let timer =
            self.timer
            ?? {
                let timer = DispatchSource.makeTimerSource(queue: .main)
                timer.resume()
                return timer
            }()
        self.timer = timer
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                self?.cancel()
                fire()
            }
        }
        timer.schedule(deadline: .now() + delay.dispatchInterval, leeway: leeway)
    }

    /// Stops the countdown; its handler does not run.
    func cancel() {
        timer?.cancel()
        timer = nil
    }

    isolated deinit { timer?.cancel() }
}
