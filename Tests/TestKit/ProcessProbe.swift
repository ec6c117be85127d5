import Foundation

/// What Linux's `/proc` tells of a running process (a daemon a test or the benchmark
/// started): its memory, its CPU time, its threads' context switches, its open descriptors
/// and what it maps. Tests read these to catch leaks and unwanted libraries, the benchmark
/// to measure; each reading is nil (or empty) once the process is gone.
public enum ProcessProbe {
    /// Clock ticks a second: the unit of the CPU times in `/proc/PID/stat`.
    public static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// `/proc/PID/NAME` whole (`maps`, `smaps`, `status`…); nil when it cannot be opened.
    public static func read(_ name: String, of pid: Int32) -> String? {
        // Read to the end: /proc files claim a size of 0, and String(contentsOfFile:) stops
        // after the first page of one.
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/\(name)") else { return nil }
        defer { try? file.close() }
        return String(decoding: (try? file.readToEnd()) ?? Data(), as: UTF8.self)
    }

    /// The number after `name:` in a text of `/proc` fields (`status`, `smaps_rollup`), its
    /// unit dropped; nil when the field is missing.
    public static func field(_ name: String, in text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            // "VmRSS:\t   1234 kB"
            return line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap {
                UInt64($0)
            }
        }
        return nil
    }

    /// A field of `/proc/PID/status` in KiB, such as `VmRSS` (resident now) or `VmHWM`
    /// (the peak resident size).
    public static func kibibytes(_ field: String, of pid: Int32) -> Int? {
        read("status", of: pid).flatMap { self.field(field, in: $0) }.map { Int($0) }
    }

    /// The resident memory (`VmRSS`) in bytes.
    public static func residentBytes(of pid: Int32) -> Int? {
        kibibytes("VmRSS", of: pid).map { $0 << 10 }
    }

    /// The process's own resident memory (`RssAnon`: its heap, stacks and anonymous
    /// mappings) in bytes, without the pages of its program and libraries, which the kernel
    /// maps in and out (Quaver hands back those only its start used): what it allocated.
    public static func anonymousResidentBytes(of pid: Int32) -> Int? {
        kibibytes("RssAnon", of: pid).map { $0 << 10 }
    }

    /// User and system CPU time of the whole process (every thread, living or gone), in
    /// clock ticks.
    public static func cpuTicks(of pid: Int32) -> UInt64? {
        guard let text = read("stat", of: pid), let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15. The
        // command name may hold spaces and parentheses, hence the last ")".
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        return user + system
    }

    /// User and system CPU time, in seconds.
    public static func cpuSeconds(of pid: Int32) -> Double? {
        cpuTicks(of: pid).map { Double($0) / ticksPerSecond }
    }

    /// Voluntary and involuntary context switches of each thread that exists now, by
    /// thread id.
    public static func contextSwitches(of pid: Int32) -> [Int: UInt64] {
        var switches: [Int: UInt64] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            // A thread that ended while they were listed is passed over.
            guard let tid = Int(task), let text = read("task/\(task)/status", of: pid) else { continue }
            switches[tid] =
                (field("voluntary_ctxt_switches", in: text) ?? 0) + (field("nonvoluntary_ctxt_switches", in: text) ?? 0)
        }
        return switches
    }

    /// How many descriptors are open; -1 when they cannot be listed.
    public static func openDescriptorCount(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// The open descriptors, in order, each as "number -> target".
    public static func openDescriptors(of pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/fd"
        let numbers = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return numbers.sorted { Int($0) ?? 0 < Int($1) ?? 0 }.map { number in
            "\(number) -> \((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + number)) ?? "?")"
        }
    }

    /// `/proc/PID/maps`, whole (every mapping and the file behind it); nil when it cannot
    /// be opened.
    public static func memoryMaps(of pid: Int32) throws -> String? {
        read("maps", of: pid)
    }
}

extension ProcessProbe {
    /// What `/proc` says about one process at one moment: CPU time, context switches per
    /// thread and resident memory. Two samples give what happened between them.
    public struct Sample: Sendable {
        /// utime + stime of the whole process, in clock ticks.
        public var cpuTicks: UInt64
        /// Voluntary + involuntary context switches of each thread that exists now, by
        /// thread id.
        public var switchesByThread: [Int: UInt64]
        /// VmRSS in KiB.
        public var rssKiB: UInt64
        /// When it was taken.
        public var time: ContinuousClock.Instant

        /// Reads `/proc/PID`; throws when the process is gone.
        public init(of pid: Int32) throws {
            time = .now
            guard let ticks = ProcessProbe.cpuTicks(of: pid) else { throw HarnessError("unreadable /proc/\(pid)/stat") }
            cpuTicks = ticks
            guard let status = ProcessProbe.read("status", of: pid) else {
                throw HarnessError("unreadable /proc/\(pid)/status")
            }
            rssKiB = ProcessProbe.field("VmRSS", in: status) ?? 0
            switchesByThread = ProcessProbe.contextSwitches(of: pid)
        }

        /// CPU seconds from `earlier` to this sample.
        public func cpuSeconds(since earlier: Sample) -> Double {
            Double(cpuTicks &- earlier.cpuTicks) / ProcessProbe.ticksPerSecond
        }

        /// Context switches from `earlier` to this sample: for threads present in both, the
        /// difference; for threads born in between, all of theirs. (Threads that were born
        /// and died in between are not seen.)
        public func contextSwitches(since earlier: Sample) -> UInt64 {
            threadSwitches(since: earlier).reduce(0, +)
        }

        /// Context switches from `earlier` to this sample of the thread that switched most.
        public func busiestThreadSwitches(since earlier: Sample) -> UInt64 {
            threadSwitches(since: earlier).max() ?? 0
        }

        private func threadSwitches(since earlier: Sample) -> [UInt64] {
            switchesByThread.map { tid, count in
                guard let before = earlier.switchesByThread[tid], count >= before else { return count }
                return count - before
            }
        }
    }
}
