public import Logging
import Synchronization

/// Collects what a `Logger` is told, to check the log lines code promises.
public final class LogCapture: Sendable {
    /// One line as it was logged.
    public struct Line: Sendable {
        public var level: Logger.Level
        public var message: String
    }

    private let storage = Mutex<[Line]>([])

    public init() {}

    /// Every line so far, in order.
    public var lines: [Line] { storage.withLock { $0 } }
    /// The text of every line so far, in order.
    public var messages: [String] { lines.map(\.message) }

    /// The text of the lines at `level` or above.
    public func messages(atLeast level: Logger.Level) -> [String] {
        lines.filter { $0.level >= level }.map(\.message)
    }

    /// Lines whose text contains every one of `fragments`.
    public func lines(containing fragments: String...) -> [String] {
        messages.filter { message in fragments.allSatisfy { message.contains($0) } }
    }

    /// A logger whose every line, at every level, lands here.
    public var logger: Logger {
        Logger(label: "quaver.tests") { _ in Handler(capture: self) }
    }

    fileprivate func append(_ line: Line) { storage.withLock { $0.append(line) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.append(Line(level: event.level, message: event.message.description))
        }
    }
}
