import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Logging
import Media
import NowPlaying
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary

/// Commands to the player: each remote command's handler, and the flags and targets that
/// depend on where the commands lead.
extension Daemon {
    /// Makes `handler` the target of `command`; what depends on where the commands lead is
    /// brought up to date after it runs.
    func handle<Event>(
        _ command: RemoteCommand<Event>, _ handler: @escaping @MainActor (Event) -> RemoteCommandHandlerStatus
    ) {
        command.addTarget { [unowned self] event in
            let status = handler(event)
            syncCommandTarget()
            return status
        }
    }

    /// Makes `handler` the target of `command`, reporting its status through the completion
    /// it is given, now or later; what depends on where the commands lead is brought up to
    /// date when it reports.
    func handle<Event>(
        _ command: RemoteCommand<Event>,
        _ handler:
            @escaping @MainActor (Event, _ completion: @escaping @MainActor (RemoteCommandHandlerStatus) -> Void)
            -> Void
    ) {
        command.addTarget { [unowned self] event, completion in
            handler(event) { [weak self] status in
                self?.syncCommandTarget()
                completion(status)
            }
        }
    }

    /// Binds every remote command to the player.
    func bindCommands() {
        commands.supportedPlaybackRates = player.supportedRates
        handle(commands.playCommand) { [unowned self] _ in
            if player.play() { return .success }
            // Asked to play while the first tracks are still being found (an activation
            // call): they start playing as soon as they are in.
            return loads.askToPlay() ? .success : .noActionableNowPlayingItem
        }
        handle(commands.pauseCommand) { [unowned self] _ in
            player.pause()
            return .success
        }
        handle(commands.togglePlayPauseCommand) { [unowned self] _ in
            if player.count == 0 { _ = loads.askToPlay(toggle: true) }
            player.togglePlayPause()
            return .success
        }
        handle(commands.stopCommand) { [unowned self] _ in
            player.stop()
            return .success
        }
        handle(commands.nextTrackCommand) { [unowned self] _ in
            player.next()
            return .success
        }
        handle(commands.previousTrackCommand) { [unowned self] _ in
            player.previous()
            return .success
        }
        handle(commands.changePlaybackPositionCommand) { [unowned self] event in
            player.seek(to: event.positionTime) ? .success : .commandFailed(reason: "the track cannot seek now")
        }
        handle(commands.seekCommand) { [unowned self] event in
            player.seek(to: event.position) ? .success : .commandFailed(reason: "the track cannot seek now")
        }
        handle(commands.changePlaybackRateCommand) { [unowned self] event in
            player.setRate(event.playbackRate)
            return .success
        }
        handle(commands.changeVolumeCommand) { [unowned self] event in
            player.setVolume(event.volume)
            return .success
        }
        handle(commands.changeRepeatModeCommand) { [unowned self] event in
            player.setRepeatMode(Player.RepeatMode(event.repeatType))
            return .success
        }
        handle(commands.changeShuffleModeCommand) { [unowned self] event in
            player.setShuffle(event.shuffleType != .off)
            return .success
        }
        handle(commands.openURICommand) { [unowned self] event, completion in
            // A folder or playlist is queued after the current track as it is read, the
            // first of it playing at once.
            take(event.uri, answer: completion) { [unowned self] items in
                player.open(items) ? .success : .noSuchContent
            } placeFirst: { [unowned self] items in
                guard player.open(items), let first = player.currentIndex else { return nil }
                return Array(player.entries[first..<(first + items.count)])
            }
        }
        bindTrackListCommands()
    }

    /// Sets what depends on where the commands received so far lead, ahead of what is
    /// published: Next, Previous and seeking are enabled from the selected entry, and while
    /// the player settles, the info center's pending item is where Seek and SetPosition
    /// apply. Runs after every command, so that a second command in the same turn of the
    /// main queue follows the first.
    func syncCommandTarget() {
        commands.nextTrackCommand.isEnabled = player.canGoNext
        commands.previousTrackCommand.isEnabled = player.canGoPrevious
        let entry = player.selectedEntry.flatMap { $0.failure == nil ? $0 : nil }
        let seekable =
            player.requestedStatus != .stopped
            && (entry?.info.map { $0.isSeekable && !$0.isLive && $0.duration != nil } ?? false)
        commands.changePlaybackPositionCommand.isEnabled = seekable
        commands.seekCommand.isEnabled = seekable
        info.pendingItem =
            player.isSettling
            ? entry.map {
                PendingItem(
                    queueItemID: $0.id, duration: $0.info?.duration, elapsedPlaybackTime: player.requestedPosition)
            } : nil
    }
}
