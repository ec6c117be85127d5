import DBus
import Foundation
import TestKit
import Testing

/// What Quaver reads back and writes at the edges: saved sessions out of range, too large or
/// naming what clients may not open; modes through rewrites; folders that are symbolic
/// links; a bus that stops answering at exit. With the real binary on a private bus.
@Suite("saved session at the edges")
@MainActor
struct SavedStateEdgeTests {
    static let trackList = "org.mpris.MediaPlayer2.TrackList"

    /// Writes a saved session as another program (or a bad disk) may have left it: the
    /// queue's lines and the state file's text, as given.
    static func writeSession(_ session: Session, queue: [String], state: String) throws {
        try FileManager.default.createDirectory(
            at: session.stateFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = "#EXTM3U\n" + queue.map { $0 + "\n" }.joined()
        try Data(text.utf8).write(to: session.stateFolder.appendingPathComponent("queue.m3u8"))
        try Data(state.utf8).write(to: session.stateFolder.appendingPathComponent("state.json"))
    }

    static func mode(_ url: URL) -> Int {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return -1 }
        return Int(status.st_mode & 0o777)
    }

    static func tracks(_ session: Session) async throws -> [ObjectPath] {
        try await session.get("Tracks", interface: trackList).objectPaths
    }

    @Test(
        "a saved position of Int64.max, a negative volume, a tiny rate and an unknown loop are dropped; the rest is restored"
    )
    func outOfRangeFieldsAreDropped() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try Self.writeSession(
            session, queue: tracks.map(\.absoluteString),
            state: """
                {"version": 1, "queueCount": 3, "current": 1, "position": 9223372036854775807,
                 "volume": -3, "rate": 1e-300, "loop": "sideways", "shuffle": true}
                """)
        try await session.launch([])
        try await session.waitForStatus("Paused")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 2"))
        #expect(try await session.position() < 1_000_000, "the position is dropped, not clamped to the end")
        #expect(try await session.get("Volume") == .double(1))
        #expect(try await session.get("Rate") == .double(1))
        #expect(try await session.get("LoopStatus") == .string("None"))
        #expect(try await session.get("Shuffle") == .boolean(true), "a valid field is kept")
        let log = session.log()
        let line = try #require(log.split(separator: "\n").first { $0.contains("state.json: dropped") }, "\(log)")
        for field in ["position 9223372036854775807", "volume -3.0", "rate 1e-300", "loop sideways"] {
            #expect(line.contains(field), "\(line)")
        }
        #expect(
            !FileManager.default.fileExists(
                atPath: session.stateFolder.appendingPathComponent("state.json.corrupt").path))
    }

    @Test("a current index outside the queue and a position no Int64 holds are dropped; the queue is restored")
    func outOfRangeIndexIsDropped() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try Self.writeSession(
            session, queue: tracks.map(\.absoluteString),
            state: """
                {"version": 1, "queueCount": 3, "current": 99, "position": 1e30,
                 "volume": 0.5, "rate": 1.5, "loop": "all", "shuffle": false}
                """)
        try await session.launch([])
        #expect(try await Self.tracks(session).count == 3)
        #expect(try await session.get("Volume") == .double(0.5))
        #expect(try await session.get("Rate") == .double(1.5))
        #expect(try await session.get("LoopStatus") == .string("Playlist"))
        let log = session.log()
        #expect(log.contains("current 99") && log.contains("dropped position"), "\(log)")
        #expect(!log.contains("cannot restore"), "\(log)")
    }

    @Test("a 2 GiB state file is set aside at once without being read, and Quaver starts anyway")
    func hugeStateFileIsSetAside() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try FileManager.default.createDirectory(at: session.stateFolder, withIntermediateDirectories: true)
        let stateFile = session.stateFolder.appendingPathComponent("state.json")
        #expect(FileManager.default.createFile(atPath: stateFile.path, contents: nil))
        #expect(truncate(stateFile.path, 2 << 30) == 0, "a sparse file: no disk space used")
        try session.writeConfig("music-folder = \(tracks[0].deletingLastPathComponent().path)\n")
        try await session.launch([])
        try await session.waitForStatus("Playing")
        let peak = try #require(ProcessProbe.kibibytes("VmHWM", of: session.daemon!.pid))
        #expect(peak < 300 * 1024, "peak RSS \(peak) KiB")
        let log = session.log()
        #expect(log.contains("state.json is 2147483648 bytes, more than the 1048576"), "\(log)")
        #expect(
            FileManager.default.fileExists(
                atPath: session.stateFolder.appendingPathComponent("state.json.corrupt").path))
    }

    @Test("a 2 GiB queue file is set aside without being read, and the state with it")
    func hugeQueueFileIsSetAside() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try Self.writeSession(
            session, queue: [],
            state: """
                {"version": 1, "queueCount": 3, "current": 0, "position": 0, "volume": 1, "rate": 1, "loop": "off", "shuffle": false}
                """)
        let queueFile = session.stateFolder.appendingPathComponent("queue.m3u8")
        #expect(truncate(queueFile.path, 2 << 30) == 0)
        try session.writeConfig("music-folder = \(tracks[0].deletingLastPathComponent().path)\n")
        try await session.launch([])
        try await session.waitForStatus("Playing")
        let peak = try #require(ProcessProbe.kibibytes("VmHWM", of: session.daemon!.pid))
        #expect(peak < 300 * 1024, "peak RSS \(peak) KiB")
        #expect(session.log().contains("queue.m3u8 is 2147483648 bytes"), "\(session.log())")
        #expect(
            FileManager.default.fileExists(
                atPath: session.stateFolder.appendingPathComponent("queue.m3u8.corrupt").path))
        #expect(
            FileManager.default.fileExists(
                atPath: session.stateFolder.appendingPathComponent("state.json.corrupt").path))
    }

    @Test("the restored queue passes the scheme allow-list and the length limit OpenUri applies")
    func restoredQueueIsFiltered() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let queue = [
            tracks[0].absoluteString, "fd://0", "/etc/passwd", "file:///" + String(repeating: "a", count: 9_000),
            tracks[1].absoluteString, "ftp://example.com/a.mp3",
        ]
        try Self.writeSession(
            session, queue: queue,
            state: """
                {"version": 1, "queueCount": 6, "current": 4, "position": 2000000, "volume": 1, "rate": 1, "loop": "off", "shuffle": false}
                """)
        try await session.launch([])
        try await session.waitForStatus("Paused")
        #expect(
            try await session.metadata()["xesam:title"] == .string("Track 2"), "the current entry follows its track")
        #expect(try await session.metadata()["xesam:url"] == .string(tracks[1].absoluteString))
        let position = try await session.position()
        #expect(abs(position - 2_000_000) < 500_000, "restored at \(position) µs")
        #expect(try await Self.tracks(session).count == 2)
        let log = session.log()
        #expect(log.contains("dropped 4 entries") && log.contains("fd://0 (the scheme 'fd'"), "\(log)")
    }

    @Test("fd:// on the command line is skipped like OpenUri refuses it")
    func commandLineIsFiltered() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["fd://0", tracks[0].path])
        try await session.waitForStatus("Playing")
        #expect(try await Self.tracks(session).count == 1)
        #expect(session.log().contains("skipping fd://0: unsupported URI scheme 'fd'"), "\(session.log())")
    }

    @Test("state.json, the queue file, problems.log and cached artwork stay 0600 in 0700 folders through rewrites")
    func modesThroughRewrites() async throws {
        let tracks = try await TestMedia.coveredTracks(count: 2, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        // A state folder made wider by hand, and a problems log one warning short of a trim.
        try FileManager.default.createDirectory(
            at: session.stateFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let problems = session.stateFolder.appendingPathComponent("problems.log")
        let filler = String(repeating: "2026-01-01T00:00:00Z warning: an old problem\n", count: 1_700)
        #expect(
            FileManager.default.createFile(
                atPath: problems.path, contents: Data(filler.utf8), attributes: [.posixPermissions: 0o600]))
        let missing = session.home.appendingPathComponent("no-such-track.flac").path
        try await session.launch([missing] + tracks.map(\.track.path))
        try await session.waitForStatus("Playing")
        var mark = session.signals.count
        _ = try await session.call("Next")
        try await ArtworkTests.waitForTrack(tracks[1].track, in: session, after: mark)
        let id = try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
        mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(id), .int64(5_000_000)])
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        _ = try await session.call(
            "AddTrack", interface: Self.trackList,
            [.string(tracks[0].track.absoluteString), .objectPath(id), .boolean(false)])
        let art = session.home.appendingPathComponent(".cache/quaver/art")
        let cached = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: art.path)) ?? []).filter { !$0.hasPrefix(".") }.count
                >= 2
        }
        #expect(cached, "both covers are cached")
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)

        let queueFile = try #require(session.savedQueueFile, "no saved state names a queue file")
        let queue = try String(contentsOf: queueFile, encoding: .utf8)
        #expect(queue.split(separator: "\n").count == 4, "the queue was rewritten after AddTrack: \(queue)")
        #expect(Self.mode(session.stateFolder) == 0o700)
        for name in ["state.json", queueFile.lastPathComponent, "problems.log"] {
            #expect(Self.mode(session.stateFolder.appendingPathComponent(name)) == 0o600, "\(name)")
        }
        let log = try Data(contentsOf: problems)
        #expect(log.count <= 64 * 1024, "the problems log was trimmed")
        #expect(String(decoding: log, as: UTF8.self).contains("no such file or folder"))
        #expect(Self.mode(art) == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: art.path) {
            #expect(Self.mode(art.appendingPathComponent(name)) == 0o600, "\(name)")
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: session.stateFolder.path).allSatisfy {
                !$0.hasPrefix(".")
            }, "no temporary file is left")
    }

    @Test("state and cache folders that are symbolic links are neither written through nor made 0700; said once each")
    func symbolicLinkFoldersAreRefused() async throws {
        let tracks = try await TestMedia.coveredTracks(count: 2, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        let artTarget = session.home.appendingPathComponent("elsewhere/art")
        let stateTarget = session.home.appendingPathComponent("elsewhere/state")
        for target in [artTarget, stateTarget] {
            try FileManager.default.createDirectory(
                at: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        let artLink = session.home.appendingPathComponent(".cache/quaver/art")
        try FileManager.default.createDirectory(
            at: artLink.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: artLink, withDestinationURL: artTarget)
        try FileManager.default.createDirectory(
            at: session.stateFolder.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: session.stateFolder, withDestinationURL: stateTarget)

        try await session.launch(tracks.map(\.track.path))
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        _ = try await session.call("Next")
        try await ArtworkTests.waitForTrack(tracks[1].track, in: session, after: mark)
        try await ArtworkTests.roundTrip(session)
        kill(session.daemon!.pid, SIGTERM)
        #expect(try await session.waitForExit() == 0)

        for target in [artTarget, stateTarget] {
            #expect(Self.mode(target) == 0o755, "\(target.path) was made private through the link")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: target.path).isEmpty,
                "written through \(target.path)")
        }
        #expect(ArtworkTests.publishedMetadata(session).allSatisfy { $0[ArtworkTests.artURL] == nil })
        let lines = session.log().split(separator: "\n")
        let stateLines = lines.filter { $0.contains("\(session.stateFolder.path) is a symbolic link") }
        #expect(stateLines.count == 1, "\(session.log())")
        let artLines = lines.filter { $0.contains("could not keep artwork") }
        #expect(artLines.count == 1 && artLines[0].contains("\(artLink.path) is a symbolic link"), "\(session.log())")
    }

    @Test("with the bus stopped, SIGTERM saves the state and exits within 2 s")
    func stalledBusDoesNotDelayExit() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let stateFile = session.stateFolder.appendingPathComponent("state.json")
        let saved = await session.waiter.wait(timeout: .seconds(5), pollingEvery: .milliseconds(20)) {
            FileManager.default.fileExists(atPath: stateFile.path)
        }
        #expect(saved)
        // Playback moves on past what was saved: the state the exit writes differs from it.
        let savedState = try? JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any]
        let savedPosition = Int64(savedState?["position"] as? Int ?? 0)
        #expect(
            try await Waiter.poll(timeout: .seconds(10), every: .milliseconds(20)) {
                try await session.position() > savedPosition
            }, "the position never passed the saved \(savedPosition) µs")
        let bus = session.bus.process.pid
        #expect(kill(bus, SIGSTOP) == 0)
        defer { kill(bus, SIGCONT) }  // before the session stops (defers run last first)
        // Whatever is on disk now is not what the exit writes: it goes, and must come back.
        try FileManager.default.removeItem(at: stateFile)
        let started = ContinuousClock.now
        kill(session.daemon!.pid, SIGTERM)
        let status = try await session.waitForExit(timeout: .seconds(30))
        let took = ContinuousClock.now - started
        #expect(status == 0)
        #expect(took < .seconds(2), "exit took \(took) with the bus stopped")
        let state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
        #expect(state["current"] as? Int == 0)
        #expect((state["position"] as? Int ?? 0) > 0)
    }
}
