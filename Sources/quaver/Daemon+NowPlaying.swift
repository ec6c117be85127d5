import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Media
import NowPlaying
import PlaybackEngine
import PlaybackPlayer

/// The player's state as now-playing info: what clients are shown of the current entry.
extension Daemon {
    /// Copies the player's settled state into the command center and info center. The
    /// elapsed time is republished only at transport moments (play, pause, seek, rate,
    /// track change), as Apple's model asks; clients extrapolate in between.
    func syncNowPlaying(republishTiming: Bool) {
        commands.playCommand.isEnabled = player.count > 0 || loads.isLoading
        commands.pauseCommand.isEnabled = player.current != nil
        commands.togglePlayPauseCommand.isEnabled = player.current != nil
        commands.stopCommand.isEnabled = player.current != nil
        syncCommandTarget()
        commands.currentRepeatType = RepeatType(player.repeatMode)
        commands.currentShuffleType = player.shuffle ? .items : .off
        info.volume = player.volume

        guard let entry = player.current else {
            info.nowPlayingInfo = nil
            info.playbackState = .stopped
            return
        }
        // Start from the published info of the same entry so that the timing fields are
        // assigned (and so restamped) only at transport moments.
        let published = info.nowPlayingInfo.flatMap { $0.queueItemID == entry.id ? $0 : nil }
        let sameItem = published != nil
        var now = published ?? NowPlayingInfo(queueItemID: entry.id)
        Self.describe(entry, in: &now, artwork: artwork)
        // An image shown anew becomes the one the cache trims last (gone meanwhile: left out).
        if let url = now.artworkURL, url != published?.artworkURL, !artwork.markUsed(url) { now.artworkURL = nil }
        lookForArtworkAgainIfNeeded(entry, published: now)
        // An output slower than real time moves the audio slower than the rate asked for: the
        // rate clients extrapolate with (MPRIS Rate among them) is the one it really moves at,
        // so that they follow it without a correction every second; Rate within the range
        // the MPRIS spec binds it to.
        let rates = player.supportedRates
        now.defaultPlaybackRate = min(max(player.effectiveRate, rates.lowerBound), rates.upperBound)
        // Waiting for audio that does not move is Apple's rate 0 (MPRIS shows it as Paused).
        let rate = player.status == .playing && !player.isWaitingForAudio ? player.effectiveRate : 0
        if republishTiming || !sameItem || now.playbackRate != rate {
            now.playbackRate = rate
            now.elapsedPlaybackTime =
                player.status == .stopped ? .zero : (player.position ?? (sameItem ? now.elapsedPlaybackTime : .zero))
        }
        info.nowPlayingInfo = now
        info.playbackState = PlaybackState(rawValue: player.status.rawValue) ?? .stopped
    }

    /// A local track shown without artwork although its cached image went since its tags
    /// were read (or they were read without looking for it): its artwork is looked for once
    /// more, and comes in one later update. A result for a track no longer current is dropped.
    func lookForArtworkAgainIfNeeded(_ entry: Player.Entry, published: NowPlayingInfo) {
        guard published.artworkURL == nil, let info = entry.info, info.artworkURL != nil || !info.artworkSearched,
            entry.uri.hasPrefix("file:"), artworkLookedForAgain != entry.id
        else { return }
        artworkLookedForAgain = entry.id
        let id = entry.id
        artworkReader.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            guard player.current?.id == id else {
                logger.debug(
                    "dropping the artwork of \(MediaSources.displayName(entry.uri)): no longer the current track")
                return
            }
            guard case .success(let read) = result else { return }
            player.setArtworkURL(read.artworkURL, forEntry: id)
        }
    }

    /// What an entry's tags and its playlist's title (or, before they are read, its file
    /// name) say of it. Artwork is named only while its cached image exists.
    static func describe(_ entry: Player.Entry, in now: inout NowPlayingInfo, artwork: ArtworkCache) {
        let track = entry.shownInfo ?? TrackInfo()
        now.title = track.title ?? fileTitle(entry.uri)
        now.artists = track.artists
        now.album = track.album
        now.albumArtists = track.albumArtists
        now.genres = track.genres
        now.trackNumber = track.trackNumber
        now.discNumber = track.discNumber
        now.duration = track.duration
        now.isLiveStream = track.isLive
        // Every client on the bus reads Metadata (sandboxed ones too): a URL's credentials
        // stay in the queue, where playing needs them.
        now.assetURL = MediaSources.redactingCredentials(in: entry.uri)
        now.artworkURL = track.artworkURL.flatMap { artwork.contains($0) ? $0 : nil }
    }

    static func fileTitle(_ uri: String) -> String? {
        guard let url = URL(string: uri) else { return nil }
        let name = url.deletingPathExtension().lastPathComponent
        return name.isEmpty || name == "/" ? nil : name
    }
}
