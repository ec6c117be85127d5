import Testing

@testable import NowPlaying

@MainActor
@Suite struct RemoteCommandTests {
    @Test func activeNeedsTargetAndEnabled() {
        let center = RemoteCommandCenter()
        let command = center.playCommand
        #expect(command.isEnabled)
        #expect(!command.hasTargets)
        #expect(!command.isActive, "enabled but no target")

        command.addTarget { _ in .success }
        #expect(command.hasTargets)
        #expect(command.isActive)

        command.isEnabled = false
        #expect(command.hasTargets)
        #expect(!command.isActive, "target but disabled")

        command.isEnabled = true
        #expect(command.isActive)
    }

    @Test func performReturnsNilAndSkipsHandlerWhenInactive() {
        let center = RemoteCommandCenter()
        var calls = 0
        #expect(center.stopCommand.perform(RemoteCommandEvent()) == nil, "no target")

        center.stopCommand.addTarget { _ in
            calls += 1
            return .success
        }
        center.stopCommand.isEnabled = false
        #expect(center.stopCommand.perform(RemoteCommandEvent()) == nil)
        #expect(calls == 0)

        center.stopCommand.isEnabled = true
        #expect(center.stopCommand.perform(RemoteCommandEvent()) == .success)
        #expect(calls == 1)
    }

    @Test func performRunsEveryTargetInOrderAndReturnsTheFirstFailure() {
        let center = RemoteCommandCenter()
        var log: [String] = []
        center.nextTrackCommand.addTarget { _ in
            log.append("a")
            return .success
        }
        center.nextTrackCommand.addTarget { _ in
            log.append("b")
            return .noSuchContent
        }
        center.nextTrackCommand.addTarget { _ in
            log.append("c")
            return .commandFailed(reason: "later")
        }
        let status = center.nextTrackCommand.perform(RemoteCommandEvent())
        #expect(status == .noSuchContent, "the first status that is not success")
        #expect(log == ["a", "b", "c"])
    }

    @Test func removeTargetStopsCalls() {
        let center = RemoteCommandCenter()
        var first = 0
        var second = 0
        let token = center.nextTrackCommand.addTarget { _ in
            first += 1
            return .success
        }
        center.nextTrackCommand.addTarget { _ in
            second += 1
            return .success
        }
        _ = center.nextTrackCommand.perform(RemoteCommandEvent())
        center.nextTrackCommand.removeTarget(token)
        _ = center.nextTrackCommand.perform(RemoteCommandEvent())
        #expect(first == 1)
        #expect(second == 2)
        #expect(center.nextTrackCommand.isActive)

        // Removing a token twice, or one from another command, changes nothing.
        center.nextTrackCommand.removeTarget(token)
        let foreign = center.playCommand.addTarget { _ in .success }
        center.nextTrackCommand.removeTarget(foreign)
        #expect(center.nextTrackCommand.isActive)
        #expect(center.playCommand.isActive)
    }

    @Test func lastTargetRemovedMakesCommandInactive() {
        let center = RemoteCommandCenter()
        var calls = 0
        let token = center.pauseCommand.addTarget { _ in
            calls += 1
            return .success
        }
        center.pauseCommand.removeTarget(token)
        #expect(!center.pauseCommand.isActive)
        #expect(center.pauseCommand.perform(RemoteCommandEvent()) == nil)
        #expect(calls == 0)
    }

    @Test func observeFiresOnTargetAndEnabledChanges() {
        let center = RemoteCommandCenter()
        var notifications = 0
        center.observe { notifications += 1 }

        let token = center.playCommand.addTarget { _ in .success }
        #expect(notifications == 1, "first target added")

        center.playCommand.isEnabled = false
        #expect(notifications == 2, "isEnabled flipped to false")
        center.playCommand.isEnabled = false
        #expect(notifications == 2, "same value: no notification")
        center.playCommand.isEnabled = true
        #expect(notifications == 3, "isEnabled flipped back")
        center.playCommand.isEnabled = true
        #expect(notifications == 3)

        center.playCommand.removeTarget(token)
        #expect(notifications == 4, "last target removed")
    }

    @Test func observeFiresForEveryCommandAndForCenterState() {
        let center = RemoteCommandCenter()
        var notifications = 0
        center.observe { notifications += 1 }
        center.openURICommand.addTarget { _ in .success }
        center.changeShuffleModeCommand.addTarget { _ in .success }
        #expect(notifications == 2)

        center.currentRepeatType = .all
        #expect(notifications == 3)
        center.currentRepeatType = .all
        #expect(notifications == 3)
        center.currentShuffleType = .items
        #expect(notifications == 4)
        center.supportedPlaybackRates = 0.5...2.0
        #expect(notifications == 5)
        center.supportedPlaybackRates = 0.5...2.0
        #expect(notifications == 5)
    }

    @Test func removeAllTargetsOnCenterDeactivatesEverything() {
        let center = RemoteCommandCenter()
        var calls = 0
        let handler: @MainActor (RemoteCommandEvent) -> RemoteCommandHandlerStatus = { _ in
            calls += 1
            return .success
        }
        for command in [
            center.playCommand, center.pauseCommand, center.togglePlayPauseCommand,
            center.stopCommand, center.nextTrackCommand, center.previousTrackCommand,
        ] {
            command.addTarget(handler: handler)
        }
        center.changePlaybackPositionCommand.addTarget { _ in .success }
        center.seekCommand.addTarget { _ in .success }
        center.changePlaybackRateCommand.addTarget { _ in .success }
        center.changeRepeatModeCommand.addTarget { _ in .success }
        center.changeShuffleModeCommand.addTarget { _ in .success }
        center.changeVolumeCommand.addTarget { _ in .success }
        center.openURICommand.addTarget { _ in .success }

        var notifications = 0
        center.observe { notifications += 1 }
        center.removeAllTargets()

        #expect(notifications == 13, "one per command that became inactive")
        #expect(!center.playCommand.hasTargets)
        #expect(!center.pauseCommand.hasTargets)
        #expect(!center.togglePlayPauseCommand.hasTargets)
        #expect(!center.stopCommand.hasTargets)
        #expect(!center.nextTrackCommand.hasTargets)
        #expect(!center.previousTrackCommand.hasTargets)
        #expect(!center.changePlaybackPositionCommand.hasTargets)
        #expect(!center.seekCommand.hasTargets)
        #expect(!center.changePlaybackRateCommand.hasTargets)
        #expect(!center.changeRepeatModeCommand.hasTargets)
        #expect(!center.changeShuffleModeCommand.hasTargets)
        #expect(!center.changeVolumeCommand.hasTargets)
        #expect(!center.openURICommand.hasTargets)
        #expect(center.playCommand.perform(RemoteCommandEvent()) == nil)
        #expect(calls == 0)
    }

    @Test func removeAllTargetsOnOneCommand() {
        let center = RemoteCommandCenter()
        var calls = 0
        center.previousTrackCommand.addTarget { _ in
            calls += 1
            return .success
        }
        center.previousTrackCommand.addTarget { _ in
            calls += 1
            return .success
        }
        center.previousTrackCommand.removeAllTargets()
        #expect(!center.previousTrackCommand.isActive)
        #expect(center.previousTrackCommand.perform(RemoteCommandEvent()) == nil)
        #expect(calls == 0)
    }

    @Test func eventsArriveAsAnAsyncSequenceWhileItIsIterated() async {
        let center = RemoteCommandCenter()
        let command = center.changePlaybackRateCommand
        #expect(!command.isActive)
        let task = Task { @MainActor in
            var received: [Double] = []
            for await event in command.events() {
                received.append(event.playbackRate)
                if received.count == 2 { break }
            }
            return received
        }
        for _ in 0..<100 where !command.hasTargets { await Task.yield() }
        #expect(command.isActive, "the sequence is a target while it is iterated")
        #expect(command.perform(ChangePlaybackRateCommandEvent(playbackRate: 1.5)) == .success)
        #expect(command.perform(ChangePlaybackRateCommandEvent(playbackRate: 0.5)) == .success)
        #expect(await task.value == [1.5, 0.5])
        // The loop ended and the sequence went: so did its target.
        for _ in 0..<100 where command.hasTargets { await Task.yield() }
        #expect(!command.hasTargets)
    }

    @Test func commandsHaveTheirNames() {
        let center = RemoteCommandCenter()
        #expect(center.playCommand.name == "play")
        #expect(center.nextTrackCommand.name == "nextTrack")
        #expect(center.changePlaybackPositionCommand.name == "changePlaybackPosition")
        #expect(center.openURICommand.name == "openURI")
    }
}
