import DBus
import Foundation
import TestKit
import Testing

/// The real `quaver` binary on a private bus, driven by `playerctl` and watched by a client
/// that records every signal.
@Suite("playerctl against a running quaver", .serialized)
@MainActor
struct PlayerctlTests {
    @Test("every playerctl command, with the signals each one causes")
    func playerctlCommands() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")

        #expect(try await session.playerctl("status") == "Playing")
        let metadata = try await session.playerctl(
            "metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}")
        #expect(metadata == "Track 1|Artist 1|Test Album|10000000")

        // pause: exactly PlaybackStatus changes, in one signal
        var mark = session.signals.count
        try await session.playerctl("pause")
        let paused = try await session.waitForPlayerChange(after: mark, "Paused") {
            $0["PlaybackStatus"]?.string == "Paused"
        }
        #expect(Set(paused.changed.keys) == ["PlaybackStatus"])
        #expect(try await session.playerctl("status") == "Paused")
        let frozen = try await session.position()
        #expect(try await session.position() == frozen, "Position must not move while paused")

        mark = session.signals.count
        try await session.playerctl("play")
        let playing = try await session.waitForPlayerChange(after: mark, "Playing") {
            $0["PlaybackStatus"]?.string == "Playing"
        }
        #expect(Set(playing.changed.keys) == ["PlaybackStatus"])

        mark = session.signals.count
        try await session.playerctl("play-pause")
        try await session.waitForPlayerChange(after: mark, "Paused by play-pause") {
            $0["PlaybackStatus"]?.string == "Paused"
        }
        mark = session.signals.count
        try await session.playerctl("play-pause")
        try await session.waitForPlayerChange(after: mark, "Playing by play-pause") {
            $0["PlaybackStatus"]?.string == "Playing"
        }

        // next: the new Metadata and the flags that flipped arrive together
        mark = session.signals.count
        try await session.playerctl("next")
        let next = try await session.waitForPlayerChange(after: mark, "Metadata of track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Track 2"
        }
        #expect(
            Set(next.changed.keys) == ["Metadata", "CanGoPrevious"],
            "one signal with the new track and the flag it flipped")
        #expect(next.changed["CanGoPrevious"]?.boolean == true)
        let nextMetadata = next.changed["Metadata"]?.stringVariantDictionary ?? [:]
        #expect(nextMetadata["xesam:artist"] == .strings(["Artist 2"]))
        #expect(nextMetadata["mpris:length"] == .int64(10_000_000))
        #expect(nextMetadata["mpris:trackid"]?.objectPath != nil)
        #expect(try await session.playerctl("metadata", "title") == "Track 2")
        #expect(try await session.playerctl("status") == "Playing")

        mark = session.signals.count
        try await session.playerctl("previous")
        let previous = try await session.waitForPlayerChange(after: mark, "Metadata of track 1") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string == "Track 1"
        }
        #expect(Set(previous.changed.keys) == ["Metadata", "CanGoPrevious"])
        #expect(previous.changed["CanGoPrevious"]?.boolean == false)

        // position and relative seek: Seeked carries the new position
        let before = Double(try await session.playerctl("position")) ?? -1
        #expect(before >= 0 && before < 10)
        mark = session.signals.count
        try await session.playerctl("position", "5+")
        let seeked = try await session.waitForSignal(after: mark, "Seeked") { $0.member == "Seeked" }
        let target = seeked.arguments.first?.int64 ?? -1
        #expect(
            target >= Int64((before + 5) * 1_000_000) - 100_000 && target <= Int64((before + 5) * 1_000_000) + 600_000,
            "Seeked \(target) after position \(before) + 5 s")
        let after = try await session.position()
        #expect(after >= target && after < target + 1_000_000, "Position \(after) right after Seeked(\(target))")

        // volume
        mark = session.signals.count
        try await session.playerctl("volume", "0.5")
        let volume = try await session.waitForPlayerChange(after: mark, "Volume") { $0["Volume"] != nil }
        #expect(volume.changed == ["Volume": .double(0.5)])
        #expect(try await session.playerctl("volume") == "0.500000")

        // stop: Stopped, position 0, no Seeked
        mark = session.signals.count
        try await session.playerctl("stop")
        let stopped = try await session.waitForPlayerChange(after: mark, "Stopped") {
            $0["PlaybackStatus"]?.string == "Stopped"
        }
        // Nothing can seek while stopped: CanSeek flips with the status, in the same signal.
        #expect(stopped.changed == ["PlaybackStatus": .string("Stopped"), "CanSeek": .boolean(false)])
        #expect(try await session.playerctl("status") == "Stopped")
        #expect(try await session.position() == 0)
        #expect(Double(try await session.playerctl("position")) == 0)

        // Seeked only after the one seek; Position never signalled.
        #expect(session.signals.filter { $0.member == "Seeked" }.count == 1, "\(session.signals)")
        session.expectNoPositionInPropertiesChanged()
    }
}
