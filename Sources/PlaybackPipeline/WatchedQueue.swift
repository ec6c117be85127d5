import Dispatch
import Media
import PlaybackVocabulary

/// A serial queue whose jobs are timed: a job that does not return within `limit` is looked
/// at, and reported stuck once (a call into GStreamer that deadlocked) only when it is
/// blocked; then no job runs after it. A job that works slowly, or that the machine gives no
/// CPU to, is waited on (see ``StarvationCheck``).
///
/// The ``Pipeline`` runs every call into the playbin here, so that the main actor never waits
/// on GStreamer and a deadlock inside it becomes an event rather than a hang. Once retired
/// (its owner let go of it), the queue skips the jobs still waiting and reports nothing more.
final class WatchedQueue: Sendable {
    /// What the watchdog reports.
    enum Report: Sendable, Equatable {
        /// The job that started at `since` is stuck: nothing more runs.
        case stuck(since: ContinuousClock.Instant, StuckCall)
        /// The job that started at `since` ran past the limit, but is not stuck (once a job).
        case slow(since: ContinuousClock.Instant, SlowCall)
        /// The job that started at `since`, reported slow, returned.
        case returned(since: ContinuousClock.Instant)
    }

    /// The serial queue the jobs run on (the bus's dispatch source runs on it too).
    let queue: DispatchQueue
    /// How long a job may take before it is looked at, and counts as stuck if blocked.
    let limit: Duration
    /// How long a job whose thread keeps working is waited on before it counts as stuck.
    let patience: Duration
    /// Whether the watchdog tells a blocked job from a slow or starved one: the kernel
    /// reports its scheduler's statistics.
    private let judges: Bool
    /// Where the watchdog's timers fire and its reports are made, in order.
    private let watchdogQueue: DispatchQueue
    /// What the queue and its watchdog share.
    private let control = Locked(Control())
    /// Hears the watchdog's reports.
    private let report: @Sendable (Report) -> Void

    /// The state of the queue's jobs, under the lock.
    private struct Control {
        /// The job running, if any (its sequence number).
        var running: UInt64?
        /// When the job running started.
        var startedAt = ContinuousClock.now
        /// The thread the job runs on (its id in /proc/self/task).
        var thread: Int32 = 0
        /// The watchdog's last reading while the job runs, and when it was taken.
        var lastReading: (SchedulerReading, ContinuousClock.Instant)?
        /// The running job was reported slow.
        var reportedSlow = false
        /// The sequence number of the last job started.
        var nextJob: UInt64 = 0
        /// A job did not return in time (the one that started then, and why): nothing more runs.
        var stuck: (since: ContinuousClock.Instant, why: StuckCall)?
        /// The owner let go of the queue: jobs still waiting are skipped.
        var isRetired = false
    }

    /// - Parameter patience: how long a job that keeps working is waited on
    ///   (``StarvationCheck/patience(limit:)`` unless given).
    /// - Parameter judges: whether to tell blocked jobs from slow ones; without the
    ///   scheduler's statistics, every job past the limit is stuck.
    /// - Parameter report: called on a queue of the watchdog's: once when a job is stuck,
    ///   with the instant that job started; once when a job is slow, and when it returns.
    init(
        label: String, limit: Duration, patience: Duration? = nil, judges: Bool = SchedulerReading.isAvailable,
        report: @escaping @Sendable (Report) -> Void
    ) {
        queue = DispatchQueue(label: label)
        watchdogQueue = DispatchQueue(label: label + ".watchdog")
        self.limit = limit
        self.patience = patience ?? StarvationCheck.patience(limit: limit)
        self.judges = judges
        self.report = report
    }

    /// Whether the owner let go of the queue.
    var isRetired: Bool { control.withLock { $0.isRetired } }
    /// Whether what the jobs report should go unheard: retired, or a job got stuck.
    var isSilenced: Bool { control.withLock { $0.isRetired || $0.stuck != nil } }
    /// The job that got stuck, if one did: when it started, and why it was taken for stuck.
    var stuck: (since: ContinuousClock.Instant, why: StuckCall)? { control.withLock { $0.stuck } }

    /// Lets go of the queue: jobs still waiting are skipped, and nothing more is reported.
    func retire() {
        control.withLock { $0.isRetired = true }
    }

    /// Runs `body` on the queue, timed: should it not return within `limit`, the watchdog
    /// looks at it (see ``StarvationCheck``). Skipped once the queue is retired or stuck.
    func run(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            let job: UInt64? = control.withLock { control in
                guard !control.isRetired, control.stuck == nil else { return nil }
                control.nextJob += 1
                control.running = control.nextJob
                control.startedAt = .now
                control.reportedSlow = false
                return control.nextJob
            }
            guard let job else { return }
            // The thread is known only once the job runs on it; read before the watchdog can look.
            let thread = SchedulerReading.currentThread
            control.withLock { $0.thread = thread }
            // A timer cancelled when the call returns, so that an idle pipeline wakes nobody.
            // Judging, it reads the statistics halfway to the limit, then judges every half
            // of it from the limit on; not judging, it looks once, at the limit.
            let watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
            if judges {
                let half = (limit / 2).dispatchInterval
                watchdog.schedule(deadline: .now() + half, repeating: half)
            } else {
                watchdog.schedule(deadline: .now() + limit.dispatchInterval)
            }
            watchdog.setEventHandler { [weak self] in
                if self?.look(at: job) != true { watchdog.cancel() }
            }
            watchdog.resume()
            body()
            watchdog.cancel()
            let returned = control.withLock { control -> ContinuousClock.Instant? in
                defer {
                    control.running = nil
                    control.lastReading = nil
                }
                guard control.reportedSlow, control.stuck == nil, !control.isRetired else { return nil }
                return control.startedAt
            }
            // On the watchdog's queue, after its report that the job was slow.
            if let returned { watchdogQueue.async { [report] in report(.returned(since: returned)) } }
        }
    }

    /// Looks at the job running, on the watchdog's queue: reads the scheduler's statistics
    /// and judges the window since the last look. Returns whether to look again.
    private func look(at job: UInt64) -> Bool {
        let current = control.withLock { $0.running == job && $0.stuck == nil && !$0.isRetired }
        guard current else { return false }
        let reading = judges ? SchedulerReading.take() : nil
        let now = ContinuousClock.now
        let (outcome, again) = control.withLock { control -> (Report?, Bool) in
            guard control.running == job, control.stuck == nil, !control.isRetired else { return (nil, false) }
            let previous = control.lastReading
            let verdict: StarvationCheck.Verdict
            if let reading, let (before, then) = previous {
                control.lastReading = (reading, now)
                verdict = StarvationCheck(before: before, after: reading, thread: control.thread, window: now - then)
                    .verdict(ranFor: now - control.startedAt, cap: patience)
            } else if let reading {
                // The first look: what the next window is judged from.
                control.lastReading = (reading, now)
                return (nil, true)
            } else {
                // No statistics (or they could not be read): stuck at the limit, as ever.
                guard now - control.startedAt >= limit else { return (nil, true) }
                verdict = .stuck(.unjudged)
            }
            switch verdict {
            case .stuck(let why):
                control.stuck = (control.startedAt, why)
                return (.stuck(since: control.startedAt, why), false)
            case .waitAgain(let why):
                guard !control.reportedSlow else { return (nil, true) }
                control.reportedSlow = true
                return (.slow(since: control.startedAt, why), true)
            }
        }
        if let outcome { report(outcome) }
        return again
    }
}
