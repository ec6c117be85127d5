import CLibcShims
import Dispatch
import Foundation
import TestKit
import Testing

@testable import PlaybackPipeline
@testable import PlaybackVocabulary

/// The watchdog on real threads: a job that spins, one blocked on a semaphore, ones that the
/// machine gives no CPU, with a limit of 0.3 s. Serialized: the loops that starve a job
/// would starve another test's job as well.
@Suite("Watched queue: stuck, slow or starved", .serialized)
@MainActor
struct WatchedQueueTests {
    /// What a report says, without the instant.
    enum Kind: Equatable {
        case stuck(StuckCall)
        case slow(SlowCall)
        case returned

        init(_ report: WatchedQueue.Report) {
            switch report {
            case .stuck(_, let why): self = .stuck(why)
            case .slow(_, let why): self = .slow(why)
            case .returned: self = .returned
            }
        }
    }

    /// A watched queue whose reports are recorded on the main actor, in order.
    @MainActor
    final class Watched {
        let recorder = EventRecorder<Kind>()
        let queue: WatchedQueue

        init(limit: Duration = .milliseconds(300), patience: Duration? = nil, judges: Bool = true) {
            let recorder = recorder
            queue = WatchedQueue(label: "test.watched", limit: limit, patience: patience, judges: judges) { report in
                DispatchQueue.main.async { MainActor.assumeIsolated { recorder.record(Kind(report)) } }
            }
        }

        var kinds: [Kind] { recorder.events }

        /// Waits until a report satisfies `check`.
        func waitFor(upTo timeout: Duration = .seconds(5), _ check: @escaping (Kind) -> Bool) async -> Bool {
            await recorder.wait(timeout: timeout) { $0.contains(where: check) }
        }

        /// Waits until every job queued so far has run or been skipped.
        func drain() async {
            await withCheckedContinuation { continuation in queue.queue.async { continuation.resume() } }
        }
    }

    nonisolated static func isStuck(_ kind: Kind) -> Bool { if case .stuck = kind { true } else { false } }
    nonisolated static func isSlow(_ kind: Kind) -> Bool { if case .slow = kind { true } else { false } }

    /// A blocked job reported stuck as blocked; on a machine too busy to run the test process
    /// (a soak beside busy loops) it is first waited for as starved, which the judge does by
    /// design.
    static func stuckAsBlocked(_ kinds: [Kind]) -> Bool {
        kinds.last == .stuck(.blocked) && kinds.dropLast().allSatisfy { $0 == .slow(.starved) }
    }

    /// Keeps one CPU busy with 48 loops of normal priority for `duration`; `loops` is left
    /// once each ends. Returns which CPU.
    nonisolated static func busyCPU(for duration: Duration, _ loops: DispatchGroup) throws -> Int32 {
        let cpu = csystem_last_allowed_cpu()
        try #require(cpu >= 0)
        let end = ContinuousClock.now + duration
        for _ in 0..<48 {
            loops.enter()
            Thread {
                _ = csystem_pin_thread(cpu)
                while ContinuousClock.now < end {}
                loops.leave()
            }.start()
        }
        return cpu
    }

    /// How long the calling thread has run on a CPU.
    nonisolated static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// Keeps a CPU busy until `stop` is set.
    nonisolated static func spin(until stop: Locked<Bool>) {
        while !stop.withLock({ $0 }) {}
    }

    /// A job that computes for four times the limit is slow, not stuck: it is reported
    /// slow once, then that it returned, and the queue goes on.
    @Test func aJobThatWorksPastTheLimitIsSlowNotStuck() async {
        let watched = Watched()
        watched.queue.run {
            let end = ContinuousClock.now + .milliseconds(1200)
            while ContinuousClock.now < end {}
        }
        #expect(await watched.waitFor(upTo: .seconds(10)) { $0 == .returned }, "\(watched.kinds)")
        // On a machine so busy that the spinning thread gets less than a tenth of a CPU over
        // the first window (seen at a load of 10 on two cores), it waits for a CPU rather
        // than works: either way, it is not stuck.
        #expect(
            watched.kinds == [.slow(.working), .returned] || watched.kinds == [.slow(.starved), .returned],
            "\(watched.kinds)")
        #expect(!watched.queue.isSilenced)
        let ran = Locked(false)
        watched.queue.run { ran.withLock { $0 = true } }
        await watched.drain()
        #expect(ran.withLock { $0 }, "the next job runs")
    }

    /// A job blocked on a semaphore neither runs nor waits for a CPU: it is reported stuck,
    /// as blocked, after the limit; the job queued after it is skipped, and its return is
    /// not reported.
    @Test func aJobBlockedPastTheLimitIsStuck() async {
        let watched = Watched()
        let release = DispatchSemaphore(value: 0)
        let asked = ContinuousClock.now
        watched.queue.run { release.wait() }
        #expect(await watched.waitFor(Self.isStuck), "\(watched.kinds)")
        let waited = ContinuousClock.now - asked
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "reported after \(waited)")
        let reported = watched.kinds
        #expect(Self.stuckAsBlocked(reported), "\(reported)")
        #expect(watched.queue.stuck?.why == .blocked)
        #expect(watched.queue.isSilenced)
        let ran = Locked(false)
        watched.queue.run { ran.withLock { $0 = true } }
        release.signal()
        await watched.drain()
        #expect(!ran.withLock { $0 }, "nothing runs after a stuck job")
        #expect(watched.kinds == reported, "nothing is reported after it")
    }

    /// While one CPU runs 48 loops of the same priority for four times the limit, a job whose
    /// thread computes, pinned beside the loops (it gets a forty-ninth of the CPU and is
    /// runnable throughout), is starved, not stuck: reported so once, then that it returned.
    ///
    /// Pinned beside loops rather than run under SCHED_IDLE: a job runs on a thread of
    /// Dispatch's pool, which a process without CAP_SYS_NICE could not bring back from
    /// SCHED_IDLE afterwards, while its CPUs it can.
    @Test func jobsStarvedOfCPUAreWaitedOn() async throws {
        let loops = DispatchGroup()
        let cpu = try Self.busyCPU(for: .milliseconds(1200), loops)

        let computing = Watched()
        let stop = Locked(false)
        let pinned = Locked<Int32>(-2)
        computing.queue.run {
            pinned.withLock { $0 = csystem_pin_thread(cpu) }
            Self.spin(until: stop)
            _ = csystem_pin_thread(-1)
        }

        // A job waiting on another thread starved this way is judged by the whole process's
        // figures, which the other suites' threads of this test process sway: it took such a
        // job for blocked in a quiet run, so that rule is checked on measured figures alone
        // (StarvationCheckTests).
        await withCheckedContinuation { continuation in loops.notify(queue: .main) { continuation.resume() } }
        stop.withLock { $0 = true }
        #expect(await computing.waitFor(upTo: .seconds(10)) { $0 == .returned }, "\(computing.kinds)")
        #expect(pinned.withLock { $0 } == 0, "the computing job's thread was pinned")
        #expect(computing.kinds == [.slow(.starved), .returned])
    }

    /// A job that keeps working past its patience is stuck all the same (a loop inside
    /// GStreamer would otherwise hold the pipeline for ever).
    @Test func aJobThatWorksPastItsPatienceIsStuck() async {
        let watched = Watched(limit: .milliseconds(200), patience: .milliseconds(800))
        let stop = Locked(false)
        let asked = ContinuousClock.now
        watched.queue.run { Self.spin(until: stop) }
        #expect(await watched.waitFor(Self.isStuck), "\(watched.kinds)")
        let waited = ContinuousClock.now - asked
        stop.withLock { $0 = true }
        #expect(waited >= .milliseconds(800) && waited < .seconds(5), "reported after \(waited)")
        // Slow at first (working, or starved on a machine too busy to run it); stuck once it
        // worked past its patience.
        #expect(watched.kinds.count == 2 && watched.kinds.first.map(Self.isSlow) == true, "\(watched.kinds)")
        #expect(watched.kinds.last == .stuck(.busyPastCap))
    }

    /// The watchdog wakes nobody while the queue idles: its timer stands within two ticks of
    /// the last job, and ticks again for a job that blocks after that.
    @Test func theWatchdogStandsWhileTheQueueIdles() async throws {
        let watched = Watched()
        watched.queue.run {}
        await watched.drain()
        #expect(watched.queue.isWatching, "a job started the watchdog")
        let stood = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(20)) { !watched.queue.isWatching }
        #expect(stood, "the watchdog still ticks with no job")
        let release = DispatchSemaphore(value: 0)
        watched.queue.run { release.wait() }
        #expect(await watched.waitFor(Self.isStuck), "\(watched.kinds)")
        release.signal()
        #expect(Self.stuckAsBlocked(watched.kinds), "\(watched.kinds)")
    }

    /// A repeating job runs until it says it is done, and not at all once the queue is retired.
    @Test func aRepeatingJobRunsUntilItIsDoneOrTheQueueRetires() async throws {
        let watched = Watched()
        let runs = Locked(0)
        let timer = watched.queue.every(.milliseconds(20)) {
            runs.withLock { runs in
                runs += 1
                return runs < 3
            }
        }
        let done = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(20)) { runs.withLock { $0 } >= 3 }
        #expect(done && timer.isCancelled, "ran \(runs.withLock { $0 }) times")
        try await Task.sleep(for: .milliseconds(100))
        #expect(runs.withLock { $0 } == 3, "no run after it said it was done")

        let retiring = Watched()
        let more = Locked(0)
        let endless = retiring.queue.every(.milliseconds(20)) {
            more.withLock { $0 += 1 }
            return true
        }
        _ = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(20)) { more.withLock { $0 } >= 1 }
        retiring.queue.retire()
        let stopped = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(20)) { endless.isCancelled }
        #expect(stopped, "a retired queue's timer is cancelled at its next run")
    }

    /// Without the scheduler's statistics, a job past the limit is stuck, as before: even
    /// one that works.
    @Test func withoutTheStatisticsAJobPastTheLimitIsStuck() async {
        let watched = Watched(judges: false)
        let stop = Locked(false)
        let asked = ContinuousClock.now
        watched.queue.run { Self.spin(until: stop) }
        #expect(await watched.waitFor(Self.isStuck), "\(watched.kinds)")
        let waited = ContinuousClock.now - asked
        stop.withLock { $0 = true }
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "reported after \(waited)")
        #expect(watched.kinds == [.stuck(.unjudged)])
    }
}
