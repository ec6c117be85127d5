import Foundation
import Logging

/// Log lines on stderr: `quaver[warning]: message`. When stderr is the journal
/// (`JOURNAL_STREAM` set), each line starts with its syslog priority (`<4>`) instead.
struct ConsoleLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let toJournal: Bool

    init(level: Logger.Level) {
        self.logLevel = level
        self.toJournal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let text = "\(event.message)"
        let line: String
        if toJournal {
            line = "<\(Self.priority(event.level))>\(text)\n"
        } else {
            line = "quaver[\(event.level)]: \(text)\n"
        }
        FileHandle.standardError.write(Data(line.utf8))
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
