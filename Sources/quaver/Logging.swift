import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Media
import PlaybackEngine
import PlaybackPlayer

/// Log lines on stderr: `quaver[warning]: message`. When stderr is the journal
/// (`JOURNAL_STREAM` set), each line starts with its syslog priority (`<4>`) instead.
///
/// Warnings and errors are also kept in `recentProblems` (when given), for `quaver doctor`.
/// No line holds the credentials of a URL (`MediaSources.redactingCredentials(in:)`).
struct ConsoleLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let toJournal: Bool
    let recentProblems: ProblemLog?

    init(level: Logger.Level, recentProblems: ProblemLog? = nil) {
        self.logLevel = level
        self.toJournal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil
        self.recentProblems = recentProblems
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        // Credentials in a URL are left out of every line, wherever it was written from;
        // before the line is cut, so that no cut leaves part of one.
        let text = Self.sanitized(MediaSources.redactingCredentials(in: "\(event.message)"))
        let line: String
        if toJournal {
            line = "<\(Self.priority(event.level))>\(text)\n"
        } else {
            line = "quaver[\(event.level)]: \(text)\n"
        }
        // write(2) straight to stderr: FileHandle is in full Foundation. A failed write is
        // dropped, as there is nowhere left to report it.
        _ = PrivateFolder.writeAll(Data(line.utf8), to: STDERR_FILENO)
        if event.level >= .warning { recentProblems?.append("\(event.level): \(text)") }
    }

    /// The longest message written, in characters; the rest is cut with a note.
    static let maximumLength = 2_000

    /// One line, whatever a client sent: control characters (a newline that would forge a
    /// second line, a journald `<2>`, terminal escapes) are written as `\n` or `\u{1B}`,
    /// and the line is cut at `maximumLength`.
    static func sanitized(_ message: String) -> String {
        guard
            message.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                || message.utf8.count > maximumLength
        else {
            return message
        }
        var result = ""
        var length = 0
        for scalar in message.unicodeScalars {
            if length >= maximumLength {
                result += "… (cut)"
                break
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
            length += 1
        }
        return result
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

/// The last warnings and errors, one per line with its time, in
/// `$XDG_STATE_HOME/quaver/problems.log`. Appends are single writes to an O_APPEND file;
/// past 64 KiB the older half is dropped, so the file stays small without a timer. The file
/// is 0600 in the state folder (0700), through every trim; a state folder that is a symbolic
/// link is not written through (the state store says so once: a log line from here would
/// come back here).
///
/// A warning is often logged on the main actor, which must never wait for the disk: the
/// line is stamped at once and written on a serial queue of its own, in order.
final class ProblemLog: Sendable {
    let file: URL
    static let limit = 64 * 1024
    /// Where every problem log of the process writes, one line after another.
    private static let writer = DispatchQueue(label: "quaver.problems", qos: .utility)

    init(file: URL) { self.file = file }

    private var folder: PrivateFolder { PrivateFolder(file.deletingLastPathComponent()) }

    /// Keeps `text` as one line with the time now; it is written off the caller's thread.
    func append(_ text: String) {
        let line =
            "\(Self.timestamp()) \(text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " "))\n"
        Self.writer.async { [self] in write(line) }
    }

    /// Runs `body` on the main queue once the lines appended so far are written, so that
    /// the last warnings before an exit reach the file.
    static func afterPendingWrites(_ body: @escaping @MainActor @Sendable () -> Void) {
        writer.async { DispatchQueue.main.async { MainActor.assumeIsolated(body) } }
    }

    private func write(_ line: String) {
        guard let directory = try? folder.open() else { return }
        defer { close(directory) }
        let name = file.lastPathComponent
        let fd = openat(directory, name, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = PrivateFolder.writeAll(Data(line.utf8), to: fd)
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        // A file made wider by hand, or by another program, is made private again.
        if info.st_mode & 0o777 != 0o600 { fchmod(fd, 0o600) }
        guard Int(info.st_size) > Self.limit else { return }
        // Only the half kept is read, from the end, whatever the file's size.
        let keep = Self.limit / 2
        var kept = Data(count: keep)
        let count = kept.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, keep, off_t(info.st_size) - off_t(keep)) }
        guard count > 0 else { return }
        kept = kept.prefix(count)
        if let newline = kept.firstIndex(of: UInt8(ascii: "\n")) { kept = kept[(newline + 1)...] }
        try? PrivateFolder.replace(name, in: directory, with: Data(kept), sync: false, folderPath: folder.url.path)
    }

    /// Now in UTC, as ISO 8601 (`2026-11-25T03:11:00Z`), from the C library. Foundation's
    /// `ISO8601DateFormatter` would open an ICU calendar, and the first warning would page
    /// ICU's data into a daemon that otherwise never touches it.
    static func timestamp(_ time: time_t = time(nil)) -> String {
        var now = time
        var fields = tm()
        guard gmtime_r(&now, &fields) != nil else { return "?" }
        var buffer = [CChar](repeating: 0, count: 32)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &fields)
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The last `count` lines, without the credentials of URLs (a file an older Quaver
    /// wrote may hold some).
    func last(_ count: Int) -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").suffix(count).map { MediaSources.redactingCredentials(in: String($0)) }
    }
}
