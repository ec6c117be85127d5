import DBus
import NowPlaying
import TestKit
import Testing

/// A player written the way Apple's API asks, with `changePlaybackPositionCommand` for its
/// slider and `skipForwardCommand`/`skipBackwardCommand` for its steps, on a private bus:
/// the relative positions `playerctl` sends, which are MPRIS `Seek` calls with an offset as
/// GNOME's seek keys (45 s ahead, 10 s back) and Plasma's shortcuts (30 s, 5 s) send them,
/// reach its skip handlers with the step as the interval.
@Suite("an Apple-style skip handler on a private bus, driven by playerctl")
@MainActor
struct SkipCommandBusTests {
    @Test("playerctl position 10+ and 10- (and the desktops' steps) reach the skip handlers")
    func relativePositionsReachTheSkipHandlers() async throws {
        let session = try await Session(name: "skipper")
        defer { session.stop() }
        let commands = RemoteCommandCenter()
        let info = NowPlayingInfoCenter()
        var received: [String] = []
        commands.skipForwardCommand.preferredIntervals = [15]
        commands.skipForwardCommand.addTarget { event in
            received.append("forward \(event.interval)")
            info.nowPlayingInfo?.elapsedPlaybackTime = info.currentPosition + .seconds(event.interval)
            return .success
        }
        commands.skipBackwardCommand.addTarget { event in
            received.append("backward \(event.interval)")
            info.nowPlayingInfo?.elapsedPlaybackTime = max(info.currentPosition - .seconds(event.interval), .zero)
            return .success
        }
        commands.changePlaybackPositionCommand.addTarget { event in
            received.append("position \(event.positionTime)")
            info.nowPlayingInfo?.elapsedPlaybackTime = event.positionTime
            return .success
        }
        commands.playCommand.addTarget { _ in .success }
        var item = NowPlayingInfo(queueItemID: 1)
        item.title = "Lecture"
        item.duration = .seconds(600)
        item.elapsedPlaybackTime = .seconds(100)
        item.playbackRate = 0
        info.nowPlayingInfo = item
        info.playbackState = .paused
        let server = MPRISServer(
            commandCenter: commands, infoCenter: info,
            configuration: .init(playerName: "skipper", identity: "Skipper"))
        let connection = try Connection(address: session.bus.address)
        try server.register(on: connection)
        defer { server.unregister() }

        #expect(try await session.get("CanSeek") == .boolean(true))
        // playerctl's own steps, then GNOME's keys, then Plasma's shortcuts.
        let steps = ["10+", "10-", "45+", "10-", "30+", "5-"]
        for step in steps {
            let mark = session.signals.count
            try await session.playerctl("position", step)
            // The handler moved the position: Seeked says where to, before the next step.
            try await session.waitForSignal(after: mark, "Seeked after position \(step)") { $0.member == "Seeked" }
        }
        #expect(
            received == [
                "forward 10.0", "backward 10.0", "forward 45.0", "backward 10.0", "forward 30.0", "backward 5.0",
            ])
        // Paused at 100 s: 100 + 10 - 10 + 45 - 10 + 30 - 5.
        #expect(Double(try await session.playerctl("position")) == 160)

        // An absolute position is the slider's: the position command, not a skip.
        try await session.playerctl("position", "30")
        #expect(received.last == "position 30.0 seconds")
        #expect(Double(try await session.playerctl("position")) == 30)
    }
}
