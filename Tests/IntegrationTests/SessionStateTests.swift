import ChildProcess
import DBus
import Foundation
import TestKit
import Testing

/// The saved session and the configuration file, with the real binary.
@Suite("saved session and configuration")
@MainActor
struct SessionStateTests {
    @Test("after SIGKILL, a restart comes back paused on the same track within 1 s of the last seek")
    func restoreAfterKill() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        var mark = session.signals.count
        try await session.playerctl("next")
        try await session.waitForPlayerChange(after: mark, "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        try await session.playerctl("volume", "0.6")
        try await session.playerctl("loop", "Playlist")
        mark = session.signals.count
        let id = try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
        _ = try await session.call("SetPosition", [.objectPath(id), .int64(6_000_000)])
        let seeked = try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        let seekedTo = seeked.arguments.first?.int64 ?? -1
        // The save is written off the main queue as the seek settles: a SIGKILL in the same
        // millisecond may come first (no daemon can write before it answers). Kill once it is
        // on disk; how long that takes is part of the check.
        let stateFile = session.stateFolder.appendingPathComponent("state.json")
        let saved = await session.waiter.wait(timeout: .seconds(5), pollingEvery: .milliseconds(20)) {
            guard let data = try? Data(contentsOf: stateFile),
                let state = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let position = state["position"] as? Int
            else { return false }
            return abs(Int64(position) - seekedTo) < 1_000_000
        }
        #expect(saved, "the seek was not saved within 5 s")

        kill(session.daemon!.pid, SIGKILL)
        _ = try await session.waitForExit()
        try await session.launch([])
        try await session.waitForStatus("Paused")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 2"))
        let position = try await session.position()
        #expect(abs(position - seekedTo) < 1_000_000, "restored at \(position) µs, the seek went to \(seekedTo) µs")
        #expect(try await session.get("Volume") == .double(0.6))
        #expect(try await session.get("LoopStatus") == .string("Playlist"))
        #expect(session.log().contains("restored the last session"))
        // The whole queue came back.
        #expect(try await session.get("CanGoPrevious") == .boolean(true))
        mark = session.signals.count
        try await session.playerctl("next")
        try await session.waitForPlayerChange(after: mark, "Track 3") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
    }

    /// Each save replaces state.json (a new file renamed over it), so its inode tells whether
    /// a save happened. The position moves on while playing; that alone is no change.
    @Test("while playing, the session is written when something changes, not as the audio moves on")
    func noSavesWhilePlaying() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let stateFile = session.stateFolder.appendingPathComponent("state.json")
        func inode() -> UInt64? {
            (try? FileManager.default.attributesOfItem(atPath: stateFile.path))?[.systemFileNumber] as? UInt64
        }
        let written = await session.waiter.wait(timeout: .seconds(5), pollingEvery: .milliseconds(20)) {
            inode() != nil
        }
        #expect(written, "the start is saved")
        try await Task.sleep(for: .milliseconds(500))
        let before = inode()
        try await Task.sleep(for: .seconds(2))
        #expect(inode() == before, "2 s of playing with nothing changed wrote the session again")
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))

        try await session.playerctl("pause")
        let saved = await session.waiter.wait(timeout: .seconds(5), pollingEvery: .milliseconds(20)) {
            inode() != before
        }
        #expect(saved, "a pause is saved")
    }

    @Test("SIGTERM saves where playback was")
    func terminateSaves() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        try await session.playerctl("position", "4")
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        kill(session.daemon!.pid, SIGTERM)
        #expect(try await session.waitForExit() == 0)
        let data = try Data(contentsOf: session.stateFolder.appendingPathComponent("state.json"))
        let state = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(state["current"] as? Int == 0)
        let position = state["position"] as? Int ?? -1
        #expect(position >= 4_000_000 && position < 9_000_000, "saved at \(position) µs")
        let queueFile = try #require(session.savedQueueFile, "no saved state names a queue file")
        let queue = try String(contentsOf: queueFile, encoding: .utf8)
        #expect(
            queue.split(separator: "\n").filter { !$0.hasPrefix("#") } == tracks.map { Substring($0.absoluteString) })
        let attributes = try FileManager.default.attributesOfItem(
            atPath: session.stateFolder.appendingPathComponent("state.json").path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("a corrupt state file is reported, moved aside, and Quaver starts anyway")
    func corruptState() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try FileManager.default.createDirectory(at: session.stateFolder, withIntermediateDirectories: true)
        try Data("{\"version\": 1, \"queueCount\": tru".utf8).write(
            to: session.stateFolder.appendingPathComponent("state.json"))
        try session.writeConfig("music-folder = \(tracks[0].deletingLastPathComponent().path)\n")
        try await session.launch([])
        try await session.waitForStatus("Playing")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 1"), "plays the music folder instead")
        let log = session.log()
        #expect(log.contains("cannot restore the saved session") && log.contains("state.json.corrupt"), "\(log)")
        #expect(
            FileManager.default.fileExists(
                atPath: session.stateFolder.appendingPathComponent("state.json.corrupt").path))
    }

    @Test("--no-resume and paths replace the saved queue")
    func pathsReplaceTheQueue() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)
        let mark = session.signals.count  // the first quaver's Playing is not the second one's
        try await session.launch([tracks[2].path])
        try await session.waitForStatus("Playing", after: mark)
        #expect(try await session.metadata()["xesam:title"] == .string("Track 3"))
        #expect(try await session.get("CanGoNext") == .boolean(false), "the queue is only what was named")
    }

    @Test("an invalid configuration names the line and the key and exits 2")
    func invalidConfiguration() async throws {
        let session = try await Session()
        defer { session.stop() }
        for (text, line, key) in [
            ("# defaults\nresume = yes\nvolume = 2\n", 3, "volume"),
            ("colour = blue\n", 1, "colour"),
            ("\n\nmaximum-rate = fast\n", 3, "maximum-rate"),
            ("instance = sometimes\n", 1, "instance"),
            // Rates GStreamer's scaletempo cannot play (a tiny one brought the pipeline down).
            ("minimum-rate = 1e-300\n", 1, "minimum-rate"),
            ("resume = no\nmaximum-rate = 16\n", 2, "maximum-rate"),
            ("minimum-rate = -inf\n", 1, "minimum-rate"),
            ("volume = nan\n", 1, "volume"),
        ] {
            try session.writeConfig(text)
            // A configuration taken by mistake starts a player that never exits: waited for
            // with a limit, so that the test fails rather than hangs.
            let log = session.bus.directory.appendingPathComponent("config-\(UUID().uuidString).log")
            let process = try session.spawn([], sink: "fakesink", log: log)
            let status = await ChildProcess.onThread { process.wait(timeout: .seconds(20)) }
            if status == nil { process.killAndWait() }
            let error = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            #expect(status == 2, "\(text): \(error)")
            #expect(error.contains("\(session.configFile.path):\(line): \"\(key)\""), "\(error)")
        }
    }

    @Test("a rate range at the limits Quaver allows is taken, and D-Bus cannot go past it")
    func rateLimits() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig("minimum-rate = 0.25\nmaximum-rate = 4\n")
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        #expect(try await session.get("MinimumRate") == .double(0.25))
        #expect(try await session.get("MaximumRate") == .double(4))
        for rate in [1e-300, 0.2, 4.5] {
            await #expect(throws: BusError.self) { try await session.set("Rate", .double(rate)) }
        }
        try await session.set("Rate", .double(0.25))
        #expect(try await session.get("Rate") == .double(0.25))
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
    }

    @Test("the configuration sets defaults and options override it")
    func configurationDefaults() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig(
            """
            # the harness passes --audio-sink, which must win over this one
            audio-sink = nosuchsinkelement
            volume = 0.3
            minimum-rate = 0.75
            maximum-rate = 1.5
            """)
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        #expect(try await session.get("Volume") == .double(0.3))
        #expect(try await session.get("MinimumRate") == .double(0.75))
        #expect(try await session.get("MaximumRate") == .double(1.5))
        do {
            try await session.set("Rate", .double(2))
            Issue.record("Rate 2 is outside the configured range")
        } catch let error as BusError {
            #expect(error.name == .invalidArgs)
        }
    }

    @Test("--instance quit leaves a running Quaver be and exits 0")
    func instanceQuit() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let owner = session.owners[session.busName]
        let result = try await Tools.run(
            Tools.quaver, ["--audio-sink", "fakesink", "--name", session.name, "--instance", "quit", tracks[2].path],
            environment: session.environment)
        #expect(result.status == 0)
        #expect(result.error.contains("already running"), "\(result.error)")
        #expect(session.owners[session.busName] == owner)
        #expect(try await session.metadata()["xesam:title"] == .string("Track 1"))
    }
}
