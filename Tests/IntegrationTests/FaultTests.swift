import DBus
import Foundation
import TestKit
import Testing

/// Faults from the world around a running quaver: files that go away or change under it,
/// and folders it cannot write to. (Losing the bus and SIGKILL with a restart are in
/// DaemonTests and SessionStateTests.)
@Suite("faults around a running quaver")
@MainActor
struct FaultTests {
    /// Copies of shared test tracks into this session's own folder, which the test may
    /// delete or replace without disturbing other tests.
    func ownCopies(_ tracks: [URL], in session: Session) throws -> [URL] {
        try tracks.map { track in
            let copy = session.bus.directory.appendingPathComponent(track.lastPathComponent)
            try FileManager.default.copyItem(at: track, to: copy)
            return copy
        }
    }

    func title(_ session: Session) async throws -> String? {
        try await session.metadata()["xesam:title"]?.string
    }

    @Test("an unreadable folder and an unreadable file are skipped with their reasons; the rest plays")
    func unreadableFolderAndFile() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 6)
        let session = try await Session()
        defer { session.stop() }
        let music = session.bus.directory.appendingPathComponent("Music")
        let open = music.appendingPathComponent("A")
        let closed = music.appendingPathComponent("B")
        for folder in [open, closed] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(at: tracks[0], to: open.appendingPathComponent("01 readable.flac"))
        try FileManager.default.copyItem(at: tracks[1], to: open.appendingPathComponent("02 unreadable.flac"))
        try FileManager.default.copyItem(at: tracks[2], to: closed.appendingPathComponent("03 hidden.flac"))
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o000], ofItemAtPath: open.appendingPathComponent("02 unreadable.flac").path)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: closed.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: closed.path) }
        if getuid() == 0 {
            // root reads anything: drop the capabilities that let it, so permissions count.
            let setpriv = try #require(
                Tools.find("setpriv"), "setpriv (util-linux) runs quaver without root's file access")
            session.launcher = [setpriv.path, "--bounding-set=-dac_override,-dac_read_search"]
        }
        try await session.launch([music.path])
        try await session.waitForStatus("Playing")
        #expect(try await title(session) == "Track 1")
        #expect(await waitForLog(session, "skipping folder \(closed.path): Permission denied"), "\(session.log())")
        // The unreadable file is found when its turn comes (or when its tags are read ahead).
        #expect(
            await waitForLog(session, "skipping \(open.appendingPathComponent("02 unreadable.flac").path)"),
            "\(session.log())")
        #expect(try await session.get("CanGoNext") == .boolean(false), "nothing playable follows")
        #expect(session.daemonStatus == nil)
        #expect(!session.log().contains("critical"))
    }

    @Test("a file deleted while it plays plays to its end, then the queue goes on")
    func deletedWhilePlaying() async throws {
        // Ten seconds: a test held up for a few seconds (as in the burst of tests starting at
        // once) still deletes the file while it plays, and sees the next track come after that.
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let copies = try ownCopies(tracks, in: session)
        try await session.launch(["--log-level", "debug"] + copies.map(\.path))
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        #expect(try await title(session) == "Track 1", "\(session.log())")
        try FileManager.default.removeItem(at: copies[0])
        try await session.waitForPlayerChange(after: mark, timeout: .seconds(30), "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Track 2"
        }
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        #expect(!session.log().contains("skipping \(copies[0].path)"), "the open file played on: \(session.log())")
        #expect(!session.log().contains("critical"))
    }

    @Test("a file replaced while it plays: the old one plays on, the new one is what plays next time")
    func replacedWhilePlaying() async throws {
        let session = try await Session()
        defer { session.stop() }
        // Ten seconds, as above: the rename must come while the first track still plays.
        let copies = try ownCopies(try await TestMedia.tracks(count: 2, seconds: 10), in: session)
        try await session.launch(copies.map(\.path))
        try await session.waitForStatus("Playing")
        // Track 2's file, written beside and renamed over track 1 (what an editor does).
        let temporary = session.bus.directory.appendingPathComponent(".replacement.flac")
        try FileManager.default.copyItem(at: copies[1], to: temporary)
        let mark = session.signals.count
        #expect(rename(temporary.path, copies[0].path) == 0)
        try await session.waitForPlayerChange(after: mark, timeout: .seconds(30), "the second entry") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string == copies[1].absoluteString
        }
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        // Back to the first entry: its file now holds track 2's audio and tags.
        let back = session.signals.count
        _ = try await session.call("Previous")
        _ = try await session.call("Previous")
        try await session.waitForPlayerChange(after: back, timeout: .seconds(30), "the first entry again") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string == copies[0].absoluteString
        }
        #expect(!session.log().contains("critical"))
    }

    @Test("a state folder that cannot be written is logged; playback and Quit are unaffected")
    func unwritableStateFolder() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        // A file where the folder should be: no one, not even root, can write into it.
        try FileManager.default.createDirectory(
            at: session.stateFolder.deletingLastPathComponent(), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: session.stateFolder.path, contents: Data("not a folder".utf8)))
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        try await session.playerctl("pause")
        try await session.waitForStatus("Paused", after: mark)
        try await session.playerctl("play")
        #expect(try await title(session) == "Track 1")
        let logged = await session.waiter.wait(timeout: .seconds(20)) {
            session.log().contains("could not save the session")
        }
        #expect(logged, "\(session.log())")
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)
        #expect(!session.log().contains("critical"))
    }

    @Test("a cache folder that cannot be written: no demo, a clear log line, and OpenUri still plays")
    func unwritableCacheFolder() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let cache = session.home.appendingPathComponent(".cache")
        #expect(FileManager.default.createFile(atPath: cache.path, contents: Data("not a folder".utf8)))
        try await session.launch([])  // nothing named, no music: the demo would go in the cache
        _ = try await session.call("OpenUri", [.string(tracks[0].absoluteString)])
        try await session.waitForStatus("Playing")
        #expect(try await title(session) == "Track 1")
        let lines = session.log().split(separator: "\n").filter { $0.contains("could not create the demo playlist") }
        #expect(lines.count == 1 && lines[0].hasSuffix("Not a directory"), "\(session.log())")
        #expect(!session.log().contains("critical"))
    }

    /// Runs quaver with its state and cache folders on a file system of their own: a tiny
    /// tmpfs that is full (filled before quaver starts) or mounted read-only, in a mount
    /// namespace of quaver's own (`unshare`; as a user, with a user namespace).
    func launchWithStorage(_ session: Session, _ arguments: [String], readOnly: Bool) async throws {
        let unshare = try #require(Tools.find("unshare"), "unshare (util-linux) gives quaver a file system of its own")
        let cache = session.home.appendingPathComponent(".cache/quaver")
        for folder in [session.stateFolder, cache] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let mounts = [session.stateFolder, cache].map { folder in
            let path = quoted(folder.path)
            return readOnly
                ? "mount -t tmpfs -o size=64k,mode=0700,ro tmpfs \(path)"
                : "mount -t tmpfs -o size=64k,mode=0700 tmpfs \(path) && (dd if=/dev/zero of=\(path)/filler bs=4k 2>/dev/null || true)"
        }.joined(separator: " && ")
        session.launcher =
            [unshare.path] + (getuid() == 0 ? [] : ["--user", "--map-root-user"])
            + ["--mount", "/bin/sh", "-c", mounts + " && exec \"$@\"", "sh"]
        try await session.launch(arguments)
    }

    @Test(
        "a full and a read-only state and cache file system: one log line each, playback, seeking and Quit unaffected",
        arguments: [false, true])
    func fullOrReadOnlyStorage(readOnly: Bool) async throws {
        let tracks = try await TestMedia.coveredTracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await launchWithStorage(session, tracks.map(\.track.path), readOnly: readOnly)
        try await session.waitForStatus("Playing")
        #expect(try await title(session) == "Track 1")
        let mark = session.signals.count
        try await session.playerctl("position", "4")
        try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        try await session.playerctl("pause")
        try await session.waitForStatus("Paused", after: mark)
        try await session.playerctl("next")
        try await session.waitForPlayerChange(after: mark, "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Track 2"
        }
        let reason = readOnly ? "Read-only file system" : "No space left on device"
        #expect(await waitForLog(session, "could not save the session"), "\(session.log())")
        let saves = session.log().split(separator: "\n").filter { $0.contains("could not save the session") }
        #expect(saves.allSatisfy { $0.contains(reason) }, "the reason a user can act on: \(saves)")
        let art = session.log().split(separator: "\n").filter {
            $0.contains("could not keep artwork") && $0.contains("warning")
        }
        #expect(art.count == 1 && art[0].contains(reason), "one warning for the cache: \(session.log())")
        #expect(try await session.metadata()["mpris:artUrl"] == nil, "no art named that was never written")
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)
        #expect(!session.log().contains("critical"))
    }

    /// GStreamer not returning from a state change (GStreamer 1.22's playbin2 can deadlock
    /// taking a stream down; here an element in the output sleeps 8 s on every buffer, which
    /// taking its pad down waits for) must not leave the daemon deaf: every call is answered
    /// at once, and after the 3 s limit the daemon gives up on that pipeline and plays the
    /// next track in a new one.
    @Test("a pipeline stuck in GStreamer is replaced: every call is answered at once and the next track plays")
    func stuckPipelineIsReplaced() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 6)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path), sink: "identity sleep-time=8000000 ! fakesink sync=false")
        try await session.waitForStatus("Playing", timeout: .seconds(40))  // the first buffer took 8 s
        #expect(try await title(session) == "Track 1")

        let mark = session.signals.count
        let asked = ContinuousClock.now
        _ = try await session.call("Next")
        // Well under the 3 s limit and the 8 s sleep, with room for a machine busy with the
        // other tests (scripts/bench --storm measures the latency itself).
        #expect(ContinuousClock.now - asked < .seconds(2), "Next is answered at once: \(ContinuousClock.now - asked)")
        // While the pipeline is stuck, reads are answered at once too: one every 300 ms over
        // the stuck limit (3 s), or until the next track shows.
        let trackTwo = { (changed: [String: Value]) in
            changed["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Track 2"
        }
        _ = try await Waiter.poll(timeout: .seconds(3), every: .milliseconds(300)) {
            if session.signals.dropFirst(mark).contains(where: {
                $0.changedInterface == MPRISNames.player && trackTwo($0.changed)
            }) {
                return true
            }
            let read = ContinuousClock.now
            #expect(try await session.get("PlaybackStatus") == .string("Playing"))
            _ = try await session.get("Position")
            #expect(ContinuousClock.now - read < .seconds(2), "a read while stuck took \(ContinuousClock.now - read)")
            return false
        }
        try await session.waitForPlayerChange(
            after: mark, timeout: .seconds(40), "Track 2 in the new pipeline", where: trackTwo)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        // Taking the first track down waits for the element's sleep in progress: when Next came
        // in its last 3 s, that wait is under the limit and no pipeline needs replacing.
        if session.log().contains("going on in a new pipeline") {
            #expect(await waitForLog(session, "let go of the stuck pipeline"), "\(session.log())")
        }
        #expect(session.daemonStatus == nil)
        #expect(!session.log().contains("critical"))
    }

    /// Commands faster than the pipeline changes state, on tracks short enough to be read
    /// whole during preroll, mixed with a stream that fails at once: GStreamer 1.22's playbin2
    /// can deadlock here (a load taken down while its first data reaches the stream selector).
    /// Should it, the pipeline is replaced (above); the daemon answers throughout, and the last
    /// command wins. `QUAVER_LONG_TESTS=1` makes it ten times as long and as fast.
    @Test(
        "a storm of Next, Previous and OpenUri on short tracks and a failing stream: always answered, the last command wins"
    )
    func commandStorm() async throws {
        let tracks = try await TestMedia.tracks(count: 6, seconds: 0.5)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--log-level", "debug"] + tracks.map(\.path))
        try await session.waitForStatus("Playing")
        // Five calls at once, every 100 ms (every 10 ms in the long run): faster than any hand.
        let long = ProcessInfo.processInfo.environment["QUAVER_LONG_TESTS"] == "1"
        for round in 0..<(long ? 400 : 40) {
            try await Task.sleep(for: .milliseconds(long ? 10 : 100))  // the pace is the test's input, not a wait
            let file = tracks[round % tracks.count].absoluteString
            async let next1: Void = fire(session, "Next")
            async let next2: Void = fire(session, "Next")
            async let previous: Void = fire(session, "Previous")
            async let stream: Void = fire(session, "OpenUri", [.string("http://[::1:1/")])
            async let open: Void = fire(session, "OpenUri", [.string(file)])
            _ = await (next1, next2, previous, stream, open)
        }
        // Still answering, and what was asked last is what plays.
        let last = tracks[2].absoluteString
        let mark = session.signals.count
        _ = try await session.call("OpenUri", [.string(last)])
        do {
            try await session.waitForPlayerChange(after: mark, timeout: .seconds(30), "the last OpenUri's track") {
                $0["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string == last
            }
        } catch {
            Issue.record(
                "\(String(describing: error).prefix(500))\nstatus \(try await session.get("PlaybackStatus")), metadata \(try await session.metadata())\nlog:\n\(session.log().split(separator: "\n").filter { $0.hasPrefix("quaver[") }.suffix(40).joined(separator: "\n"))"
            )
        }
        _ = try await session.get("PlaybackStatus")
        let bad = session.log().split(separator: "\n").filter { $0.lowercased().contains("critical") }
        #expect(bad.isEmpty, "\(bad.prefix(5))")
    }

    /// A call whose answer does not matter here (a storm), only that one comes.
    func fire(_ session: Session, _ member: String, _ arguments: [Value] = []) async {
        _ = try? await session.call(member, arguments)
    }
}
