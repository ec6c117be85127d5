import DBus
import Foundation
import SeededRandom
import TestKit
import Testing

/// The saved session is written whole or not at all (issue 36): SIGKILLs at random moments
/// of queue storms, a full state folder and a read-only one, the previous version's files,
/// and temporary files that killed runs left. With the real binary on a private bus.
@Suite("saved session: whole through kills and full or read-only folders")
@MainActor
struct WholeSaveTests {
    /// The URIs of `ids`, in order, as the running quaver reports them.
    static func urls(_ session: Session) async throws -> [String] {
        try await session.trackURLs(try await session.trackListTracks())
    }

    /// The temporary files in the state folder that process `pid` made.
    static func temporaries(of pid: Int32, in session: Session) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: session.stateFolder.path)) ?? []
        return names.filter { $0.hasPrefix(".") && $0.hasSuffix(".tmp") && $0.contains(".\(pid).") }
    }

    /// The saved state as JSON, when there is one.
    static func savedState(_ session: Session) -> [String: Any]? {
        guard let data = try? Data(contentsOf: session.stateFolder.appendingPathComponent("state.json")) else {
            return nil
        }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// Waits until the saved state satisfies `check` (a save reaches the disk off the main
    /// queue, a little after the change that asked for it).
    static func waitForSavedState(
        _ session: Session, _ what: String, timeout: Duration = .seconds(10), _ check: @escaping ([String: Any]) -> Bool
    ) async throws {
        let saved = await session.waiter.wait(timeout: timeout, pollingEvery: .milliseconds(20)) {
            savedState(session).map(check) ?? false
        }
        guard saved else {
            throw HarnessError("the saved state never showed \(what): \(savedState(session) ?? [:])\n\(session.log())")
        }
    }

    /// The log's lines that say the session could not be saved.
    static func saveFailures(_ log: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains("could not save the session") }
    }

    @Test(
        "60 SIGKILLs at random moments of AddTrack and RemoveTrack storms: every restart restores a queue the player had, whole",
        .timeLimit(.minutes(5)))
    func killsDuringQueueStorms() async throws {
        let tracks = try await TestMedia.tracks(count: 40, seconds: 1)
        let pool = tracks.map(\.absoluteString)
        let session = try await Session()
        defer { session.stop() }
        let kills = 60
        var random = SplitMix(seed: 36)
        let started = ContinuousClock.now

        try await session.launch(["--paused"] + tracks.prefix(10).map(\.path))
        try await session.waitForStatus("Paused")
        try await Self.waitForSavedState(session, "the first queue") { $0["queueCount"] as? Int == 10 }
        var model = try await Self.urls(session)
        #expect(model == Array(pool.prefix(10)))

        for round in 1...kills {
            // Every queue the player may have saved since the last start: each edit is
            // counted before it is sent, as the kill may come between its effect and its reply.
            var possible = [model]
            let killed = KillSwitch()
            let delay = Duration.milliseconds(Int.random(in: 5...350, using: &random))
            let pid = session.daemon!.pid
            let killer = Task { @MainActor in
                try? await Task.sleep(for: delay)
                kill(pid, SIGKILL)
                killed.fired = true
            }
            var edits = 0
            while !killed.fired {
                do {
                    let ids = try await session.trackListTracks()
                    guard ids.count == model.count else {
                        Issue.record("round \(round): \(ids.count) tracks shown, \(model.count) expected")
                        break
                    }
                    if ids.count < 8 || (ids.count < 20 && Bool.random(using: &random)) {
                        let at = Int.random(in: 0...ids.count, using: &random)
                        let uri = pool.randomElement(using: &random)!
                        var next = model
                        next.insert(uri, at: at)
                        possible.append(next)
                        let after = at == 0 ? MPRISNames.noTrack : ids[at - 1]
                        try await session.addTrack(uri, after: after, setAsCurrent: false)
                        model = next
                    } else {
                        let at = Int.random(in: 0..<ids.count, using: &random)
                        var next = model
                        next.remove(at: at)
                        possible.append(next)
                        try await session.removeTrack(ids[at])
                        model = next
                    }
                    edits += 1
                } catch {
                    break  // the daemon is gone
                }
            }
            await killer.value
            _ = try await session.waitForExit()

            try await session.launch([])
            let log = session.log()
            let restored = try await Self.urls(session)
            #expect(
                possible.contains(restored),
                "round \(round) (killed after \(delay), \(edits) edits): restored \(restored.count) tracks, none of the queues the player had\n\(log)"
            )
            #expect(!log.contains("cannot restore") && !log.contains("without the position"), "round \(round):\n\(log)")
            #expect(
                Self.temporaries(of: pid, in: session).isEmpty, "round \(round): the killed run's temporary files stay")
            if !possible.contains(restored) { break }
            model = restored
        }
        let took = ContinuousClock.now - started
        #expect(took < .seconds(240), "\(kills) kills took \(took)")

        // A clean stop leaves the state and the one queue file it names, nothing else.
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: session.stateFolder.path)
            .filter { $0 != "problems.log" }.sorted()
        let queueFile = try #require(session.savedQueueFile)
        #expect(names == [queueFile.lastPathComponent, "state.json"].sorted(), "\(names)")
    }

    @Test("a full state folder keeps the previous save whole, says so once, and the restart restores it")
    func fullFolder() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let folder = try SmallFolder(at: session.stateFolder, size: "64k")
        defer { folder.unmount() }
        // A queue whose file fits once in 64 KiB, not twice: the issue's case.
        let paths = (0..<600).map { tracks[$0 % 3].path }
        try await session.launch(["--paused"] + paths)
        try await session.waitForStatus("Paused")
        try await Self.waitForSavedState(session, "the queue of 600") { $0["queueCount"] as? Int == 600 }
        // The folder's one queue file, whatever a version names it.
        let queueName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: session.stateFolder.path).first {
                $0.hasPrefix("queue") && $0.hasSuffix(".m3u8")
            })
        let queueFile = session.stateFolder.appendingPathComponent(queueName)
        let queueBytes = try #require(try FileManager.default.attributesOfItem(atPath: queueFile.path)[.size] as? Int)
        let free = folder.freeBytes()
        #expect(free < queueBytes, "the setup is wrong: \(free) bytes free hold another \(queueBytes)-byte queue")
        #expect(free >= 4096, "the setup is wrong: no room left for a state")

        // Each edit asks for a queue that does not fit; the seek, for a state that does.
        let ids = try await session.trackListTracks()
        let current = try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
        try await session.addTrack(tracks[1].absoluteString, after: ids[0], setAsCurrent: false)
        let failed = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            !Self.saveFailures(session.log()).isEmpty
        }
        #expect(failed, "no failure logged:\n\(session.log())")
        let mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(3_000_000)])
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        try await session.removeTrack(ids[5])
        try await session.addTrack(tracks[2].absoluteString, after: ids[1], setAsCurrent: false)
        kill(session.daemon!.pid, SIGTERM)
        #expect(try await session.waitForExit() == 0)
        let failures = Self.saveFailures(session.log())
        #expect(failures.count == 1, "said once, not at each save:\n\(failures.joined(separator: "\n"))")
        #expect(failures.first?.contains("No space left on device") ?? false, "\(failures)")

        try await session.launch([])
        try await session.waitForStatus("Paused")
        let log = session.log()
        #expect(log.contains("restored the last session: track 1 of 600"), "the previous save is gone:\n\(log)")
        #expect(!log.contains("cannot restore"), "\(log)")
    }

    @Test("a read-only state folder keeps the save, says so once, and saving resumes when it is writable again")
    func readOnlyFolder() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let folder = try SmallFolder(at: session.stateFolder, size: "1m")
        defer { folder.unmount() }
        try await session.launch(["--paused"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")
        var ids = try await session.trackListTracks()
        let current = try #require(try await session.metadata()["mpris:trackid"]?.objectPath)
        var mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(4_000_000)])
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        try await Self.waitForSavedState(session, "the seek to 4 s") {
            $0["queueCount"] as? Int == 3 && abs(($0["position"] as? Int ?? 0) - 4_000_000) < 500_000
        }

        try folder.remount(readOnly: true)
        try await session.addTrack(tracks[0].absoluteString, after: ids[2], setAsCurrent: false)
        let failed = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            !Self.saveFailures(session.log()).isEmpty
        }
        #expect(failed, "no failure logged:\n\(session.log())")
        try await session.removeTrack(ids[1])
        mark = session.signals.count
        _ = try await session.call("SetPosition", [.objectPath(current), .int64(6_000_000)])
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        kill(session.daemon!.pid, SIGTERM)
        #expect(try await session.waitForExit() == 0)
        var failures = Self.saveFailures(session.log())
        #expect(failures.count == 1, "said once, not at each save:\n\(failures.joined(separator: "\n"))")
        #expect(failures.first?.contains("Read-only file system") ?? false, "\(failures)")

        // Started on the read-only folder: the save is read, whole.
        try await session.launch([])
        try await session.waitForStatus("Paused")
        #expect(session.log().contains("restored the last session: track 1 of 3"), "\(session.log())")
        let position = try await session.position()
        #expect(abs(position - 4_000_000) < 500_000, "restored at \(position) µs")

        // Writable again: the next change is saved, and the log says saving is back.
        ids = try await session.trackListTracks()
        try await session.addTrack(tracks[1].absoluteString, after: ids[2], setAsCurrent: false)
        let failedAgain = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            !Self.saveFailures(session.log()).isEmpty
        }
        #expect(failedAgain, "no failure logged:\n\(session.log())")
        try folder.remount(readOnly: false)
        try await session.addTrack(tracks[2].absoluteString, after: ids[2], setAsCurrent: false)
        try await Self.waitForSavedState(session, "the queue of 5") { $0["queueCount"] as? Int == 5 }
        let recovered = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(20)) {
            session.log().contains("the session is saved again")
        }
        #expect(recovered, "\(session.log())")
        failures = Self.saveFailures(session.log())
        #expect(failures.count == 1, "\(failures.joined(separator: "\n"))")
    }

    /// Launches `session` with nothing named on what version 0.1.0 saved: a `queue.m3u8` of
    /// `tracks`, and a version 1 `state.json` that expects `queueCount` entries, on the second,
    /// 2 s in, at volume 0.5 with loop `loop`.
    static func launchOnPreviousVersion(_ session: Session, _ tracks: [URL], queueCount: Int, loop: String)
        async throws
    {
        try SavedStateEdgeTests.writeSession(
            session, queue: tracks.map(\.absoluteString),
            state: """
                {"version": 1, "queueCount": \(queueCount), "current": 1, "position": 2000000, "volume": 0.5, "rate": 1, "loop": "\(loop)", "shuffle": false}
                """)
        try await session.launch([])
    }

    @Test("the previous version's queue.m3u8 and state.json restore whole, and the next save moves to the new files")
    func previousVersionRestores() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await Self.launchOnPreviousVersion(session, tracks, queueCount: 3, loop: "off")
        try await session.waitForStatus("Paused")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 2"))
        let position = try await session.position()
        #expect(abs(position - 2_000_000) < 500_000, "restored at \(position) µs")
        #expect(try await session.get("Volume") == .double(0.5))

        try await Self.waitForSavedState(session, "a generation") { $0["queueGeneration"] is Int }
        let queueFile = try #require(session.savedQueueFile)
        let lines = try String(contentsOf: queueFile, encoding: .utf8).split(separator: "\n").filter {
            !$0.hasPrefix("#")
        }
        #expect(lines == tracks.map { Substring($0.absoluteString) })
        #expect(!FileManager.default.fileExists(atPath: session.stateFolder.appendingPathComponent("queue.m3u8").path))

        kill(session.daemon!.pid, SIGKILL)
        _ = try await session.waitForExit()
        try await session.launch([])
        try await session.waitForStatus("Paused")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 2"))
    }

    @Test("a torn save of the previous version (673 entries, the state expects 672) keeps its queue")
    func previousVersionTornKeepsTheQueue() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await Self.launchOnPreviousVersion(session, tracks, queueCount: 2, loop: "all")
        #expect(try await Self.urls(session) == tracks.map(\.absoluteString), "the queue is lost:\n\(session.log())")
        #expect(try await session.get("Volume") == .double(0.5), "the options are kept")
        #expect(try await session.get("LoopStatus") == .string("Playlist"))
        let log = session.log()
        #expect(log.contains("queue.m3u8 holds 3 entries, the state expects 2"), "\(log)")
        #expect(!log.contains("cannot restore"), "\(log)")
    }

    @Test("temporary files that killed runs left are removed at start; a running process's are kept")
    func staleTemporariesAreRemoved() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try SavedStateEdgeTests.writeSession(
            session, queue: tracks.map(\.absoluteString),
            state: """
                {"version": 1, "queueCount": 3, "current": 0, "position": 0, "volume": 1, "rate": 1, "loop": "off", "shuffle": false}
                """)
        // A process that has ended: its pid names no running writer.
        let ended = try await Tools.run(["/bin/sh", "-c", "echo $$"])
        let gone = try #require(Int32(ended.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let stale = [".queue.m3u8.\(gone).17.tmp", ".state.json.\(gone).18.tmp", ".queue.4.m3u8.\(gone).19.tmp"]
        let running = ".state.json.\(getpid()).20.tmp"
        for name in stale + [running] {
            try Data("half a save".utf8).write(to: session.stateFolder.appendingPathComponent(name))
        }
        try await session.launch([])
        try await session.waitForStatus("Paused")
        let names = try FileManager.default.contentsOfDirectory(atPath: session.stateFolder.path)
        for name in stale { #expect(!names.contains(name), "\(name) stays") }
        #expect(names.contains(running), "a running process's temporary file is removed")
    }
}

/// Set when the test has killed the daemon: the storm stops.
@MainActor
final class KillSwitch {
    var fired = false
}

/// A tmpfs mounted over a folder for one test: a folder that fills up, or is made
/// read-only, for root too. Mounting needs root (CAP_SYS_ADMIN), which the tests have on
/// CI; without it the test fails, saying why.
final class SmallFolder {
    let url: URL

    /// Mounts a tmpfs of `size` (as mount(8) writes it: "64k") at `url`, made if missing.
    init(at url: URL, size: String) throws {
        self.url = url
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        guard mount("tmpfs", url.path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw HarnessError(
                "cannot mount a \(size) tmpfs at \(url.path): \(String(cString: strerror(errno))); this test needs root with CAP_SYS_ADMIN"
            )
        }
    }

    /// Mounts it again read-only, or writable.
    func remount(readOnly: Bool) throws {
        let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
        guard mount("tmpfs", url.path, "tmpfs", flags, nil) == 0 else {
            throw HarnessError("cannot remount \(url.path): \(String(cString: strerror(errno)))")
        }
    }

    /// The bytes still free in it.
    func freeBytes() -> Int {
        var status = statvfs()
        guard statvfs(url.path, &status) == 0 else { return -1 }
        return Int(status.f_bavail) * Int(status.f_frsize)
    }

    /// Unmounts it, at once even if a process still has it open.
    func unmount() {
        umount2(url.path, Int32(MNT_DETACH))
    }
}
