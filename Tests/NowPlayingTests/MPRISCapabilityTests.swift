import DBus
import Testing

@testable import NowPlaying

/// `Can*` flags derived from the commands and the info, read through GetAll.
@MainActor
@Suite struct MPRISCapabilityTests {
    @Test func nothingLoadedCannotPlayOrPause() {
        let h = Harness()
        let all = h.getAll()
        #expect(h.commands.playCommand.isActive, "targets are there")
        #expect(all["CanPlay"] == .boolean(false))
        #expect(all["CanPause"] == .boolean(false))
        #expect(all["CanSeek"] == .boolean(false))
        #expect(all["CanGoNext"] == .boolean(false))
        #expect(all["CanGoPrevious"] == .boolean(false))
        #expect(all["CanControl"] == .boolean(true))
        #expect(all["PlaybackStatus"] == .string("Stopped"))
    }

    @Test func loadedItemWithTargetsCanPlayAndPause() {
        let h = Harness()
        h.start(0, state: .paused)
        let all = h.getAll()
        #expect(all["CanPlay"] == .boolean(true))
        #expect(all["CanPause"] == .boolean(true), "CanPause stays true while paused")
        #expect(all["CanSeek"] == .boolean(true))
        #expect(all["CanGoNext"] == .boolean(true))
        #expect(all["CanGoPrevious"] == .boolean(false), "first item")
        #expect(all["CanControl"] == .boolean(true))
        #expect(all["PlaybackStatus"] == .string("Paused"))
    }

    @Test func canPlayNeedsATarget() {
        let h = Harness { commands in
            commands.playCommand.removeAllTargets()
            commands.pauseCommand.removeAllTargets()
        }
        h.start(0, state: .paused)
        let all = h.getAll()
        #expect(all["CanPlay"] == .boolean(false))
        #expect(all["CanPause"] == .boolean(false))
        #expect(all["CanControl"] == .boolean(true))
    }

    @Test func lastItemCannotGoNext() {
        let h = Harness()
        h.start(2)
        let all = h.getAll()
        #expect(all["CanGoNext"] == .boolean(false))
        #expect(all["CanGoPrevious"] == .boolean(true))
    }

    @Test func middleItemCanGoBothWays() {
        let h = Harness()
        h.start(1)
        let all = h.getAll()
        #expect(all["CanGoNext"] == .boolean(true))
        #expect(all["CanGoPrevious"] == .boolean(true))
    }

    @Test func unknownDurationCannotSeek() {
        let h = Harness(queue: [TestTrack(id: 7, title: "Radio", duration: nil)])
        h.start(0)
        #expect(h.getAll()["CanSeek"] == .boolean(false))
        #expect(h.getAll()["CanPause"] == .boolean(true))
    }

    @Test func liveStreamCannotSeekEvenWithADuration() {
        let h = Harness(queue: [TestTrack(id: 7, title: "Live", duration: .seconds(3600), isLiveStream: true)])
        h.start(0)
        #expect(h.getAll()["CanSeek"] == .boolean(false))
    }

    @Test func canSeekNeedsASeekingCommand() {
        let h = Harness { commands in
            commands.seekCommand.removeAllTargets()
            commands.changePlaybackPositionCommand.removeAllTargets()
        }
        h.start(0)
        #expect(h.getAll()["CanSeek"] == .boolean(false))

        let h2 = Harness { commands in commands.seekCommand.removeAllTargets() }
        h2.start(0)
        #expect(h2.getAll()["CanSeek"] == .boolean(true), "changePlaybackPosition alone is enough")
    }

    @Test(arguments: ["CanPlay", "CanPause", "CanSeek", "CanGoNext"])
    func disablingACommandFlipsExactlyItsFlag(flag: String) {
        let h = Harness()
        h.start(1)
        #expect(h.getAll()[flag] == .boolean(true))

        switch flag {
        case "CanPlay": h.commands.playCommand.isEnabled = false
        case "CanPause": h.commands.pauseCommand.isEnabled = false
        case "CanSeek":
            h.commands.seekCommand.isEnabled = false
            h.commands.changePlaybackPositionCommand.isEnabled = false
        default: h.commands.nextTrackCommand.isEnabled = false
        }
        #expect(h.getAll()[flag] == .boolean(false))

        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.changedInterface == Harness.player)
        #expect(signals.first?.changed == [flag: .boolean(false)])
        #expect(signals.first?.invalidated == [])
    }

    @Test func reEnablingSignalsTheFlagAgain() {
        let h = Harness()
        h.start(0)
        h.commands.previousTrackCommand.isEnabled = true  // the engine would not, but a client might
        #expect(h.flush().first?.changed == ["CanGoPrevious": .boolean(true)])
        h.commands.previousTrackCommand.isEnabled = false
        #expect(h.flush().first?.changed == ["CanGoPrevious": .boolean(false)])
    }

    @Test func removingTheLastTargetSignalsTheFlag() {
        let h = Harness()
        h.start(0)
        h.commands.pauseCommand.removeAllTargets()
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.changed == ["CanPause": .boolean(false)])
    }

    @Test func canControlIsConstantAndNotSignalled() {
        let h = Harness()
        h.commands.removeAllTargets()
        #expect(h.value("CanControl") == .boolean(true))
        let signals = h.flush()
        for signal in signals {
            #expect(signal.changed["CanControl"] == nil)
        }
    }

    @Test func rootCapabilitiesFollowHandlers() {
        let h = Harness()
        let root = h.getAll(Harness.root)
        #expect(root["CanQuit"] == .boolean(false))
        #expect(root["CanRaise"] == .boolean(false))
        #expect(root["HasTrackList"] == .boolean(false))
        #expect(root["Identity"] == .string("Test"))
        #expect(root["SupportedUriSchemes"] == .strings(["file", "http", "https"]))

        let quit = h.server.object.dispatch(interface: Harness.root, member: "Quit", arguments: [])
        #expect(quit.errorName == BusError.Name.notSupported.rawValue)

        var raised = 0
        h.server.raiseHandler = { raised += 1 }
        #expect(h.getAll(Harness.root)["CanRaise"] == .boolean(true))
        #expect(h.server.object.dispatch(interface: Harness.root, member: "Raise", arguments: []).succeeded)
        #expect(raised == 1)
    }
}
