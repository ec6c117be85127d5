import Foundation
import Logging

/// Log lines on stderr: `quaver[warning]: message`. When stderr is the journal
/// (`JOURNAL_STREAM` set), each line starts with its syslog priority (`<4>`) instead.
///
/// Warnings and errors are also kept in `recentProblems` (when given), for `quaver doctor`.
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
        let text = Self.sanitized("\(event.message)")
        let line: String
        if toJournal {
            line = "<\(Self.priority(event.level))>\(text)\n"
        } else {
            line = "quaver[\(event.level)]: \(text)\n"
        }
        FileHandle.standardError.write(Data(line.utf8))
        if event.level >= .warning { recentProblems?.append("\(event.level): \(text)") }
    }

    /// The longest message written, in characters; the rest is cut with a note.
    static let maximumLength = 2_000

    /// One line, whatever a client sent: control characters (a newline that would forge a
    /// second line, a journald `<2>`, terminal escapes) are written as `\n` or `\u{1B}`,
    /// and the line is cut at `maximumLength`.
    static func sanitized(_ message: String) -> String {
        guard message.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) || message.utf8.count > maximumLength else {
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
            case _ where scalar.properties.generalCategory == .control: result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
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
/// past 64 KiB the older half is dropped, so the file stays small without a timer.
final class ProblemLog: Sendable {
    let file: URL
    static let limit = 64 * 1024

    init(file: URL) { self.file = file }

    func append(_ text: String) {
        let line = "\(Self.timestamp()) \(text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " "))\n"
        try? FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(file.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = line.withCString { write(fd, $0, strlen($0)) }
        var info = stat()
        if fstat(fd, &info) == 0, Int(info.st_size) > Self.limit, let data = try? Data(contentsOf: file) {
            var kept = data.suffix(Self.limit / 2)
            if let newline = kept.firstIndex(of: UInt8(ascii: "\n")) { kept = kept[(newline + 1)...] }
            try? kept.write(to: file, options: .atomic)
        }
    }

    /// Now in UTC, as ISO 8601 (`2026-11-25T03:11:00Z`), from the C library. Foundation's
    /// `ISO8601DateFormatter` would open an ICU calendar, and the first warning would page
    /// about 5 MiB of ICU data into a daemon that otherwise never touches it.
    static func timestamp(_ time: time_t = time(nil)) -> String {
        var now = time
        var fields = tm()
        guard gmtime_r(&now, &fields) != nil else { return "?" }
        var buffer = [CChar](repeating: 0, count: 32)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &fields)
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The last `count` lines.
    func last(_ count: Int) -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return Array(text.split(separator: "\n").suffix(count).map(String.init))
    }
}
