import DBus

/// The values the properties publish, derived from the command center and the info center.
extension MPRISServer {
    var playbackStatus: String {
        switch infoCenter.playbackState {
        case .playing: (infoCenter.nowPlayingInfo?.playbackRate ?? 0) > 0 ? "Playing" : "Paused"
        case .paused: "Paused"
        case .stopped: "Stopped"
        }
    }

    private var hasItem: Bool { infoCenter.nowPlayingInfo != nil }
    var canPlay: Bool { hasItem && commandCenter.playCommand.isActive }
    var canPause: Bool { hasItem && commandCenter.pauseCommand.isActive }
    var canSeek: Bool {
        guard let info = infoCenter.nowPlayingInfo, !info.isLiveStream, info.duration != nil else { return false }
        return commandCenter.canMoveWithinItem
    }
    var canGoNext: Bool { commandCenter.nextTrackCommand.isActive }
    var canGoPrevious: Bool { commandCenter.previousTrackCommand.isActive }

    /// The `mpris:trackid` of the current item.
    var currentTrackID: ObjectPath {
        guard let id = infoCenter.nowPlayingInfo?.queueItemID else { return Self.noTrack }
        return trackID(for: id)
    }

    func trackID(for itemID: UInt64) -> ObjectPath {
        configuration.trackIDPrefix.appending(String(itemID))!
    }

    /// The whole `Metadata` map, with the types clients require; an empty map when nothing
    /// is current, as the MPRIS spec's conformance tool and Mopidy's test suite require.
    var metadata: Value {
        guard let info = infoCenter.nowPlayingInfo else {
            return .stringVariantDictionary([:])
        }
        return metadataValue(info)
    }

    /// The metadata map of an item.
    func metadataValue(_ info: NowPlayingInfo) -> Value {
        var map: [String: Value] = ["mpris:trackid": .objectPath(trackID(for: info.queueItemID))]
        if let duration = info.duration, !info.isLiveStream { map["mpris:length"] = .int64(duration.microseconds) }
        if let title = info.title, !title.isEmpty { map["xesam:title"] = .string(title) }
        let artists = info.artists.filter { !$0.isEmpty }
        if !artists.isEmpty { map["xesam:artist"] = .strings(artists) }
        if let album = info.album, !album.isEmpty { map["xesam:album"] = .string(album) }
        let albumArtists = info.albumArtists.filter { !$0.isEmpty }
        if !albumArtists.isEmpty { map["xesam:albumArtist"] = .strings(albumArtists) }
        let genres = info.genres.filter { !$0.isEmpty }
        if !genres.isEmpty { map["xesam:genre"] = .strings(genres) }
        if let number = info.trackNumber, let n = Int32(exactly: number), n > 0 { map["xesam:trackNumber"] = .int32(n) }
        if let number = info.discNumber, let n = Int32(exactly: number), n > 0 { map["xesam:discNumber"] = .int32(n) }
        if let art = info.artworkURL, !art.isEmpty { map["mpris:artUrl"] = .string(art) }
        if let url = info.assetURL, !url.isEmpty { map["xesam:url"] = .string(url) }
        return .stringVariantDictionary(map)
    }

    var rate: Double {
        let nominal = infoCenter.nowPlayingInfo?.defaultPlaybackRate ?? 1
        return nominal > 0 && nominal.isFinite ? nominal : 1
    }

    static func loopStatus(_ type: RepeatType) -> String {
        switch type {
        case .off: "None"
        case .one: "Track"
        case .all: "Playlist"
        }
    }

    static func repeatType(_ status: String) -> RepeatType? {
        switch status {
        case "None": .off
        case "Track": .one
        case "Playlist": .all
        default: nil
        }
    }
}
