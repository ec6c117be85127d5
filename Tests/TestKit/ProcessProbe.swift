import Foundation

/// What Linux's `/proc` tells of a running process (a daemon a test started): its memory,
/// its CPU time, its open descriptors and what it maps. Tests read these to catch leaks and
/// unwanted libraries; each reading is nil (or empty) once the process is gone.
public enum ProcessProbe {
    /// A field of `/proc/PID/status` in KiB, such as `VmRSS` (resident now) or `VmHWM`
    /// (the peak resident size).
    public static func kibibytes(_ field: String, of pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            // "VmRSS:\t   1234 kB"
            let value = line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces)
            return Int(value.split(separator: " ").first ?? "")
        }
        return nil
    }

    /// The resident memory (`VmRSS`) in bytes.
    public static func residentBytes(of pid: Int32) -> Int? {
        kibibytes("VmRSS", of: pid).map { $0 << 10 }
    }

    /// User and system CPU time, in seconds.
    public static func cpuSeconds(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15. The
        // command name may hold spaces and parentheses, hence the last ")".
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
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
        // Read whole: String(contentsOfFile:) stops after the first page of a /proc file.
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else { return nil }
        return String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
    }
}
