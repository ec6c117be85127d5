import Foundation
import Logging
import Testing

@testable import quaver

/// The pages of the program that only the start used go back to the kernel: tried on the
/// test process itself, whose program (every test) is large and has run plenty of code by
/// now. What is still used comes back at its next touch, as this test's own code does.
@Suite("start-up's pages of the program")
struct StartupPagesTests {
    /// `field` of /proc/self/status, in KiB.
    static func kibibytes(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    @Test func theProgramsPagesGoBack() throws {
        let before = try #require(Self.kibibytes("RssFile"))
        let lines = LogLines()
        StartupPages.release(logger: Logger(label: "test") { _ in lines })
        let after = try #require(Self.kibibytes("RssFile"))
        #expect(after < before - 1024, "RssFile \(before) KiB before, \(after) KiB after")
        let said = lines.all
        #expect(said.count == 1 && said[0].contains("start-up over"), "\(said)")
    }
}

/// A log handler that keeps every line, at every level.
final class LogLines: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var all: [String] { lock.withLock { lines } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lock.withLock { lines.append("\(event.message)") }
    }
}
