import Foundation

/// What `/proc` says about one process at one moment: CPU time, context switches per thread
/// and resident memory.
struct ProcSample {
    /// utime + stime of the whole process (every thread, living or gone), in clock ticks.
    var cpuTicks: UInt64
    /// voluntary + involuntary context switches of each thread that exists now, by thread id.
    var switchesByThread: [Int: UInt64]
    /// VmRSS in KiB.
    var rssKiB: UInt64
    var time: ContinuousClock.Instant

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Reads `/proc/<pid>`; throws when the process is gone.
    init(pid: Int32) throws {
        time = .now
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        guard let close = stat.lastIndex(of: ")") else { throw BenchError("unreadable /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard fields.count > 13, let utime = UInt64(fields[11]), let stime = UInt64(fields[12]) else {
            throw BenchError("unreadable /proc/\(pid)/stat")
        }
        cpuTicks = utime + stime

        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        rssKiB = Self.field("VmRSS", in: status) ?? 0

        var switches: [Int: UInt64] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let tid = Int(task),
                let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }  // the thread ended while we looked
            switches[tid] =
                (Self.field("voluntary_ctxt_switches", in: text) ?? 0)
                + (Self.field("nonvoluntary_ctxt_switches", in: text) ?? 0)
        }
        switchesByThread = switches
    }

    /// The number after `name:` in a `/proc/.../status` text (units dropped).
    static func field(_ name: String, in text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap {
                UInt64($0)
            }
        }
        return nil
    }

    /// CPU seconds from `earlier` to this sample.
    func cpuSeconds(since earlier: ProcSample) -> Double {
        Double(cpuTicks &- earlier.cpuTicks) / Self.ticksPerSecond
    }

    /// Context switches from `earlier` to this sample: for threads present in both, the
    /// difference; for threads born in between, all of theirs. (Threads that were born and
    /// died in between are not seen.)
    func contextSwitches(since earlier: ProcSample) -> UInt64 {
        var total: UInt64 = 0
        for (tid, count) in switchesByThread {
            if let before = earlier.switchesByThread[tid] {
                total += count >= before ? count - before : count
            } else {
                total += count
            }
        }
        return total
    }
}
