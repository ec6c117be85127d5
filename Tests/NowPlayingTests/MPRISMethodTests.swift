import DBus
import Testing

@testable import NowPlaying

// MARK: - Rate

@MainActor
@Suite struct MPRISRateTests {
    func harness() -> Harness {
        let h = Harness()
        h.commands.supportedPlaybackRates = 0.5...2.0
        h.start(0)
        return h
    }

    @Test func rateZeroMeansPause() {
        let h = harness()
        #expect(h.set("Rate", .double(0)) == .success([]))
        #expect(h.engine.events == [.pause])
        #expect(h.value("PlaybackStatus") == .string("Paused"))
        #expect(h.value("Rate") == .double(1), "Rate is never 0")
    }

    @Test func rateZeroWithPauseDisabledIsANoOp() {
        let h = harness()
        h.commands.pauseCommand.isEnabled = false
        #expect(h.set("Rate", .double(0)) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test(arguments: [3.0, 0.25, -1.0, 2.000001])
    func rateOutsideSupportedRangeIsInvalid(rate: Double) {
        let h = harness()
        let result = h.set("Rate", .double(rate))
        #expect(result.errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteRateIsInvalid(rate: Double) {
        let h = harness()
        #expect(h.set("Rate", .double(rate)).errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test func rateOfWrongTypeIsInvalid() {
        let h = harness()
        #expect(h.set("Rate", .int32(1)).errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test func validRateReachesTheCommand() {
        let h = harness()
        #expect(h.set("Rate", .double(1.5)) == .success([]))
        #expect(h.engine.events == [.changePlaybackRate(1.5)])
        #expect(h.value("Rate") == .double(1.5))
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.changed == ["Rate": .double(1.5)])

        #expect(h.set("Rate", .double(0.5)) == .success([]), "the bounds are included")
        #expect(h.set("Rate", .double(2.0)) == .success([]))
    }

    @Test func pausedPlayerShowsItsNominalRate() {
        let h = harness()
        _ = h.set("Rate", .double(1.5))
        _ = h.call("Pause")
        #expect(h.info.nowPlayingInfo?.playbackRate == 0)
        #expect(h.value("Rate") == .double(1.5))
        #expect(h.getAll()["Rate"] == .double(1.5))
    }

    @Test func rateNeverZeroEvenForBadInfo() {
        let h = Harness()
        var info = NowPlayingInfo(queueItemID: 1)
        info.defaultPlaybackRate = 0
        h.info.nowPlayingInfo = info
        #expect(h.value("Rate") == .double(1))
        info.defaultPlaybackRate = .nan
        h.info.nowPlayingInfo = info
        #expect(h.value("Rate") == .double(1))
        h.info.nowPlayingInfo = nil
        #expect(h.value("Rate") == .double(1))
    }

    @Test func minimumAndMaximumRateFollowSupportedRates() {
        let fixed = Harness()
        #expect(fixed.value("MinimumRate") == .double(1))
        #expect(fixed.value("MaximumRate") == .double(1))
        #expect(fixed.set("Rate", .double(1.5)).errorName == invalidArgs)

        fixed.commands.supportedPlaybackRates = 0.25...4
        #expect(fixed.value("MinimumRate") == .double(0.25))
        #expect(fixed.value("MaximumRate") == .double(4))
        let signals = fixed.flush()
        #expect(signals.first?.changed == ["MinimumRate": .double(0.25), "MaximumRate": .double(4)])
    }
}

// MARK: - SetPosition and Seek

@MainActor
@Suite struct MPRISPositionMethodTests {
    @Test func setPositionWithStaleTrackIDIsIgnored() {
        let h = Harness()
        h.start(1, at: .seconds(10), state: .paused)
        #expect(h.call("SetPosition", [h.trackID(101), .int64(5_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [.objectPath(MPRISServer.noTrack), .int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [])
        #expect(h.flush().isEmpty)
    }

    @Test func setPositionWithNoItemIsIgnored() {
        let h = Harness()
        #expect(h.call("SetPosition", [.objectPath(MPRISServer.noTrack), .int64(0)]) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test func setPositionOutsideTheTrackIsIgnored() {
        let h = Harness()
        h.start(0, state: .paused)  // 200 s long
        #expect(h.call("SetPosition", [h.trackID(101), .int64(-1)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(101), .int64(200_000_001)]) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test func setPositionReachesTheCommandWithTheExactDuration() {
        let h = Harness()
        h.start(0, state: .paused)
        #expect(h.call("SetPosition", [h.trackID(101), .int64(42_500_001)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.microseconds(42_500_001))])
        #expect(h.position == 42_500_001)

        h.engine.clearEvents()
        #expect(
            h.call("SetPosition", [h.trackID(101), .int64(200_000_000)]) == .success([]), "the end itself is inside")
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(200))])
    }

    @Test func setPositionOnUnseekableItemIsIgnored() {
        let h = Harness(queue: [TestTrack(id: 9, title: "Live", duration: .seconds(100), isLiveStream: true)])
        h.start(0)
        #expect(h.call("SetPosition", [h.trackID(9), .int64(1_000_000)]) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test func setPositionWithWrongSignatureIsInvalid() {
        let h = Harness()
        h.start(0)
        #expect(h.call("SetPosition", [.string("/test/track/101"), .int64(0)]).errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test func seekIsRelativeToTheCurrentPosition() {
        let h = Harness()
        h.start(0, at: .seconds(10))
        h.clock.advance(by: .seconds(4))  // now at 14 s
        #expect(h.call("Seek", [.int64(1_000_000)]) == .success([]))
        #expect(h.engine.events == [.seek(offset: .seconds(1), position: .seconds(15))])
        #expect(h.position == 15_000_000)
    }

    @Test func seekBackwardsClampsAtZero() {
        let h = Harness()
        h.start(0, at: .seconds(10), state: .paused)
        #expect(h.call("Seek", [.int64(-60_000_000)]) == .success([]))
        #expect(h.engine.events == [.seek(offset: .seconds(-60), position: .zero)])
        #expect(h.position == 0)
    }

    @Test func seekPastTheEndActsAsNext() {
        let h = Harness()
        h.start(0, at: .seconds(190))
        #expect(h.call("Seek", [.int64(30_000_000)]) == .success([]))
        #expect(h.engine.events == [.nextTrack])
        #expect(h.metadata["mpris:trackid"] == h.trackID(102))
    }

    @Test func seekPastTheEndOfTheLastItemStops() {
        let h = Harness()
        h.start(2, at: .seconds(230))
        #expect(h.call("Seek", [.int64(30_000_000)]) == .success([]))
        #expect(h.engine.events == [.stop])
        #expect(h.value("PlaybackStatus") == .string("Stopped"))
    }

    @Test func seekFallsBackToChangePlaybackPosition() {
        let h = Harness { commands in commands.seekCommand.removeAllTargets() }
        h.start(0, at: .seconds(10), state: .paused)
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(15))])
    }

    @Test func seekOnUnseekableItemIsIgnored() {
        let h = Harness(queue: [TestTrack(id: 9, title: "Radio", duration: nil)])
        h.start(0)
        #expect(h.call("Seek", [.int64(5_000_000)]) == .success([]))
        #expect(h.engine.events == [])
    }
}

// MARK: - Volume, LoopStatus, Shuffle, OpenUri

@MainActor
@Suite struct MPRISPropertyTests {
    @Test func negativeVolumeClampsToZero() {
        let h = Harness()
        #expect(h.set("Volume", .double(-0.5)) == .success([]))
        #expect(h.engine.events == [.changeVolume(0)])
        #expect(h.value("Volume") == .double(0))
    }

    @Test func volumeReachesTheCommand() {
        let h = Harness()
        #expect(h.set("Volume", .double(0.3)) == .success([]))
        #expect(h.engine.events == [.changeVolume(0.3)])
        #expect(h.value("Volume") == .double(0.3))
        #expect(h.flush().first?.changed == ["Volume": .double(0.3)])
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteVolumeIsInvalid(volume: Double) {
        let h = Harness()
        #expect(h.set("Volume", .double(volume)).errorName == invalidArgs)
        #expect(h.engine.events == [])
        #expect(h.value("Volume") == .double(1))
    }

    @Test func loopStatusAndShuffleExistOnlyWithTargets() {
        let h = Harness { commands in
            commands.changeRepeatModeCommand.removeAllTargets()
            commands.changeShuffleModeCommand.removeAllTargets()
        }
        let all = h.getAll()
        #expect(all["LoopStatus"] == nil)
        #expect(all["Shuffle"] == nil)
        #expect(h.getResult("LoopStatus").errorName == BusError.Name.unknownProperty.rawValue)
        #expect(h.set("Shuffle", .boolean(true)).errorName == BusError.Name.unknownProperty.rawValue)
        #expect(!h.server.object.introspectionXML().contains("LoopStatus"))

        let full = Harness()
        #expect(full.getAll()["LoopStatus"] == .string("None"))
        #expect(full.getAll()["Shuffle"] == .boolean(false))
        #expect(full.server.object.introspectionXML().contains("\"LoopStatus\""))
    }

    @Test func volumeAboveOneClampsToOne() {
        let h = Harness()
        #expect(h.set("Volume", .double(1.5)) == .success([]))
        #expect(h.engine.events == [.changeVolume(1)])
    }

    /// The property list follows `hasTargets`, but the server only rebuilds it when the
    /// command center notifies, and a command notifies on target changes only when
    /// `isActive` flips. A target added to (or removed from) a disabled command changes
    /// `hasTargets` without flipping `isActive`, so LoopStatus stays absent (or present).
    @Test func optionalPropertiesFollowTargetsOfDisabledCommands() {
        let h = Harness { commands in commands.changeRepeatModeCommand.removeAllTargets() }
        h.commands.changeRepeatModeCommand.isEnabled = false  // e.g. nothing to repeat yet
        let token = h.commands.changeRepeatModeCommand.addTarget { _ in .success }
        #expect(h.commands.changeRepeatModeCommand.hasTargets)
        #expect(h.getAll()["LoopStatus"] == .string("None"), "the player can loop: LoopStatus is published")
        #expect(h.flush().first?.changed["LoopStatus"] == .string("None"))

        let h2 = Harness()
        h2.commands.changeShuffleModeCommand.isEnabled = false
        h2.commands.changeShuffleModeCommand.removeAllTargets()
        #expect(!h2.commands.changeShuffleModeCommand.hasTargets)
        #expect(h2.getAll()["Shuffle"] == nil, "no handler any more: Shuffle is withdrawn")
        _ = token
    }

    @Test func optionalPropertiesDisappearWithTheirTargets() {
        let h = Harness()
        h.commands.changeShuffleModeCommand.removeAllTargets()
        #expect(h.getAll()["Shuffle"] == nil)
        #expect(h.getAll()["LoopStatus"] != nil)
    }

    @Test(arguments: [("None", RepeatType.off), ("Track", .one), ("Playlist", .all)])
    func loopStatusReachesTheCommand(text: String, type: RepeatType) {
        let h = Harness()
        if type == .off { h.commands.currentRepeatType = .all }
        #expect(h.set("LoopStatus", .string(text)) == .success([]))
        #expect(h.engine.events == [.changeRepeatMode(type)])
        #expect(h.value("LoopStatus") == .string(text))
    }

    @Test(arguments: ["none", "Bogus", ""])
    func invalidLoopStatusIsInvalid(text: String) {
        let h = Harness()
        #expect(h.set("LoopStatus", .string(text)).errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test func loopStatusPlaylistEnablesNextOnTheLastItem() {
        let h = Harness()
        h.start(2)
        #expect(h.value("CanGoNext") == .boolean(false))
        _ = h.set("LoopStatus", .string("Playlist"))
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.changed == ["LoopStatus": .string("Playlist"), "CanGoNext": .boolean(true)])
    }

    @Test func shuffleReachesTheCommand() {
        let h = Harness()
        #expect(h.set("Shuffle", .boolean(true)) == .success([]))
        #expect(h.value("Shuffle") == .boolean(true))
        #expect(h.set("Shuffle", .boolean(false)) == .success([]))
        #expect(h.engine.events == [.changeShuffleMode(.items), .changeShuffleMode(.off)])
        #expect(h.set("Shuffle", .string("yes")).errorName == invalidArgs)
    }

    @Test(arguments: ["ftp://example.com/a.mp3", "smb://host/share/a.flac", "no-scheme-at-all", "/music/a.flac", ""])
    func openUriWithUnsupportedSchemeIsInvalid(uri: String) {
        let h = Harness()
        #expect(h.call("OpenUri", [.string(uri)]).errorName == invalidArgs)
        #expect(h.engine.events == [])
    }

    @Test(arguments: ["file:///music/a.flac", "https://radio.example/stream", "HTTP://radio.example/x"])
    func openUriWithSupportedSchemeReachesTheCommand(uri: String) {
        let h = Harness()
        #expect(h.call("OpenUri", [.string(uri)]) == .success([]))
        #expect(h.engine.events == [.openURI(uri)])
        #expect(h.value("PlaybackStatus") == .string("Playing"))
    }

    @Test("OpenUri takes a URI of up to 8 KiB and refuses a longer one with InvalidArgs")
    func openUriLongerThanTheLimitIsInvalid() {
        let h = Harness()
        let longest = "file:///" + String(repeating: "a", count: MPRISServer.maximumURILength - "file:///".utf8.count)
        #expect(h.call("OpenUri", [.string(longest + "a")]).errorName == invalidArgs)
        #expect(
            h.call("OpenUri", [.string("https://example.com/" + String(repeating: "x", count: 1 << 20))]).errorName
                == invalidArgs)
        #expect(h.engine.events == [])
        #expect(h.call("OpenUri", [.string(longest)]) == .success([]))
        #expect(h.engine.events == [.openURI(longest)])
    }

    @Test func readOnlyPropertyCannotBeSet() {
        let h = Harness()
        #expect(h.set("PlaybackStatus", .string("Playing")).errorName == BusError.Name.propertyReadOnly.rawValue)
        #expect(h.set("Position", .int64(0)).errorName == BusError.Name.propertyReadOnly.rawValue)
    }
}

// MARK: - Transport, disabled commands and handler statuses

@MainActor
@Suite struct MPRISCommandTests {
    @Test func transportMethodsReachTheirCommands() {
        let h = Harness()
        h.start(1, state: .paused)
        for member in ["Play", "Pause", "Next", "Previous", "Stop"] {
            #expect(h.call(member) == .success([]), "\(member)")
        }
        #expect(h.engine.events == [.play, .pause, .nextTrack, .previousTrack, .stop])
    }

    @Test func playPauseUsesToggleWhenActive() {
        let h = Harness()
        h.start(0)
        #expect(h.call("PlayPause") == .success([]))
        #expect(h.engine.events == [.togglePlayPause])
        #expect(h.value("PlaybackStatus") == .string("Paused"))
    }

    @Test func playPauseFallsBackToPlayOrPause() {
        let h = Harness { commands in commands.togglePlayPauseCommand.removeAllTargets() }
        h.start(0)
        _ = h.call("PlayPause")
        _ = h.call("PlayPause")
        #expect(h.engine.events == [.pause, .play])
    }

    @Test(arguments: ["Play", "Pause", "PlayPause", "Stop", "Next", "Previous"])
    func disabledCommandIsANoOpThatSucceeds(member: String) {
        let h = Harness()
        h.start(1, state: .paused)
        let commands = [
            h.commands.playCommand, h.commands.pauseCommand, h.commands.togglePlayPauseCommand,
            h.commands.stopCommand, h.commands.nextTrackCommand, h.commands.previousTrackCommand,
        ]
        for command in commands { command.isEnabled = false }
        h.settle()

        #expect(h.call(member) == .success([]))
        #expect(h.engine.events == [])
        #expect(h.flush().isEmpty)
    }

    @Test func disabledSeekingAndSettingsAreNoOpsThatSucceed() {
        let h = Harness()
        h.commands.supportedPlaybackRates = 0.5...2
        h.start(0, state: .paused)
        h.commands.changePlaybackRateCommand.isEnabled = false
        h.commands.changeVolumeCommand.isEnabled = false
        h.commands.changeRepeatModeCommand.isEnabled = false
        h.commands.changeShuffleModeCommand.isEnabled = false
        h.commands.openURICommand.isEnabled = false
        #expect(h.set("Rate", .double(1.5)) == .success([]))
        #expect(h.set("Volume", .double(0.5)) == .success([]))
        #expect(h.set("LoopStatus", .string("Track")) == .success([]))
        #expect(h.set("Shuffle", .boolean(true)) == .success([]))
        #expect(h.call("OpenUri", [.string("file:///a.flac")]) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test func commandsWithoutTargetsAreNoOpsThatSucceed() {
        let h = Harness()
        h.start(0)
        h.commands.removeAllTargets()
        for member in ["Play", "Pause", "PlayPause", "Stop", "Next", "Previous"] {
            #expect(h.call(member) == .success([]), "\(member)")
        }
        #expect(h.call("Seek", [.int64(1_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(101), .int64(1_000_000)]) == .success([]))
        #expect(h.engine.events == [])
    }

    @Test func noSuchContentMapsToNamespacedError() {
        let h = Harness()
        h.start(0, state: .paused)
        h.engine.statuses["play"] = .noSuchContent
        let result = h.call("Play")
        #expect(result.errorName == "org.mpris.MediaPlayer2.test.Error.NoSuchContent")
        #expect(h.server.configuration.errorNamespace == "org.mpris.MediaPlayer2.test.Error")
        #expect(h.engine.events == [.play], "the handler was called")
    }

    @Test func commandFailedCarriesTheReason() {
        let h = Harness()
        h.start(0)
        h.engine.statuses["nextTrack"] = .commandFailed(reason: "the disk is on fire")
        let result = h.call("Next")
        #expect(result.errorName == "org.mpris.MediaPlayer2.test.Error.CommandFailed")
        #expect(result.errorMessage?.contains("the disk is on fire") == true)
    }

    @Test func noActionableItemMapsToNamespacedError() {
        let h = Harness()
        h.start(0)
        h.engine.statuses["changeVolume"] = .noActionableNowPlayingItem
        #expect(
            h.set("Volume", .double(0.5)).errorName == "org.mpris.MediaPlayer2.test.Error.NoActionableNowPlayingItem")
    }

    @Test func statusesFromPropertySettersAndSeeksMapToo() {
        let h = Harness()
        h.start(0, at: .seconds(10), state: .paused)
        h.engine.statuses["seek"] = .commandFailed(reason: "busy")
        h.engine.statuses["changePlaybackPosition"] = .noSuchContent
        h.engine.statuses["changeRepeatMode"] = .commandFailed(reason: "nope")
        #expect(h.call("Seek", [.int64(1_000_000)]).errorName == "org.mpris.MediaPlayer2.test.Error.CommandFailed")
        #expect(
            h.call("SetPosition", [h.trackID(101), .int64(1_000_000)]).errorName
                == "org.mpris.MediaPlayer2.test.Error.NoSuchContent")
        let loop = h.set("LoopStatus", .string("Track"))
        #expect(loop.errorName == "org.mpris.MediaPlayer2.test.Error.CommandFailed")
        #expect(loop.errorMessage?.contains("nope") == true)
    }

    /// `my-player` is a valid bus-name element (hyphens are allowed there), so
    /// `org.mpris.MediaPlayer2.my-player` is a valid bus name. The default error namespace
    /// pastes it in unchanged, but error names follow the interface-name rules (no hyphen),
    /// so `BusError.Name` replaces every status error by `org.freedesktop.DBus.Error.Failed`.
    @Test func errorNamespaceIsValidForEveryValidBusName() {
        let configuration = MPRISServer.Configuration(playerName: "my-player", identity: "X")
        #expect(NameValidation.isValidErrorName(configuration.errorNamespace + ".NoSuchContent"))

        let h = Harness(configuration: configuration)
        h.start(0, state: .paused)
        h.engine.statuses["play"] = .noSuchContent
        let name = h.call("Play").errorName
        #expect(name != BusError.Name.failed.rawValue)
        #expect(name?.hasSuffix(".Error.NoSuchContent") == true)
    }

    @Test func unknownMethodAndWrongArgumentsAreErrors() {
        let h = Harness()
        #expect(h.call("Rewind").errorName == BusError.Name.unknownMethod.rawValue)
        #expect(h.call("Seek", [.int32(5)]).errorName == invalidArgs)
        #expect(h.call("Seek").errorName == invalidArgs)
    }
}
