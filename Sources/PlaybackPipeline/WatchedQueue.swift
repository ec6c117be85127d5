import Dispatch
import Media
import PlaybackVocabulary

/// A serial queue whose jobs are timed: a job that does not return within `limit` (a call
/// into GStreamer that deadlocked) is reported once, and no job runs after it.
///
/// The ``Pipeline`` runs every call into the playbin here, so that the main actor never waits
/// on GStreamer and a deadlock inside it becomes an event rather than a hang. Once retired
/// (its owner let go of it), the queue skips the jobs still waiting and reports nothing more.
final class WatchedQueue: Sendable {
    /// The serial queue the jobs run on (the bus's dispatch source runs on it too).
    let queue: DispatchQueue
    /// How long a job may take before it counts as stuck.
    let limit: Duration
    private let watchdogQueue: DispatchQueue
    private let control = Locked(Control())
    private let stuck: @Sendable (ContinuousClock.Instant) -> Void

    private struct Control {
        /// The job running, if any (its sequence number), and when it started.
        var running: UInt64?
        var startedAt = ContinuousClock.now
        var nextJob: UInt64 = 0
        /// A job did not return in time: nothing more runs.
        var isStuck = false
        /// The owner let go of the queue: jobs still waiting are skipped.
        var isRetired = false
    }

    /// - Parameter stuck: called once, on a queue of the watchdog's, when a job overruns,
    ///   with the instant that job started.
    init(label: String, limit: Duration, stuck: @escaping @Sendable (ContinuousClock.Instant) -> Void) {
        queue = DispatchQueue(label: label)
        watchdogQueue = DispatchQueue(label: label + ".watchdog")
        self.limit = limit
        self.stuck = stuck
    }

    /// Whether the owner let go of the queue.
    var isRetired: Bool { control.withLock { $0.isRetired } }
    /// Whether what the jobs report should go unheard: retired, or a job got stuck.
    var isSilenced: Bool { control.withLock { $0.isRetired || $0.isStuck } }

    /// Lets go of the queue: jobs still waiting are skipped, and nothing more is reported.
    func retire() {
        control.withLock { $0.isRetired = true }
    }

    /// Runs `body` on the queue, timed: should it not return within `limit`, `stuck` is
    /// called once. Skipped once the queue is retired or stuck.
    func run(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            let job: UInt64? = control.withLock { control in
                guard !control.isRetired, !control.isStuck else { return nil }
                control.nextJob += 1
                control.running = control.nextJob
                control.startedAt = .now
                return control.nextJob
            }
            guard let job else { return }
            // A timer cancelled when the call returns, so that an idle pipeline wakes nobody.
            let watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
            watchdog.schedule(deadline: .now() + limit.dispatchInterval)
            watchdog.setEventHandler { [weak self] in self?.checkProgress(of: job) }
            watchdog.resume()
            body()
            watchdog.cancel()
            control.withLock { $0.running = nil }
        }
    }

    private func checkProgress(of job: UInt64) {
        let overran = control.withLock { control -> ContinuousClock.Instant? in
            guard control.running == job, !control.isStuck else { return nil }
            control.isStuck = true
            return control.isRetired ? nil : control.startedAt
        }
        if let overran { stuck(overran) }
    }
}
