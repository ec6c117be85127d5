import Foundation
import TestKit
import Testing

/// A stream URL with a user name and password (`http://user:secret@host/…`) plays with
/// them, and the secret never leaves the queue: not to stderr (at debug level), not to
/// problems.log, not to `quaver doctor`, not to MPRIS `xesam:url`. The saved queue keeps it
/// (playing after a restart needs it), readable by its owner only.
@Suite("secrets in URLs", .serialized)
@MainActor
struct SecretURLTests {
    /// The credentials `scripts/http-test-server` asks for with `auth=1`.
    static let user = "listener"
    static let password = "hunter2-secret"

    @Test("a password in a URL is used to play, kept in the 0600 saved queue, and redacted everywhere else")
    func credentialsStayInTheQueue() async throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url
        let server = try await HTTPTestServer(serving: folder)
        defer { server.stop() }
        let host = "127.0.0.1:\(server.port)"
        // Refused (a wrong password): skipped, with a warning naming it. Then the right one.
        let refused = "http://\(Self.user):wrong-\(Self.password)@\(host)/radio.mp3?auth=1&token=t-\(Self.password)"
        let good = "http://\(Self.user):\(Self.password)@\(host)/radio.mp3?auth=1"

        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--log-level", "debug", refused, good])
        try await session.waitForStatus("Playing")
        #expect(
            try await session.playerctl("metadata", "xesam:url") == "http://***@\(host)/radio.mp3?auth=***",
            "\(session.log())")
        let doctor = try await Tools.run(
            Tools.quaver, ["doctor", "--name", session.name], environment: session.environment)
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)

        let log = session.log()
        let problemsFile = session.stateFolder.appendingPathComponent("problems.log")
        let problems = try String(contentsOf: problemsFile, encoding: .utf8)
        for (name, text) in [("stderr", log), ("problems.log", problems), ("quaver doctor", doctor.output)] {
            #expect(!text.contains(Self.password), "\(name) holds the password:\n\(text)")
        }
        // The refused stream is named, without its secrets, wherever it is logged.
        let skipped = "skipping http://***@\(host)/radio.mp3?auth=***&token=***: "
        #expect(log.contains(skipped), "\(log)")
        #expect(problems.contains(skipped), "\(problems)")
        #expect(doctor.output.contains("skipping http://***@\(host)/"), "\(doctor.output)")

        let queueFile = try #require(session.savedQueueFile, "no saved state names a queue file")
        let saved = try String(contentsOf: queueFile, encoding: .utf8)
        #expect(saved.split(separator: "\n").contains { $0 == good }, "\(saved)")
        let mode = try FileManager.default.attributesOfItem(atPath: queueFile.path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "\(queueFile.lastPathComponent) is \(String(mode ?? 0, radix: 8))")
        #expect(server.requests.filter { $0 == "/radio.mp3?auth=1" }.count >= 1, "\(server.requests)")
    }
}
