import DBus
import Dispatch

/// Publishing: every change of one main-queue turn leaves in one `PropertiesChanged` per
/// interface, then `Seeked` when the position jumped, then the track list's and the
/// playlists' signals.
extension MPRISServer {
    /// The `Can*` flags published with the change that settles a pending item.
    private static let flagsHeldWhilePending = ["CanGoNext", "CanGoPrevious", "CanSeek", "CanPlay", "CanPause"]

    /// The position as published: where it was at `instant` and how fast it moves, from
    /// which the next publication tells a jump from ordinary progress.
    struct Timing {
        var itemID: UInt64?
        var isStopped: Bool
        var elapsed: Duration
        var rate: Double
        var instant: ContinuousClock.Instant
        var duration: Duration?
        func predicted(at now: ContinuousClock.Instant) -> Duration {
            var position = elapsed + (now - instant) * rate
            if let duration, position > duration { position = duration }
            return position
        }
    }

    /// Schedules one publication at the end of the current main-queue turn, so that all
    /// changes of one transition leave in one signal.
    public func setNeedsPublish() {
        if optionalMembers != exportedOptionalMembers {
            object.replaceInterfaces(makeInterfaces())
        }
        guard !publishScheduled else { return }
        publishScheduled = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.publishNow() }
        }
    }

    /// The queue changed: its window is compared with what clients know at the next
    /// publication. `replaced` says the queue was replaced as a whole (a playlist
    /// activated), which goes out as `TrackListReplaced` whatever the window looks like.
    public func trackListDidChange(replaced: Bool = false) {
        if replaced { trackListReplaced = true }
        setNeedsPublish()
    }

    /// What is known of a queued item changed (its tags were read): `TrackMetadataChanged`
    /// goes out at the next publication.
    public func trackMetadataDidChange(_ itemID: UInt64) {
        changedTrackMetadata.append(itemID)
        setNeedsPublish()
    }

    /// The set of playlists changed, or (`renamed`) some playlists' names or icons did.
    public func playlistsDidChange(renamed: [MediaPlaylist] = []) {
        renamedPlaylists += renamed
        setNeedsPublish()
    }

    /// Emits what changed since the last publication: one `PropertiesChanged` per interface,
    /// then `Seeked` if the position jumped.
    func publishNow() {
        publishScheduled = false
        var current = snapshot()
        // While the player settles a change, the flags it already set for the commands that
        // follow wait for the change itself: a new track's Metadata and its Can* flags reach
        // clients in one signal, so that no widget shows a title with another's buttons.
        if infoCenter.pendingItem != nil, let old = published[Self.playerInterface] {
            for name in Self.flagsHeldWhilePending { current[Self.playerInterface]?[name] = old[name] }
        }
        for interface in object.interfaces.map(\.name) {
            let old = published[interface] ?? [:]
            let new = current[interface] ?? [:]
            var changed: [String: Value] = [:]
            for (name, value) in new where old[name] != value { changed[name] = value }
            object.emitPropertiesChanged(interface: interface, changed: changed)
        }
        published = current

        let newTiming = timing()
        let restamped = newTiming.instant != publishedTiming?.instant || newTiming.itemID != publishedTiming?.itemID
        let requested =
            seekRequested && restamped && !newTiming.isStopped && newTiming.itemID == publishedTiming?.itemID
        if let jump = discontinuity(from: publishedTiming, to: newTiming) ?? (requested ? newTiming.elapsed : nil) {
            object.emit(interface: Self.playerInterface, member: "Seeked", arguments: [.int64(jump.microseconds)])
        }
        if restamped { seekRequested = false }
        publishedTiming = newTiming
        publishTrackList()
        for playlist in renamedPlaylists {
            object.emit(
                interface: Self.playlistsInterface, member: "PlaylistChanged", arguments: [playlistValue(playlist)])
        }
        renamedPlaylists = []
    }

    /// The window's change as removals and additions when it is a few edits (a track
    /// change slides it by one), else `TrackListReplaced`; then `TrackMetadataChanged` for
    /// items whose tags came in and were not just announced with them.
    private func publishTrackList() {
        defer {
            trackListReplaced = false
            changedTrackMetadata = []
        }
        guard let trackList else { return }
        let window = trackList.trackListWindow()
        var announced = Set<UInt64>()
        if window != publishedWindow || trackListReplaced {
            let edits = trackListReplaced ? nil : WindowEdits(from: publishedWindow, to: window)
            if let edits, edits.count <= max(4, window.count / 2) {
                for id in edits.removed {
                    object.emit(
                        interface: Self.trackListInterface, member: "TrackRemoved",
                        arguments: [.objectPath(trackID(for: id))])
                }
                let added = Dictionary(
                    uniqueKeysWithValues: trackList.trackListMetadata(edits.added.map(\.id)).map {
                        ($0.queueItemID, $0)
                    })
                for (id, after) in edits.added {
                    let info = added[id] ?? NowPlayingInfo(queueItemID: id)
                    object.emit(
                        interface: Self.trackListInterface, member: "TrackAdded",
                        arguments: [
                            metadataValue(info), .objectPath(after.map { trackID(for: $0) } ?? Self.noTrack),
                        ])
                    announced.insert(id)
                }
            } else {
                object.emit(
                    interface: Self.trackListInterface, member: "TrackListReplaced",
                    arguments: [
                        trackIDs(window), .objectPath(currentTrackID),
                    ])
                announced = Set(window)
            }
            object.emitPropertiesChanged(interface: Self.trackListInterface, changed: [:], invalidated: ["Tracks"])
            publishedWindow = window
        }
        var seen = announced
        let changed = changedTrackMetadata.filter { seen.insert($0).inserted }
        guard !changed.isEmpty else { return }
        for info in trackList.trackListMetadata(changed) {
            object.emit(
                interface: Self.trackListInterface, member: "TrackMetadataChanged",
                arguments: [
                    .objectPath(trackID(for: info.queueItemID)), metadataValue(info),
                ])
        }
    }

    func timing() -> Timing {
        guard let info = infoCenter.nowPlayingInfo, infoCenter.playbackState != .stopped else {
            return Timing(
                itemID: infoCenter.nowPlayingInfo?.queueItemID, isStopped: true, elapsed: .zero, rate: 0,
                instant: infoCenter.timestamp, duration: nil)
        }
        let rate = infoCenter.playbackState == .playing ? info.playbackRate : 0
        return Timing(
            itemID: info.queueItemID, isStopped: false, elapsed: info.elapsedPlaybackTime, rate: rate,
            instant: infoCenter.timestamp, duration: info.duration)
    }

    /// The new position if it is not what the previous timing predicts (a seek, a loop back
    /// to the start, a resume somewhere else); nil for ordinary progress.
    private func discontinuity(from old: Timing?, to new: Timing) -> Duration? {
        // Stopping resets the position to zero, which clients expect: no Seeked.
        guard let old, new.itemID != nil, !new.isStopped else { return nil }
        let expected: Duration = old.itemID == new.itemID && !old.isStopped ? old.predicted(at: new.instant) : .zero
        let difference = new.elapsed - expected
        let tolerance = configuration.seekTolerance
        return (difference > tolerance || difference < .zero - tolerance) ? new.elapsed : nil
    }

    /// Every signalled property's current value, per interface.
    func snapshot() -> [String: [String: Value]] {
        var result: [String: [String: Value]] = [:]
        for interface in object.interfaces {
            var values: [String: Value] = [:]
            for property in interface.properties where property.emitsChangedSignal == .true {
                values[property.name] = property.getter()
            }
            result[interface.name] = values
        }
        return result
    }
}
