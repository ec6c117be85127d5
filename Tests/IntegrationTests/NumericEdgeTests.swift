import ChildProcess
import DBus
import Foundation
import TestKit
import Testing

/// The saved session and the configuration with every numeric field at each edge of the
/// numeric types: zero and negative zero, the smallest and largest integers and one past
/// them, huge and tiny doubles, NaN and the infinities as text, fractions where integers
/// belong. For each value, one start with all fields at once: Quaver neither crashes nor
/// stalls, says what it dropped, and plays the saved queue.
// One start at a time: a call's answer is timed, and fifty daemons starting at once beside
// the other suites would time the test process's own delays.
@Suite("numbers at the edges of their types, saved and configured", .serialized)
@MainActor
struct NumericEdgeTests {
    /// Numbers as JSON text, each a case of its own. (JSON has no NaN or infinity: those
    /// are strings, which a field that holds a number refuses as well.)
    nonisolated static let jsonValues = [
        "0", "-0", "-1", "0.5", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
        "-9223372036854775809", "1e308", "-1e308", "5e-324", "1e400", "\"NaN\"", "\"inf\"", "null",
    ]

    /// The state file's numeric values. (`version` and `queueCount` say which queue the state
    /// belongs to: a state that does not match its queue is not applied at all.)
    static let stateFields = ["current", "position", "volume", "rate"]

    @Test(
        "every numeric field of state.json at one edge value: dropped with a log line, the queue plays",
        arguments: jsonValues)
    func savedState(value: String) async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let fields = Self.stateFields.map { "\"\($0)\": \(value)" }.joined(separator: ", ")
        try SavedStateEdgeTests.writeSession(
            session, queue: tracks.map(\.absoluteString),
            state: "{\"version\": 1, \"queueCount\": 2, \(fields), \"loop\": \"None\", \"shuffle\": false}")
        try await session.launch([])
        try await Self.expectHealthyAndPlaying(session, tracks.count, "state.json with \(value)")
        // Whatever was not kept is named: a value Quaver took is within range.
        let log = session.log()
        let volume = try await session.get("Volume").double ?? -1
        let rate = try await session.get("Rate").double ?? -1
        #expect(
            (0...1).contains(volume) && (0.25...4).contains(rate),
            "volume \(volume), rate \(rate) from \(value)\n\(log)")
        let unusable = ["\"NaN\"", "\"inf\"", "1e400", "9223372036854775808", "-9223372036854775809"].contains(value)
        if unusable || value.hasPrefix("-") && value != "-0" {
            #expect(log.contains("state.json"), "nothing says what became of \(value):\n\(log)")
        }
    }

    /// Numbers as a configuration file may spell them.
    nonisolated static let configValues = [
        "0", "-0", "-1", "0.5", "nan", "NaN", "inf", "-inf", "1e-300", "1e308", "1e400", "99999999999999999999", "0x10",
        "1,5",
    ]
    /// The configuration's numeric keys.
    nonisolated static let configKeys = ["volume", "minimum-rate", "maximum-rate"]

    @Test(
        "each numeric key of quaver.conf at each edge value: taken within its range, or refused naming the line and the key",
        arguments: configKeys, configValues)
    func configuration(key: String, value: String) async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig("# edge\n\(key) = \(value)\n")
        // Refused: exit 2 with the line and the key. Waited for with a limit, so that a
        // player that starts when it should not fails the test rather than hangs it.
        let log = session.bus.directory.appendingPathComponent("config.log")
        let process = try session.spawn(tracks.map(\.path), sink: "fakesink", log: log)
        let status = await ChildProcess.onThread { process.wait(timeout: .seconds(3)) }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        if let status {
            #expect(status == 2, "\(key) = \(value): exit \(status)\n\(text)")
            #expect(text.contains("\(session.configFile.path):2: \"\(key)\""), "\(key) = \(value):\n\(text)")
            return
        }
        // Taken: the player runs, within the ranges Quaver allows.
        let owned = await session.waiter.wait(timeout: .seconds(30)) {
            (session.owners[session.busName] ?? "").isEmpty == false
        }
        #expect(owned, "\(key) = \(value): the player runs but never took its name\n\(text)")
        guard owned else { return }
        try await Self.expectHealthyAndPlaying(session, tracks.count, "\(key) = \(value)")
        let volume = try await session.get("Volume").double ?? -1
        let minimum = try await session.get("MinimumRate").double ?? -1
        let maximum = try await session.get("MaximumRate").double ?? -1
        #expect((0...1).contains(volume), "Volume \(volume) from \(key) = \(value)")
        #expect(
            minimum >= 0.25 && minimum <= 1 && maximum >= 1 && maximum <= 4,
            "rates \(minimum)...\(maximum) from \(key) = \(value)")
    }

    /// Answers at once, plays the queue's first track when asked, and has not crashed. "At
    /// once" is 3 s: what it guards against is a value that sends the daemon into a long
    /// computation or read (a 2 GiB state file once held the name back 10 s), and the suite
    /// runs beside others that load the machine (speed is the benchmark's to measure).
    static func expectHealthyAndPlaying(_ session: Session, _ count: Int, _ what: String) async throws {
        #expect(session.daemonStatus == nil, "quaver exited with \(what): \(session.log())")
        let asked = ContinuousClock.now
        _ = try await session.get("PlaybackStatus")
        #expect(ContinuousClock.now - asked < .seconds(3), "a Get took \(ContinuousClock.now - asked) with \(what)")
        let tracks = try await session.get("Tracks", interface: MPRISNames.trackList).objectPaths
        #expect(tracks.count == count, "\(tracks.count) tracks queued with \(what)")
        let mark = session.signals.count
        _ = try await session.call("Play")
        if try await session.get("PlaybackStatus") != .string("Playing") {
            try await session.waitForStatus("Playing", after: mark)
        }
        #expect(session.daemonStatus == nil, "quaver exited with \(what): \(session.log())")
    }
}
