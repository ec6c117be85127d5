import Glibc
import TestKit
import Testing

@testable import quaver

/// The pages of the program that only the start used go back to the kernel: tried on the
/// test process itself, whose program (every test) is large and has run plenty of code by
/// now. What is still used comes back at its next touch, as this test's own code does.
@Suite("start-up's pages of the program")
struct StartupPagesTests {
    @Test func theProgramsPagesGoBack() throws {
        let before = try #require(ProcessProbe.kibibytes("RssFile", of: getpid()))
        let log = LogCapture()
        StartupPages.release(logger: log.logger)
        let after = try #require(ProcessProbe.kibibytes("RssFile", of: getpid()))
        #expect(after < before - 1024, "RssFile \(before) KiB before, \(after) KiB after")
        let said = log.messages
        #expect(said.count == 1 && said[0].contains("start-up over"), "\(said)")
    }
}
