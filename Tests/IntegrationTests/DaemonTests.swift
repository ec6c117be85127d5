import DBus
import Foundation
import TestKit
import Testing

/// The daemon's D-Bus surface and lifecycle, with the real binary on a private bus.
@Suite("quaver on the bus")
@MainActor
struct DaemonTests {
    static let repository = Tools.repository

    @Test("Introspect of the running daemon is dbus/org.mpris.MediaPlayer2.xml")
    func introspectionMatchesTheCheckedInFile() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused"] + tracks.map(\.path))
        let live = try await session.call("Introspect", interface: "org.freedesktop.DBus.Introspectable").first?.string
        let file = try String(
            contentsOf: Self.repository.appendingPathComponent("dbus/org.mpris.MediaPlayer2.xml"), encoding: .utf8)
        #expect(live == file, "regenerate with: quaver --print-introspection > dbus/org.mpris.MediaPlayer2.xml")
    }

    @Test("playing, the daemon maps no full Foundation and no ICU (issue 18: about 7 MiB resident)")
    func noFullFoundation() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let pid = try #require(session.daemon?.pid)
        let maps = try #require(try ProcessProbe.memoryMaps(of: pid))
        let banned = ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"]
        let mapped = Set(maps.split(separator: "\n").compactMap { $0.split(separator: "/").last.map(String.init) })
            .filter { name in banned.contains { name.hasPrefix($0) } }
        #expect(mapped.isEmpty, "the daemon maps \(mapped.sorted())")
    }

    @Test("GetAll answers every MPRIS property with its exact type")
    func getAllTypes() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")

        let root =
            try await session.call(
                "GetAll", interface: "org.freedesktop.DBus.Properties", [.string("org.mpris.MediaPlayer2")]
            )
            .first?.stringVariantDictionary ?? [:]
        let rootTypes = root.mapValues(\.type.signature)
        #expect(
            rootTypes == [
                "CanQuit": "b", "CanRaise": "b", "HasTrackList": "b", "Identity": "s", "DesktopEntry": "s",
                "SupportedUriSchemes": "as", "SupportedMimeTypes": "as",
            ])
        #expect(root["Identity"] == .string("Quaver"))
        #expect(root["DesktopEntry"] == .string("quaver"))
        #expect(root["CanQuit"] == .boolean(true))
        #expect(root["CanRaise"] == .boolean(false))
        #expect(root["HasTrackList"] == .boolean(true))
        #expect(root["SupportedUriSchemes"] == .strings(["file", "http", "https"]))
        let mimeTypes = root["SupportedMimeTypes"]?.stringArray ?? []
        #expect(mimeTypes.contains("audio/flac") && mimeTypes.contains("audio/x-wav"), "\(mimeTypes)")
        #expect(
            !mimeTypes.contains {
                $0.hasPrefix("video/") && !$0.contains("ogg") && !$0.contains("webm") && !$0.contains("mp4")
                    && !$0.contains("matroska")
            })

        let player =
            try await session.call(
                "GetAll", interface: "org.freedesktop.DBus.Properties", [.string("org.mpris.MediaPlayer2.Player")]
            )
            .first?.stringVariantDictionary ?? [:]
        #expect(
            player.mapValues(\.type.signature) == [
                "PlaybackStatus": "s", "LoopStatus": "s", "Rate": "d", "Shuffle": "b", "Metadata": "a{sv}",
                "Volume": "d", "Position": "x", "MinimumRate": "d", "MaximumRate": "d", "CanGoNext": "b",
                "CanGoPrevious": "b", "CanPlay": "b", "CanPause": "b", "CanSeek": "b", "CanControl": "b",
            ])
        #expect(player["PlaybackStatus"] == .string("Paused"))
        #expect(player["Rate"] == .double(1))
        #expect(player["MinimumRate"] == .double(0.5))
        #expect(player["MaximumRate"] == .double(2))
        #expect(player["CanGoNext"] == .boolean(true))
        #expect(player["CanGoPrevious"] == .boolean(false))
        #expect(player["CanControl"] == .boolean(true))

        let metadata = player["Metadata"]?.stringVariantDictionary ?? [:]
        #expect(metadata["mpris:trackid"]?.type == .objectPath)
        #expect(metadata["mpris:length"] == .int64(10_000_000))
        #expect(metadata["xesam:title"] == .string("Track 1"))
        #expect(metadata["xesam:artist"] == .strings(["Artist 1"]))
        #expect(metadata["xesam:genre"] == .strings(["Test Tones"]))
        #expect(metadata["xesam:trackNumber"] == .int32(1))
        #expect(metadata["xesam:url"] == .string(tracks[0].absoluteString))
    }

    @Test("the end of the queue stops; nothing to go next to")
    func endOfQueueStops() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 1)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        try await session.waitForPlayerChange(after: 0, timeout: .seconds(15), "Metadata of the second track") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        try await session.waitForStatus("Stopped", after: 1, timeout: .seconds(15))
        #expect(try await session.get("CanGoNext") == .boolean(false))
        #expect(try await session.position() == 0)
        #expect(try await session.playerctl("status") == "Stopped")
        // Play starts the queue again.
        let mark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: mark)
    }

    @Test("missing and broken files are skipped with a log line naming each; the queue goes on")
    func brokenFilesAreSkipped() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let folder = session.bus.directory
        let garbage = folder.appendingPathComponent("garbage.flac")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: garbage)
        let empty = folder.appendingPathComponent("empty.mp3")
        try Data().write(to: empty)
        let missing = folder.appendingPathComponent("missing.ogg")
        try await session.launch([missing.path, garbage.path, empty.path, tracks[1].path])
        try await session.waitForStatus("Playing")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 2"))
        let log = session.log()
        for broken in [missing, garbage, empty] {
            #expect(log.contains(broken.path), "no log line names \(broken.lastPathComponent):\n\(log)")
        }
    }

    @Test("a second quaver takes org.mpris.MediaPlayer2.quaver.instance<PID>")
    func secondInstance() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused"] + tracks.map(\.path))
        let second = try session.spawn(
            ["--new-instance", "--paused"] + tracks.map(\.path),
            log: session.bus.directory.appendingPathComponent("second.log"))
        let instance = session.busName + ".instance\(second.pid)"
        let owned = await session.waiter.wait(timeout: .seconds(20)) {
            session.owners[instance].map { !$0.isEmpty } ?? false
        }
        #expect(owned, "\(session.owners)")
        let identity = try await session.call(
            "Get", interface: "org.freedesktop.DBus.Properties",
            [.string("org.mpris.MediaPlayer2"), .string("Identity")], destination: instance)
        #expect(identity.first?.unwrapped == .string("Quaver"))
        #expect(session.owners[session.busName] != session.owners[instance])
        let players = try await session.playerctlRaw(["-l"])
        #expect(players.split(separator: "\n").contains { $0 == "quaver.instance\(second.pid)" }, "\(players)")
    }

    @Test("Quit releases the name and exits 0")
    func quit() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)
        let released = await session.waiter.wait(timeout: .seconds(20)) { session.owners[session.busName] == "" }
        #expect(released)
    }

    @Test("SIGTERM and SIGINT exit 0", arguments: [SIGTERM, SIGINT])
    func terminate(signal: Int32) async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        kill(session.daemon!.pid, signal)
        #expect(try await session.waitForExit() == 0)
        #expect(session.log().contains("stopping"))
    }

    @Test("losing the bus ends the daemon with a non-zero status and one log line")
    func busLoss() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        kill(session.bus.process.pid, SIGKILL)
        let status = try await session.waitForExit()
        #expect(status != 0)
        let lines = session.log().split(separator: "\n").filter { $0.contains("lost the connection") }
        #expect(lines.count == 1, "\(session.log())")
    }

    @Test("a paused daemon does not wake up")
    func pausedDaemonSleeps() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let launched = ContinuousClock.now
        try await session.launch(["--paused"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")
        _ = try await session.metadata()  // let the answer go out before counting
        let pid = session.daemon!.pid
        // The measurement windows themselves, not waits for an event: 3.5 s for the answer's
        // last work to end and the pipeline's watchdog to stand (it ticks every 1.5 s until a
        // tick finds no call made since the one before), then 3 s counted.
        try await Task.sleep(for: .milliseconds(3_500))
        /// The context switches of 3 s, the measurement window.
        func switchesOverThreeSeconds() async throws -> Int {
            let before = try ProcessProbe.Sample(of: pid)
            try await Task.sleep(for: .seconds(3))
            let after = try ProcessProbe.Sample(of: pid)
            var switches = Int(after.contextSwitches(since: before))
            if ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil {
                // ThreadSanitizer's own background thread wakes about ten times a second in every
                // process it checks (scripts/sanitize sets TSAN_OPTIONS): leave out the busiest thread.
                switches -= Int(after.busiestThreadSwitches(since: before))
            }
            return switches
        }
        let paused = try await switchesOverThreeSeconds()
        #expect(paused <= 2, "\(paused) context switches in 3 s while paused")

        // The same measure does see a playing daemon work (so the probe is not blind).
        let mark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForStatus("Playing", after: mark)
        let playingBefore = try ProcessProbe.Sample(of: pid)
        try await Task.sleep(for: .seconds(1))  // the measurement window
        let playing = try ProcessProbe.Sample(of: pid).contextSwitches(since: playingBefore)
        #expect(playing > 10, "\(playing) context switches in 1 s of playing")

        // Paused again once the start is over and its pages are handed back (10 s after the
        // name): that work leaves no timer of libdispatch's behind either.
        try await session.playerctl("pause")
        try await session.waitForStatus("Paused", after: mark)
        try await Task.sleep(until: launched + .seconds(14), clock: .continuous)
        let late = try await switchesOverThreeSeconds()
        #expect(late <= 2, "\(late) context switches in 3 s while paused, after the start")
    }
}
