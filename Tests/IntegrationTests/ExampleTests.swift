import DBus
import Foundation
import TestKit
import Testing

/// `Examples/Countdown`, the NowPlaying library's model adopter: a program that is not a
/// music player, on a private bus, driven by `playerctl` and watched by a client that
/// records every signal. Its timers are seconds long, so that they run out during the test.
@Suite("the countdown example, a program that is not a music player", .serialized)
@MainActor
struct ExampleTests {
    static let countdown = Tools.built("countdown")
    /// The libraries NowPlaying and DBus must not bring into a program that adopts them:
    /// GStreamer and GLib, and full Foundation with its ICU (about 7 MiB resident).
    static let foreignLibraries = [
        "libgst", "libglib", "libgobject", "libgio", "libgmodule",
        "libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
    ]

    @Test("playerctl plays, pauses, seeks and moves between timers; a timer that runs out hands over")
    func playerctlDrivesTheCountdown() async throws {
        let session = try await Session(name: "kitchen")
        defer { session.stop() }
        try await session.launch(command: [Self.countdown.path, "--name", "kitchen", "Tea=60", "Eggs=4", "Pasta=2"])
        let pid = try #require(session.daemon?.pid)

        // What the program costs and loads while it waits on the bus with nothing running.
        #expect(try await session.playerctl("status") == "Stopped")
        let rss = try #require(ProcessProbe.residentBytes(of: pid))
        print("countdown, idle on the bus: VmRSS \(rss >> 10) KiB")
        let maps = try #require(try ProcessProbe.memoryMaps(of: pid))
        let loaded = Set(
            maps.split(separator: "\n").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last }
                .map { String($0.split(separator: "/").last ?? "") }.filter { $0.contains(".so") })
        #expect(loaded.contains { $0.hasPrefix("libdbus-1.so") }, "\(loaded.sorted())")
        #expect(
            loaded.filter { name in Self.foreignLibraries.contains { name.hasPrefix($0) } }.isEmpty,
            "loaded: \(loaded.sorted())")

        // The first timer, stopped: nothing to pause or go back to.
        let metadata = try await session.playerctl(
            "metadata", "--format", "{{title}}|{{artist}}|{{mpris:length}}|{{mpris:trackid}}")
        #expect(metadata == "Tea|Countdown|60000000|'/kitchen/track/1'")
        #expect(try await session.get("CanPause") == .boolean(false))
        #expect(try await session.get("CanGoPrevious") == .boolean(false))
        #expect(try await session.get("CanGoNext") == .boolean(true))

        // play-pause starts the timer.
        var mark = session.signals.count
        try await session.playerctl("play-pause")
        let playing = try await session.waitForPlayerChange(after: mark, "Playing") {
            $0["PlaybackStatus"]?.string == "Playing"
        }
        #expect(playing.changed["CanPause"] == .boolean(true))
        #expect(try await session.playerctl("status") == "Playing")

        // position 2: the timer jumps there, Seeked says where, and it counts on from there.
        mark = session.signals.count
        // The seek happens after this instant: the timer has run at most the time since.
        let seekedAt = ContinuousClock.now
        try await session.playerctl("position", "2")
        let seeked = try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        let landed = seeked.arguments.first?.int64 ?? -1
        #expect(landed >= 2_000_000 && landed < 2_100_000, "Seeked(\(landed))")
        // It counts on in real time: at most the time since the seek was asked for (and the
        // 100 ms the landing may be past 2 s); a busy machine makes that more than a second.
        let position = Double(try await session.playerctl("position")) ?? -1
        let limit = 2.1 + (ContinuousClock.now - seekedAt).inSeconds
        #expect(position >= 2 && position <= limit, "position \(position) after position 2 (at most \(limit))")

        // play-pause pauses: the position stands still.
        mark = session.signals.count
        try await session.playerctl("play-pause")
        try await session.waitForPlayerChange(after: mark, "Paused") { $0["PlaybackStatus"]?.string == "Paused" }
        let pausedLimit = 2.1 + (ContinuousClock.now - seekedAt).inSeconds
        let frozen = try await session.position()
        let moved = try await Waiter.poll(timeout: .milliseconds(300), every: .milliseconds(50)) {
            try await session.position() != frozen
        }
        #expect(!moved, "Position must not move while paused")
        #expect(
            frozen >= 2_000_000 && Double(frozen) / 1e6 <= pausedLimit,
            "paused at \(frozen) µs (at most \(pausedLimit) s)")

        // next: the second timer, from zero, still paused; one signal with the new metadata
        // and the flag it flipped.
        mark = session.signals.count
        try await session.playerctl("next")
        let next = try await session.waitForPlayerChange(after: mark, "Metadata of Eggs") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Eggs"
        }
        #expect(Set(next.changed.keys) == ["Metadata", "CanGoPrevious"], "\(next)")
        #expect(next.changed["CanGoPrevious"] == .boolean(true))
        let eggs = next.changed["Metadata"]?.stringVariantDictionary ?? [:]
        #expect(eggs["mpris:length"] == .int64(4_000_000))
        #expect(eggs["mpris:trackid"] == .objectPath(ObjectPath("/kitchen/track/2")!))
        #expect(eggs["xesam:artist"] == .strings(["Countdown"]))
        #expect(try await session.playerctl("status") == "Paused")
        #expect(try await session.position() == 0)

        // previous: back to the first; next again.
        mark = session.signals.count
        try await session.playerctl("previous")
        let previous = try await session.waitForPlayerChange(after: mark, "Metadata of Tea") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Tea"
        }
        #expect(previous.changed["CanGoPrevious"] == .boolean(false))
        #expect(try await session.playerctl("metadata", "title") == "Tea")
        mark = session.signals.count
        try await session.playerctl("next")
        try await session.waitForPlayerChange(after: mark, "Metadata of Eggs again") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Eggs"
        }

        // Play 2 s into the 4 s timer: it runs out 2 s later and the last timer starts.
        mark = session.signals.count
        try await session.playerctl("play")
        try await session.waitForPlayerChange(after: mark, "Playing Eggs") { $0["PlaybackStatus"]?.string == "Playing" }
        mark = session.signals.count
        try await session.playerctl("position", "2")
        let eggsSeeked = try await session.waitForSignal(after: mark, "Seeked in Eggs") { $0.member == "Seeked" }
        let pasta = try await session.waitForPlayerChange(after: mark, timeout: .seconds(10), "Metadata of Pasta") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Pasta"
        }
        // Times are when this process handled each signal, which a busy machine delays, each
        // by its own amount: bounds that tell "ran out about 2 s later" from "at once" or "never".
        let eggsRest = pasta.received - eggsSeeked.received
        #expect(
            eggsRest > .milliseconds(1000) && eggsRest < .milliseconds(6000),
            "Eggs ran out \(eggsRest) after the seek to 2 s of 4")
        #expect(pasta.changed["CanGoNext"] == .boolean(false), "\(pasta)")
        #expect(pasta.changed["PlaybackStatus"] == nil, "the next timer plays on: \(pasta)")
        #expect(try await session.playerctl("status") == "Playing")

        // The last timer runs out: the countdown stops there, rewound.
        let stopped = try await session.waitForPlayerChange(after: mark, timeout: .seconds(10), "Stopped") {
            $0["PlaybackStatus"]?.string == "Stopped"
        }
        let pastaTime = stopped.received - pasta.received
        #expect(
            pastaTime > .milliseconds(1000) && pastaTime < .milliseconds(6000), "Pasta (2 s) ran out after \(pastaTime)"
        )
        #expect(try await session.playerctl("status") == "Stopped")
        #expect(try await session.playerctl("metadata", "title") == "Pasta")
        #expect(try await session.position() == 0)

        // Seeked after the two seeks only; Position never signalled.
        #expect(session.signals.filter { $0.member == "Seeked" }.count == 2, "\(session.signals)")
        session.expectNoPositionInPropertiesChanged()
    }

    @Test("the example's binary needs libdbus-1 and no GStreamer, GLib or full Foundation library")
    func linkedLibraries() async throws {
        guard let readelf = Tools.find("readelf") else { throw HarnessError("readelf is not installed (binutils)") }
        let result = try await Tools.run(
            readelf, ["-d", Self.countdown.path], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "readelf -d: \(result.error)")
        // Lines like ` 0x...1 (NEEDED)  Shared library: [libdbus-1.so.3]`.
        let needed = result.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap {
            line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]"), open < close else {
                return nil
            }
            return String(line[line.index(after: open)..<close])
        }
        let size =
            (try FileManager.default.attributesOfItem(atPath: Self.countdown.path)[.size] as? NSNumber)?.intValue ?? -1
        print("countdown: \(size) bytes; NEEDED: \(needed.joined(separator: ", "))")
        #expect(needed.contains { $0.hasPrefix("libdbus-1.so") }, "NEEDED: \(needed)")
        let foreign = needed.filter { name in Self.foreignLibraries.contains { name.hasPrefix($0) } }
        #expect(foreign.isEmpty, "the example links \(foreign)")
    }
}
