internal import CLibcShims
import Glibc

/// What Linux's scheduler did with each thread of the process, from
/// `/proc/self/task/*/schedstat` ("<ns on a CPU> <ns waiting on a run queue> <slices>") and
/// the state in `/proc/self/task/*/stat`.
package struct SchedulerReading: Sendable, Equatable {
    /// One thread's totals since it started, and its state when read.
    package struct Thread: Sendable, Equatable {
        /// Time on a CPU.
        package var running: Duration
        /// Time runnable on a run queue, added when the thread next gets a CPU.
        package var waiting: Duration
        /// Runnable (state R: on a CPU or waiting for one) when read.
        package var runnable: Bool

        /// A thread's totals.
        package init(running: Duration, waiting: Duration, runnable: Bool = false) {
            self.running = running
            self.waiting = waiting
            self.runnable = runnable
        }
    }

    /// Every thread, by its id.
    package var threads: [Int32: Thread]
    /// The thread that took the reading: it was running then, which tells nothing.
    package var reader: Int32

    /// A reading from its figures.
    package init(threads: [Int32: Thread], reader: Int32) {
        self.threads = threads
        self.reader = reader
    }

    /// Whether this kernel reports the statistics: without CONFIG_SCHED_INFO the files are
    /// missing, and an older kernel without it prints zeros, even for the thread reading.
    package static let isAvailable: Bool = {
        let thread = csystem_thread_id()
        return read("/proc/self/task/\(thread)/schedstat").flatMap(parseTimes).map { $0.running > .zero } ?? false
    }()

    /// The calling thread's id (gettid).
    package static var currentThread: Int32 { csystem_thread_id() }

    /// Reads every thread of the process now; nil when the statistics cannot be read. A
    /// thread that ends while it is read is left out.
    package static func take() -> SchedulerReading? {
        guard let folder = opendir("/proc/self/task") else { return nil }
        defer { closedir(folder) }
        var threads: [Int32: Thread] = [:]
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let tid = Int32(name),
                let times = read("/proc/self/task/\(tid)/schedstat").flatMap(parseTimes),
                let state = read("/proc/self/task/\(tid)/stat").flatMap(parseState)
            else { continue }
            threads[tid] = Thread(running: times.running, waiting: times.waiting, runnable: state == "R")
        }
        let reader = csystem_thread_id()
        guard threads[reader] != nil else { return nil }
        return SchedulerReading(threads: threads, reader: reader)
    }

    /// A schedstat line's first two figures, in nanoseconds.
    static func parseTimes(_ line: String) -> (running: Duration, waiting: Duration)? {
        let fields = line.split(whereSeparator: \.isWhitespace)
        guard fields.count >= 2, let running = Int64(fields[0]), let waiting = Int64(fields[1]) else { return nil }
        return (.nanoseconds(running), .nanoseconds(waiting))
    }

    /// A stat line's state letter: the field after the command, which is in parentheses and
    /// may hold spaces and parentheses itself, so the last ")" ends it.
    static func parseState(_ line: String) -> Character? {
        guard let close = line.lastIndex(of: ")") else { return nil }
        return line[line.index(after: close)...].first { !$0.isWhitespace }
    }

    /// A small file of /proc, whole; nil when it cannot be read.
    private static func read(_ path: String) -> String? {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        // A stat line is some 300 bytes; schedstat, some 30.
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
