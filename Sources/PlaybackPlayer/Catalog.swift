internal import CSystem
import Dispatch
import FoundationEssentials

/// What the queue knows of its entries, and what clients are shown of the current one.
///
/// Tags read ahead, before a load or again after a slow read; failures; what a network
/// stream's tags and the pipeline tell of it; cover images. Each entry's tags (or its
/// failure) are announced once, and the current entry's metadata changes only when what it
/// says changes. A part of the ``Player``, whose queue it keeps up to date.
@MainActor
final class Catalog {
    private unowned let player: Player

    init(player: Player) {
        self.player = player
    }

    private var queue: PlayQueue { player.queue }

    /// Keeps what was read of an entry; the observer hears of an entry's tags (or of its
    /// failure) once, the first time.
    func record(_ info: TrackInfo, at index: Int) {
        let isNew = queue[index].info == nil
        player.queue[index].info = info
        if isNew { player.onChange?(.entryInfo(queue[index].id)) }
    }

    /// An entry found unplayable: one log line naming it and why, the first time only.
    func recordFailure(_ reason: String, at index: Int) {
        guard queue[index].failure == nil else { return }
        player.queue[index].failure = reason
        player.logger.warning("skipping \(MediaSources.displayName(queue[index].uri)): \(reason)")
        player.onChange?(.entryInfo(queue[index].id))
    }

    /// The entry at `index` changed: when it is the current one, clients see it.
    func showIfCurrent(_ index: Int) {
        guard player.current?.id == queue[index].id else { return }
        player.current = queue[index]
        player.onChange?(.metadata)
    }

    /// An entry never read ahead (a stream, a file read too slowly) gets what the pipeline
    /// knows of it once it settles.
    func fillInInfo(at index: Int) {
        let engine = player.engine
        if !MediaSources.isLocal(queue[index].uri) {
            let info = engine.streamTags.info(known: queue[index].info, facts: engine.facts)
            if info != queue[index].info {
                player.queue[index].info = info
                player.onChange?(.entryInfo(queue[index].id))
            }
        } else if queue[index].info == nil {
            record(TrackInfo(facts: engine.facts), at: index)
        }
    }

    /// Reads the selected entry's tags when they are not known yet, so that a stopped player
    /// shows what Play would start (or moves past what cannot play).
    func discoverSelectedIfNeeded() {
        guard let index = player.selectedIndex, queue[index].needsRead else { return }
        let id = queue[index].id
        player.prefetch.discoverer.discover(queue[index].uri) { [weak self] result in
            guard let self, let index = queue.index(of: id) else { return }
            switch result {
            case .success(let info): record(info, at: index)
            case .failure(let error) where error.isTimeout: break  // busy, not broken
            case .failure(let error): recordFailure(error.reason, at: index)
            }
            let player = player
            let stillSelected = player.selectedIndex == index && (player.current == nil || player.current?.id == id)
            if stillSelected, queue[index].failure != nil {
                // Unplayable: while stopped, the selection moves on to what Play would start.
                if player.requestedStatus == .stopped,
                    let next = player.neighbour(of: index, forward: true, automatic: false)
                {
                    player.selectedIndex = next
                    player.current = nil
                    discoverSelectedIfNeeded()
                }
            } else if stillSelected {
                player.current = queue[index]
                player.onChange?(.metadata)
            }
        }
    }

    /// Reads the tags of the entry that follows, needed before it can be handed over; `done`
    /// runs once they are in (or the entry is found unplayable).
    func readAhead(_ id: UInt64, uri: String, done: @escaping @MainActor () -> Void) {
        player.prefetch.readAhead(id, uri: uri) { [weak self] result in
            guard let self, let index = queue.index(of: id) else { return }
            switch result {
            case .success(let info):
                record(info, at: index)
                showIfCurrent(index)
            case .failure(let error) where error.isTimeout:
                return  // slow to read is not broken: it is loaded when its turn comes
            case .failure(let error):
                recordFailure(error.reason, at: index)
            }
            done()
        }
    }

    /// What a background read, or a patient second read after a timeout, found. A timeout
    /// in the background is no failure: the entry is read again when it plays.
    func read(_ id: UInt64, _ result: Result<TrackInfo, MediaError>, _ kind: TagPrefetch.Kind) {
        guard let index = queue.index(of: id), queue[index].needsRead else { return }
        switch result {
        case .success(let info):
            record(info, at: index)
            if kind == .patient, info.oversizedPictureBytes != nil { trimHeapSoon() }
        case .failure(let error) where kind == .patient:
            player.logger.debug(
                "reading the tags of \(MediaSources.displayName(queue[index].uri)) again: \(error.reason)")
        case .failure(let error) where error.isTimeout:
            return
        case .failure(let error):
            recordFailure(error.reason, at: index)
        }
        guard player.current?.id == id else { return }
        player.current = queue[index]
        player.onChange?(.metadata)
        if kind == .patient { player.conductor.prepareNext() }
    }

    /// Parsing a picture over the limit (by the pipeline, or a read of its tags) leaves
    /// hundreds of MiB free but not given back: the heap's one arena keeps them between the
    /// chunks still in use. Two seconds after such a track is left or read, once the
    /// pipeline that played it is freed, they are handed back.
    func trimHeapSoon() {
        TagPrefetch.queues[0].asyncAfter(deadline: .now() + 2) { csystem_trim_heap() }
    }

    // MARK: - Network streams

    /// The loaded entry has settled (Playing or Paused) and is the one shown.
    private func isSettled(_ id: UInt64) -> Bool {
        player.current?.id == id && player.status != .stopped
    }

    /// The loaded stream's tags changed (a new title, a picture): clients see the change once
    /// the stream has settled; before, settling it applies them (in its first Metadata).
    func streamTagsChanged(_ id: UInt64, picture: StreamTags.Picture?) {
        guard let index = queue.index(of: id) else { return }
        if let picture { keepStreamArtwork(picture, of: id) }
        if isSettled(id) { updateStreamInfo(at: index) }
    }

    /// A new stream title (or other tag) was heard: the entry's metadata changes once per
    /// actual change, never for a repeat of what it already says.
    /// `facts`: new facts from the pipeline (a duration), tags aside.
    private func updateStreamInfo(at index: Int, facts: TrackInfo? = nil) {
        let before = queue[index].info
        if let facts { player.queue[index].info = facts }
        let info = player.engine.streamTags.info(known: queue[index].info, facts: player.engine.facts)
        guard info != before else { return }
        let id = queue[index].id
        player.queue[index].info = info
        player.onChange?(.entryInfo(id))
        showIfCurrent(index)
    }

    /// A picture a stream carries is copied out of GStreamer's buffer and kept in the artwork
    /// cache off the main actor, then shown with the stream: in its first Metadata when kept
    /// before the stream settles, else in one update (none when it is the picture already
    /// shown). Dropped when another entry is loaded by then.
    private func keepStreamArtwork(_ picture: StreamTags.Picture, of id: UInt64) {
        guard let artwork = player.artwork else { return }
        TagPrefetch.queues[0].async { [weak self] in
            let url = picture.bytes.flatMap { artwork.store($0) }
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, let url else { return }
                    let engine = self.player.engine
                    guard self.player.transport.loadedEntry == id, engine.streamTags.artworkURL != url,
                        let index = self.queue.index(of: id)
                    else { return }
                    engine.keepStreamArtwork(url)
                    if self.isSettled(id) { self.updateStreamInfo(at: index) }
                }
            }
        }
    }

    /// A stream's duration became known after it started playing: its length and
    /// seekability are published then, once.
    func streamDurationChanged(_ id: UInt64) {
        guard isSettled(id), let index = queue.index(of: id), !MediaSources.isLocal(queue[index].uri),
            let info = queue[index].info?.withDurationLearned(from: player.engine.facts)
        else { return }
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    func reportEndIfStream(_ id: UInt64) {
        guard let entry = player.entry(id: id), !MediaSources.isLocal(entry.uri), entry.info?.duration == nil else {
            return
        }
        player.logger.warning(
            "the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }
}
