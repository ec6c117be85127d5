import Testing

@testable import PlaybackPipeline

/// The watchdog's decision without GStreamer or a busy machine: tables of what the scheduler
/// reported over a window (figures measured on this machine where the rows say so), and
/// what becomes of the call.
@Suite("Starvation check: a blocked call from a slow or starved one")
struct StarvationCheckTests {
    typealias Times = StarvationCheck.Times

    static func ms(_ milliseconds: Double) -> Duration { .microseconds(Int64(milliseconds * 1000)) }
    static func times(_ running: Double, _ waiting: Double, runnable: Bool = false) -> Times {
        Times(running: ms(running), waiting: ms(waiting), runnable: runnable)
    }

    /// Whether the process as a whole is starved, as the progress watch asks between two
    /// samples a quarter of a second apart (figures measured on this machine where said).
    @Test func aProcessStarvedOfCPU() {
        let table: [(row: String, process: Times, starved: Bool)] = [
            ("an idle player between two samples", Self.times(1.2, 0.3), false),
            ("a busy machine that still runs it: waited 4.6 times as long as it ran", Self.times(30, 138), false),
            ("at idle priority beside three loops (measured: 2 ms, 1 to 3 s per 1.5 s)", Self.times(0.4, 230), true),
            ("at nice 19 beside them (measured: 6 to 8 ms against 1.1 to 1.8 s)", Self.times(1.2, 250), true),
            ("starved, its wait not yet added, a thread runnable", Self.times(0.1, 2, runnable: true), true),
            ("a few microseconds of wait are not starvation", Self.times(0.01, 0.2), false),
        ]
        for row in table {
            let check = StarvationCheck(call: Self.times(0, 0), process: row.process, window: Self.ms(250))
            #expect(check.isProcessStarved == row.starved, "\(row.row)")
        }
    }

    /// One window of 1.5 s (half the default limit), 3 s into the call, with a minute's patience.
    @Test func theVerdictOnAWindow() {
        let table: [(row: String, call: Times, process: Times, verdict: StarvationCheck.Verdict)] = [
            // Working: the call's own thread runs.
            (
                "a call that spins", Self.times(1400, 50, runnable: true), Self.times(1450, 60, runnable: true),
                .waitAgain(.working)
            ),
            (
                "a spinning call beside a build: a quarter of a CPU", Self.times(380, 1100, runnable: true),
                Self.times(400, 1200, runnable: true), .waitAgain(.working)
            ),
            ("a call that runs a tenth of the window", Self.times(150, 0), Self.times(150, 0), .waitAgain(.working)),
            // Blocked: nothing of the call runs or waits, and the process is not starved.
            (
                "blocked on a lock in an idle process (measured: 0.0 ms, 0.0 ms)", Self.times(0, 0),
                Self.times(0.3, 0.1), .stuck(.blocked)
            ),
            (
                "a call that ran a hair short of a tenth does not count as working", Self.times(149, 0),
                Self.times(149, 0), .stuck(.blocked)
            ),
            (
                "blocked, beside threads that keep busy (a test process)", Self.times(0, 0),
                Self.times(1200, 2800, runnable: true), .stuck(.blocked)
            ),
            (
                "blocked, the process on a core beside three loops at normal priority (152 ms, 708 ms)",
                Self.times(0, 0), Self.times(152.5, 708.7, runnable: true), .stuck(.blocked)
            ),
            (
                "deadlocked while the machine is busy: only the watchdog waited (68 ms late)", Self.times(0, 0),
                Self.times(0.1, 67.8), .stuck(.blocked)
            ),
            (
                "deadlocked in an idle process: a few microseconds are not starvation", Self.times(0, 0),
                Self.times(0.05, 0.6), .stuck(.blocked)
            ),
            // Starved: the call's thread, or the process, wants a CPU it does not get.
            (
                "its own thread runnable, its wait not yet added (measured: 0.0 ms, 0.0 ms, R)",
                Self.times(0, 0, runnable: true), Self.times(0.1, 20, runnable: true), .waitAgain(.starved)
            ),
            (
                "its own thread's wait added at its one slice (0.3 ms, 3050 ms)", Self.times(0.3, 3050),
                Self.times(0.5, 3100), .waitAgain(.starved)
            ),
            (
                "blocked on a streaming thread, the process under SCHED_IDLE (2.2 ms, 995 ms)", Self.times(0, 0),
                Self.times(2.2, 994.8), .waitAgain(.starved)
            ),
            ("the same at nice 19 (8.2 ms, 1569 ms)", Self.times(0, 0), Self.times(8.2, 1569.5), .waitAgain(.starved)),
            (
                "the starved thread's wait not added in this window, but it is runnable", Self.times(0, 0),
                Self.times(0.1, 67.8, runnable: true), .waitAgain(.starved)
            ),
            (
                "waited ten times as long as it ran, and a tenth of the window", Self.times(0, 0),
                Self.times(15, 150), .waitAgain(.starved)
            ),
            ("waited a little less than ten times as long", Self.times(0, 0), Self.times(15.1, 150), .stuck(.blocked)),
        ]
        for row in table {
            let check = StarvationCheck(call: row.call, process: row.process, window: .milliseconds(1500))
            #expect(check.verdict(ranFor: .seconds(3), cap: .seconds(60)) == row.verdict, "\(row.row)")
        }
    }

    /// A call that works, or looks starved of CPU, is waited on up to the patience; one
    /// blocked, never.
    @Test func workingAndStarvedCallsRunOutOfPatience() {
        let working = StarvationCheck(
            call: Self.times(1400, 0, runnable: true), process: Self.times(1400, 0), window: .milliseconds(1500))
        let starved = StarvationCheck(
            call: Self.times(0, 0, runnable: true), process: Self.times(0.1, 50, runnable: true),
            window: .milliseconds(1500))
        let blocked = StarvationCheck(call: Self.times(0, 0), process: Self.times(0.1, 0), window: .milliseconds(1500))
        let table: [(ranFor: Duration, working: StarvationCheck.Verdict, starved: StarvationCheck.Verdict)] = [
            (.seconds(3), .waitAgain(.working), .waitAgain(.starved)),
            (.milliseconds(59_999), .waitAgain(.working), .waitAgain(.starved)),
            (.seconds(60), .stuck(.busyPastCap), .stuck(.starvedPastCap)),
            (.seconds(600), .stuck(.busyPastCap), .stuck(.starvedPastCap)),
        ]
        for row in table {
            #expect(working.verdict(ranFor: row.ranFor, cap: .seconds(60)) == row.working, "\(row.ranFor)")
            #expect(starved.verdict(ranFor: row.ranFor, cap: .seconds(60)) == row.starved, "\(row.ranFor)")
            #expect(blocked.verdict(ranFor: row.ranFor, cap: .seconds(60)) == .stuck(.blocked), "\(row.ranFor)")
        }
        #expect(StarvationCheck.patience(limit: .seconds(3)) == .seconds(60))
    }

    /// The window's figures from two readings: each thread's difference, a thread that
    /// appeared counted whole, one that ended left out, a reused thread number counted as
    /// the newer thread, and the reader's own state no sign of anything.
    @Test func aWindowIsTheDifferenceOfTwoReadings() {
        typealias Thread = SchedulerReading.Thread
        let before = SchedulerReading(
            threads: [
                1: Thread(running: .milliseconds(500), waiting: .milliseconds(20)),
                2: Thread(running: .milliseconds(100), waiting: .milliseconds(10)),
                3: Thread(running: .milliseconds(900), waiting: .milliseconds(900)),
                4: Thread(running: .milliseconds(300), waiting: .milliseconds(40)),
                9: Thread(running: .milliseconds(5), waiting: .zero, runnable: true),
            ], reader: 9)
        let after = SchedulerReading(
            threads: [
                1: Thread(running: .milliseconds(500), waiting: .milliseconds(20)),  // the call's, blocked
                2: Thread(running: .milliseconds(160), waiting: .milliseconds(110)),
                // 3 ended; 4 ended and its number went to a thread that did little yet.
                4: Thread(running: .milliseconds(2), waiting: .milliseconds(1)),
                5: Thread(running: .milliseconds(30), waiting: .milliseconds(70)),  // appeared
                9: Thread(running: .milliseconds(6), waiting: .milliseconds(4), runnable: true),
            ], reader: 9)
        let check = StarvationCheck(before: before, after: after, thread: 1, window: .milliseconds(1500))
        #expect(check.call == Self.times(0, 0))
        #expect(check.process.running == .milliseconds(60 + 2 + 30 + 1))
        #expect(check.process.waiting == .milliseconds(100 + 1 + 70 + 4))
        #expect(!check.process.runnable, "only the reader was runnable")
        #expect(check.verdict(ranFor: .seconds(3), cap: .seconds(60)) == .stuck(.blocked))

        var waiting = after
        waiting.threads[2]?.runnable = true
        let starvedCall = StarvationCheck(before: before, after: waiting, thread: 2, window: .milliseconds(1500))
        #expect(starvedCall.call == Self.times(60, 100, runnable: true))
        #expect(starvedCall.process.runnable)
        #expect(starvedCall.verdict(ranFor: .seconds(3), cap: .seconds(60)) == .waitAgain(.starved))

        let gone = StarvationCheck(before: before, after: after, thread: 3, window: .milliseconds(1500))
        #expect(gone.call == Self.times(0, 0), "a call's thread that is not read did nothing to judge by")
    }

    /// The figures and the state as /proc writes them; a command may hold spaces and
    /// parentheses.
    @Test func theProcFilesAreParsed() {
        let times = SchedulerReading.parseTimes("42035837 86527121 30\n")
        #expect(times?.running == .nanoseconds(42_035_837))
        #expect(times?.waiting == .nanoseconds(86_527_121))
        #expect(SchedulerReading.parseTimes("0 0 0\n")?.running == .zero)
        #expect(SchedulerReading.parseTimes("garbled") == nil)
        #expect(SchedulerReading.parseTimes("12\n") == nil)
        #expect(SchedulerReading.parseState("8814 (quaver) S 1 8814 8814 0 -1 4194560") == "S")
        #expect(SchedulerReading.parseState("8815 (a (b) c) R 1 8814") == "R")
        #expect(SchedulerReading.parseState("8816 (gst) D") == "D")
        #expect(SchedulerReading.parseState("no state") == nil)
    }

    /// This kernel reports the statistics (the watchdog judges with them), and a reading
    /// holds the thread that took it, which has run.
    @Test func theProcessIsRead() throws {
        #expect(SchedulerReading.isAvailable, "this kernel has no /proc/self/task/*/schedstat (CONFIG_SCHED_INFO)")
        let reading = try #require(SchedulerReading.take())
        #expect(reading.reader == SchedulerReading.currentThread)
        let reader = try #require(reading.threads[reading.reader])
        #expect(reader.running > .zero)
        #expect(reader.runnable, "the reader runs while it reads")
        #expect(reading.threads.count > 1, "a test process has more than one thread: \(reading.threads.count)")
    }
}
