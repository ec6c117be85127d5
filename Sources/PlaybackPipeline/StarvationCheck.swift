/// Why a call into GStreamer that ran past the stuck limit is not taken for stuck (yet).
package enum SlowCall: Sendable, Equatable {
    /// The call's own thread ran on a CPU through the window: it is slow, not blocked.
    case working
    /// The call's thread, or the process, waited for a CPU it did not get: the machine is
    /// too busy to run it, and a new pipeline would wait just the same.
    case starved
}

/// Why a call into GStreamer was taken for stuck.
package enum StuckCall: Sendable, Equatable {
    /// Over a whole window neither the call's thread ran or waited to run, nor did the
    /// process wait for a CPU: the call waits on something that does not come (a deadlock).
    case blocked
    /// The call's thread kept working past the patience for slow calls (a call that does
    /// not end, such as a loop inside GStreamer).
    case busyPastCap
    /// The process looked starved of CPU for the whole patience: a loaded machine and a
    /// call blocked behind a streaming thread that spins look alike by these figures, and a
    /// queue that waits for ever on one shows Playing for good.
    case starvedPastCap
    /// The kernel does not report its scheduler's statistics (CONFIG_SCHED_INFO off): a call
    /// past the limit is taken for stuck without telling a busy machine from a deadlock.
    case unjudged
}

/// Tells a call into GStreamer that is blocked (a deadlock) from one that is slow or starved
/// of CPU, from how the scheduler treated the process's threads over a window while the
/// call ran: a pure decision, which ``WatchedQueue`` takes each time its watchdog looks.
///
/// A thread blocked on a lock neither runs nor waits on a run queue; a slow call's thread
/// runs; a starved one is runnable and waits. Linux adds a thread's wait to its statistics
/// only when the thread next gets a CPU, so a thread starved through a whole window can show
/// no wait at all in it: whether it was runnable when read counts as much as its wait.
package struct StarvationCheck: Sendable, Equatable {
    /// What the check makes of the window.
    package enum Verdict: Sendable, Equatable {
        /// Not stuck: the watchdog looks again after another window.
        case waitAgain(SlowCall)
        /// Stuck: the pipeline is to be replaced.
        case stuck(StuckCall)
    }

    /// How long a thread, or the process's threads together, ran and waited for a CPU over
    /// the window, and whether it was runnable at its end: the same three figures a reading
    /// keeps of each thread since it started.
    package typealias Times = SchedulerReading.Thread

    /// How the thread that runs the call fared.
    package var call: Times
    /// How the process's threads fared, summed (``Times/runnable``: whether any thread but
    /// the one that read the statistics was runnable at the end).
    package var process: Times
    /// How long the window lasted, between the two readings.
    package var window: Duration

    /// A window's check from its figures.
    package init(call: Times, process: Times, window: Duration) {
        self.call = call
        self.process = process
        self.window = window
    }

    /// A window's check from the readings at its two ends: `thread` is the one that runs the
    /// call. A thread that appeared meanwhile counts whole; one that ended is not counted.
    package init(before: SchedulerReading, after: SchedulerReading, thread: Int32, window: Duration) {
        func since(_ tid: Int32, _ now: SchedulerReading.Thread) -> Times {
            let then = before.threads[tid]
            // A thread number used again by a newer thread reads less than before: the newer
            // thread's totals are all it did, and it started within the window.
            let fresh = then.map { $0.running > now.running || $0.waiting > now.waiting } ?? true
            return Times(
                running: now.running - (fresh ? .zero : then!.running),
                waiting: now.waiting - (fresh ? .zero : then!.waiting), runnable: now.runnable)
        }
        call = after.threads[thread].map { since(thread, $0) } ?? Times(running: .zero, waiting: .zero)
        process = Times(running: .zero, waiting: .zero)
        for (tid, now) in after.threads {
            let times = since(tid, now)
            process.running += times.running
            process.waiting += times.waiting
            if tid != after.reader, now.runnable { process.runnable = true }
        }
        self.window = window
    }

    /// How long a call whose thread keeps working is waited on, in all, before it counts as
    /// stuck all the same: twenty times the stuck limit, a minute at the default 3 s (slow
    /// calls on odd files rendered unsynced were seen to return after 4.8 s up to 60 s).
    package static func patience(limit: Duration) -> Duration { limit * 20 }

    /// The share of the window (one part in this many) a thread must run to count as working,
    /// or wait to count as starved. A blocked thread measures 0.0 ms of either; a thread that
    /// spins beside other loads got at least a quarter of its CPU here (38 of 150 ms on two
    /// cores with a build running), so a tenth leaves room for a busier machine.
    static let share = 10

    /// How many times as long as they ran the process's threads must have waited for a CPU
    /// for the process to count as starved. Under `chrt -i 0` (SCHED_IDLE) beside three
    /// loops on its core, a process ran 2 ms and waited 1 to 3 s per 1.5 s window; at
    /// `nice 19`, 6 to 8 ms against 1.1 to 1.8 s. At normal priority on the same busy core it
    /// waited at most 4.6 times as long as it ran: a busy machine that still runs it is no
    /// excuse for a call that does not move.
    static let starvedRatio = 10

    /// The verdict on the window, for a call that has run for `ranFor` so far: a call whose
    /// thread works, or that looks starved of CPU, is waited on up to `cap` in all.
    package func verdict(ranFor: Duration, cap: Duration) -> Verdict {
        let part = window / Self.share
        if call.running >= part {
            return ranFor >= cap ? .stuck(.busyPastCap) : .waitAgain(.working)
        }
        // Runnable, yet it ran less than its part: it waits for a CPU (the wait it has not
        // yet been given one for does not show before it has).
        if call.runnable || call.waiting >= part {
            return ranFor >= cap ? .stuck(.starvedPastCap) : .waitAgain(.starved)
        }
        // The call's thread waits on another one (a streaming thread, typically): if the
        // process is starved, that one may well be among the threads that wait.
        if isProcessStarved {
            return ranFor >= cap ? .stuck(.starvedPastCap) : .waitAgain(.starved)
        }
        return .stuck(.blocked)
    }

    /// Whether the process's threads waited for a CPU far longer than they ran (see
    /// ``starvedRatio``): a machine too busy to run the process, whatever it does. The
    /// waiting must show, as time or as a thread runnable at the end.
    package var isProcessStarved: Bool {
        let waitedMost = process.waiting > .zero && process.waiting >= process.running * Self.starvedRatio
        return waitedMost && (process.waiting >= window / Self.share || process.runnable)
    }
}
