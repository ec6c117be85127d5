import CLibcShims
import Dispatch
import FoundationEssentials
import Logging
import Media
import NowPlaying
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary

/// The queue as clients see it (MPRIS TrackList), how media gets into it (expanded in the
/// background, in order), and the playlists offered (MPRIS Playlists).
extension Daemon: TrackListDataSource, PlaylistsDataSource {
    /// `Tracks` shows this many entries: a few before the current one, the rest after.
    static let trackListWindowSize = 20
    static let trackListEntriesBefore = 5

    // MARK: - Loading

    /// Where media is expanded, one load after another. Not a global queue: using one
    /// starts libdispatch's worker-pool monitor, which then wakes the process every second
    /// for good.
    static let loadQueue = DispatchQueue(label: "quaver.loader", qos: .userInitiated)

    /// Expands `sources` (files, folders, playlists, URIs) on a background queue and hands
    /// the items to `batch` on the main queue, in order: the first as soon as it is known,
    /// then in batches. `done` gets the count, and the session is saved, once all are in.
    /// A later `loads.replace()` makes the batches of this load be dropped.
    func load(
        _ sources: [String], quietly: Bool = false,
        batch: @escaping @MainActor ([MediaItem]) -> Void,
        done: (@MainActor (Int) -> Void)? = nil
    ) {
        let expand = loading(sources, generation: loads.begin(), quietly: quietly, batch: batch, done: done)
        Self.loadQueue.async { expand() }
    }

    /// The work of a load of `generation` (begun): what ``load(_:quietly:batch:done:)``
    /// runs on `loadQueue`.
    private func loading(
        _ sources: [String], generation: Int, quietly: Bool,
        batch: @escaping @MainActor ([MediaItem]) -> Void,
        done: (@MainActor (Int) -> Void)?
    ) -> @Sendable () -> Void {
        let logger = self.logger
        let started = ContinuousClock.now
        let deliver: @Sendable ([MediaItem]) -> Void = { uris in
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    guard let self, loads.isCurrent(generation) else { return }
                    batch(uris)
                }
            }
        }
        return {
            var pending: [MediaItem] = []
            var delivered = 0
            MediaSources.expand(sources, logger: logger) { uris in
                pending += uris
                // The first tracks at once (to start playing), then in batches small enough
                // to keep the main queue responsive.
                if delivered == 0 || pending.count >= 8_192 {
                    for start in stride(from: 0, to: pending.count, by: 8_192) {
                        deliver(Array(pending[start..<min(start + 8_192, pending.count)]))
                    }
                    delivered += pending.count
                    pending = []
                }
            }
            if !pending.isEmpty { deliver(pending) }
            let count = delivered + pending.count
            // Expanding a big folder or playlist allocates far more than the URIs it keeps.
            if count >= 10_000 { csystem_trim_heap() }
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    guard let self else { return }
                    let current = loads.end(generation)
                    syncNowPlaying(republishTiming: false)
                    guard current else { return }
                    let elapsed = ContinuousClock.now - started
                    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    if !quietly || count > 0 {
                        logger.info(
                            "queue loaded: \(count) tracks in \(seconds.decimalText(places: 2)) s (\(player.count) queued in all)"
                        )
                    }
                    done?(count)
                    session.saveNow()
                }
            }
        }
    }

    /// Opens or queues one URI a client sent (OpenUri, AddTrack) without touching the disk
    /// on the main actor: it is looked at on `loadQueue`, after what is loading there, so
    /// URIs sent one after the other take effect in that order, whatever each one is.
    ///
    /// A folder or playlist is answered `.success` at once and queued in the background,
    /// `placeFirst` placing its first batch and returning its entries. One file or stream
    /// is placed by `place`, whose status is the answer, once found; not found, the answer
    /// is `.noSuchContent`.
    func take(
        _ uri: String, answer: @escaping @MainActor (RemoteCommandHandlerStatus) -> Void,
        place: @escaping @MainActor ([MediaItem]) -> RemoteCommandHandlerStatus,
        placeFirst: @escaping @MainActor ([MediaItem]) -> [Player.Entry]?
    ) {
        let logger = self.logger
        let generation = loads.begin()
        let collection = loading(
            [uri], generation: generation, quietly: false, batch: batches(placeFirst: placeFirst), done: nil)
        Self.loadQueue.async {
            guard !MediaSources.isCollection(uri) else {
                DispatchQueue.main.async { MainActor.assumeIsolated { answer(.success) } }
                return collection()
            }
            let items = MediaSources.expandItems([uri], logger: logger)
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    self?.found(items, generation: generation, answer: answer, place: place)
                }
            }
        }
    }

    /// One file or stream a client sent is found (or not, `items` empty): placed, and answered.
    private func found(
        _ items: [MediaItem], generation: Int, answer: @MainActor (RemoteCommandHandlerStatus) -> Void,
        place: @MainActor ([MediaItem]) -> RemoteCommandHandlerStatus
    ) {
        // Placed even when the queue was replaced meanwhile: the replacement came later, and
        // its first batch comes after this.
        _ = loads.end(generation)
        answer(items.isEmpty ? .noSuchContent : place(items))
        // Play asked for while it was being found (nothing was queued) plays it.
        if !loads.isLoading, loads.takePlay(startPaused: true), player.requestedStatus != .playing { player.play() }
        syncNowPlaying(republishTiming: false)
        session.saveNow()
    }

    /// What places the batches of a folder or playlist: `placeFirst` the first; every later
    /// one after the one before it, or at the end when that entry was removed meanwhile.
    private func batches(
        placeFirst: @escaping @MainActor ([MediaItem]) -> [Player.Entry]?
    ) -> @MainActor ([MediaItem]) -> Void {
        var lastID: UInt64?
        var placed = false
        return { [unowned self] uris in
            let added =
                placed
                ? lastID.flatMap { player.insert(uris, afterID: $0) } ?? player.enqueue(uris)
                : placeFirst(uris) ?? []
            placed = true
            lastID = added.last?.id ?? lastID
        }
    }

    // MARK: - TrackList

    func trackListWindow() -> [UInt64] {
        let entries = player.entries
        guard !entries.isEmpty else { return [] }
        let size = Self.trackListWindowSize
        let current = player.currentIndex ?? 0
        let start = max(0, min(current - Self.trackListEntriesBefore, entries.count - size))
        return entries[start..<min(entries.count, start + size)].map(\.id)
    }

    func trackListMetadata(_ ids: [UInt64]) -> [NowPlayingInfo] {
        var unread: [UInt64] = []
        let found = ids.compactMap { id -> NowPlayingInfo? in
            guard let entry = player.entry(id: id) else { return nil }
            if entry.info == nil { unread.append(id) }
            if let published = info.nowPlayingInfo, published.queueItemID == id { return published }
            var now = NowPlayingInfo(queueItemID: id)
            Self.describe(entry, in: &now, artwork: artwork)
            return now
        }
        player.readInfoAhead(unread)
        return found
    }

    func bindTrackListCommands() {
        handle(commands.addTrackCommand) { [unowned self] event, completion in
            take(event.uri, answer: completion) { [unowned self] items in
                queue(items, after: event)
                return .success
            } placeFirst: { [unowned self] items in
                queue(items, after: event)
            }
        }
        handle(commands.removeTrackCommand) { [unowned self] event in
            player.remove(id: event.itemID) ? .success : .noSuchContent
        }
        handle(commands.goToTrackCommand) { [unowned self] event in
            player.goTo(id: event.itemID) ? .success : .noSuchContent
        }
        handle(commands.activatePlaylistCommand) { [unowned self] event in
            guard let playlist = playlistFolder?.playlist(id: event.playlistID) else { return .noSuchContent }
            activatePlaylist(playlist)
            return .success
        }
    }

    /// Queues what AddTrack brought, after the entry it names (at the end when that entry
    /// was removed meanwhile), and makes the first current if asked.
    @discardableResult
    private func queue(_ items: [MediaItem], after event: AddTrackCommandEvent) -> [Player.Entry] {
        let added = player.insert(items, afterID: event.afterItemID) ?? player.enqueue(items)
        if event.setAsCurrent, let id = added.first?.id { player.goTo(id: id) }
        return added
    }

    // MARK: - Playlists

    func startPlaylists() {
        guard let folder = options.playlistsFolder else { return }
        let playlists = PlaylistFolder(folder: folder, logger: logger)
        playlists.onChange = { [weak self] retitled in
            guard let self else { return }
            if let active = activePlaylistID, playlistFolder?.playlist(id: active) == nil { activePlaylistID = nil }
            mpris.playlistsDidChange(renamed: retitled.map(Self.mediaPlaylist))
        }
        playlists.start()
        playlistFolder = playlists
        mpris.playlists = self
    }

    /// Replaces the queue with the playlist's tracks and plays them from the first.
    private func activatePlaylist(_ playlist: PlaylistItem) {
        logger.info("playing the playlist \(playlist.title) (\(playlist.url.path))")
        loads.replace()
        activePlaylistID = playlist.id
        var first = true
        load([playlist.url.path]) { [unowned self] uris in
            if first {
                first = false
                player.replaceQueue(with: uris, play: true)
                mpris.trackListDidChange(replaced: true)
            } else {
                player.enqueue(uris)
            }
        } done: { [unowned self] count in
            if count == 0 { logger.warning("the playlist \(playlist.url.path) has nothing playable") }
        }
        mpris.playlistsDidChange()
    }

    static func mediaPlaylist(_ item: PlaylistItem) -> MediaPlaylist {
        MediaPlaylist(id: item.id, name: item.title)
    }

    var playlistCount: Int { playlistFolder?.playlists.count ?? 0 }

    var playlistOrderings: [MediaPlaylistOrdering] {
        PlaylistOrdering.allCases.compactMap { MediaPlaylistOrdering(rawValue: $0.rawValue) }
    }

    func playlists(from index: Int, maxCount: Int, ordering: MediaPlaylistOrdering, reversed: Bool) -> [MediaPlaylist] {
        guard let order = PlaylistOrdering(rawValue: ordering.rawValue) else { return [] }
        let all = playlistFolder?.sorted(by: order, reversed: reversed) ?? []
        guard index < all.count, maxCount > 0 else { return [] }
        return all[index..<min(all.count, index + maxCount)].map(Self.mediaPlaylist)
    }

    func playlist(id: UInt64) -> MediaPlaylist? {
        playlistFolder?.playlist(id: id).map(Self.mediaPlaylist)
    }

    var activePlaylist: MediaPlaylist? {
        activePlaylistID.flatMap { playlistFolder?.playlist(id: $0) }.map(Self.mediaPlaylist)
    }
}
