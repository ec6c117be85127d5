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
    /// Where the watchdog's timer fires and its reports are made, in order.
    private let watchdogQueue: DispatchQueue
    /// The watchdog's one timer: it ticks every half of the limit from a job's start, for as
    /// long as jobs keep starting, and stands once a tick finds none run since the last one.
    /// One timer, not one per job: making and cancelling a timer wakes Dispatch's timer
    /// thread each time, and a pipeline runs a job for every command. Dispatch's sources
    /// may be scheduled from any thread, which its Swift overlay does not declare.
    nonisolated(unsafe) private let watchdog: any DispatchSourceTimer
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
        /// The watchdog's timer ticks (it stands while no job runs).
        var ticking = false
        /// A job started since the watchdog's last tick.
        var startedSinceTick = false
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
        watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
        watchdog.schedule(deadline: .distantFuture)
        watchdog.setEventHandler { [weak self] in self?.tick() }
        watchdog.resume()
    }

    deinit {
        watchdog.cancel()
    }

    /// Whether the owner let go of the queue.
    var isRetired: Bool { control.withLock { $0.isRetired } }
    /// Whether what the jobs report should go unheard: retired, or a job got stuck.
    var isSilenced: Bool { control.withLock { $0.isRetired || $0.stuck != nil } }
    /// Whether the watchdog's timer ticks: from a job's start until a tick finds no job
    /// started since the one before.
    var isWatching: Bool { control.withLock { $0.ticking } }
    /// How many jobs have started on the queue.
    var jobsStarted: UInt64 { control.withLock { $0.nextJob } }
    /// The job that got stuck, if one did: when it started, and why it was taken for stuck.
    var stuck: (since: ContinuousClock.Instant, why: StuckCall)? { control.withLock { $0.stuck } }

    /// Lets go of the queue: jobs still waiting are skipped, and nothing more is reported.
    func retire() {
        control.withLock { $0.isRetired = true }
    }

    /// Runs `body` on the queue, timed: should it not return within `limit`, the watchdog
    /// looks at it (see ``StarvationCheck``). Skipped once the queue is retired or stuck.
    func run(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in _ = perform(body) }
    }

    /// Runs `body` on the queue every `period`, each run timed as ``run(_:)`` times a job,
    /// until the timer returned is cancelled, `body` returns false, or the queue is retired
    /// or stuck. One timer on the queue itself: a run wakes the queue's thread and nothing
    /// else.
    func every(_ period: Duration, _ body: @escaping @Sendable () -> Bool) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = period.dispatchInterval
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: (period / 20).dispatchInterval)
        // The handler holds the timer until it is cancelled, when Dispatch lets go of both.
        timer.setEventHandler { [weak self] in
            var goesOn = false
            if self?.perform({ goesOn = body() }) != true || !goesOn { timer.cancel() }
        }
        timer.resume()
        return timer
    }

    /// Runs `body` here and now, on the queue, timed; false when skipped (retired or stuck).
    private func perform(_ body: () -> Void) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        // The thread is known before the job counts as running, so the watchdog never
        // looks at a job without it.
        let thread = SchedulerReading.currentThread
        let started: Bool = control.withLock { control in
            guard !control.isRetired, control.stuck == nil else { return false }
            control.nextJob += 1
            control.running = control.nextJob
            control.startedAt = .now
            control.thread = thread
            control.reportedSlow = false
            control.startedSinceTick = true
            if !control.ticking {
                // Under the lock, so that a tick that stops the timer cannot overtake it.
                control.ticking = true
                let half = (limit / 2).dispatchInterval
                watchdog.schedule(deadline: .now() + half, repeating: half)
            }
            return true
        }
        guard started else { return false }
        body()
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
        return true
    }

    /// The watchdog's tick, on its queue: looks at the job running once it has run for half
    /// the limit, and stops the timer when no job started since the last tick.
    private func tick() {
        let job = control.withLock { control -> UInt64? in
            let startedSinceTick = control.startedSinceTick
            control.startedSinceTick = false
            guard let running = control.running, control.stuck == nil, !control.isRetired else {
                if !startedSinceTick || control.stuck != nil || control.isRetired {
                    control.ticking = false
                    watchdog.schedule(deadline: .distantFuture)
                }
                return nil
            }
            return ContinuousClock.now - control.startedAt >= limit / 2 ? running : nil
        }
        if let job { look(at: job) }
    }

    /// Looks at the job running, on the watchdog's queue: judging, reads the scheduler's
    /// statistics (the first look) or judges the window since the last look; not judging,
    /// takes the job for stuck once it has run for the limit.
    private func look(at job: UInt64) {
        let current = control.withLock { $0.running == job && $0.stuck == nil && !$0.isRetired }
        guard current else { return }
        let reading = judges ? SchedulerReading.take() : nil
        let now = ContinuousClock.now
        let outcome = control.withLock { control -> Report? in
            guard control.running == job, control.stuck == nil, !control.isRetired else { return nil }
            let previous = control.lastReading
            let verdict: StarvationCheck.Verdict
            if let reading, let (before, then) = previous {
                control.lastReading = (reading, now)
                verdict = StarvationCheck(before: before, after: reading, thread: control.thread, window: now - then)
                    .verdict(ranFor: now - control.startedAt, cap: patience)
            } else if let reading {
                // The first look: what the next window is judged from.
                control.lastReading = (reading, now)
                return nil
            } else {
                // No statistics (or they could not be read): stuck at the limit, as ever.
                guard now - control.startedAt >= limit else { return nil }
                verdict = .stuck(.unjudged)
            }
            switch verdict {
            case .stuck(let why):
                control.stuck = (control.startedAt, why)
                return .stuck(since: control.startedAt, why)
            case .waitAgain(let why):
                guard !control.reportedSlow else { return nil }
                control.reportedSlow = true
                return .slow(since: control.startedAt, why)
            }
        }
        if let outcome { report(outcome) }
    }
}
