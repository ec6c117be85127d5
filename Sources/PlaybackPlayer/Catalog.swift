internal import CSystem
import Dispatch
import FoundationEssentials
import Logging

/// What the queue knows of its entries, and what clients are shown of the current one.
///
/// Tags read ahead, before a load or again after a slow read; failures; what a network
/// stream's tags and the pipeline tell of it; cover images. Each entry's tags (or its
/// failure) are announced once, and the current entry's metadata changes only when what it
/// says changes. A part of the ``Player``: it reads the queue through ``PlayerHost``, and
/// asks the player to keep each entry up to date and to show the current one.
@MainActor
final class Catalog {
    /// The player, as its parts see it.
    private unowned let host: any PlayerHost
    /// What the pipeline tells of the loaded stream.
    private let engine: Engine
    /// Reads tags off the main actor.
    private let prefetch: TagPrefetch
    private let logger: Logger

    init(host: any PlayerHost, engine: Engine, prefetch: TagPrefetch, logger: Logger) {
        self.host = host
        self.engine = engine
        self.prefetch = prefetch
        self.logger = logger
    }

    private var queue: PlayQueue { host.queue }

    /// Keeps what was read of an entry; the observer hears of an entry's tags (or of its
    /// failure) once, the first time.
    func record(_ info: TrackInfo, at index: Int) {
        let isNew = queue[index].info == nil
        host.updateEntry(at: index) { $0.info = info }
        if isNew { host.announce(.entryInfo(queue[index].id)) }
    }

    /// An entry found unplayable: one log line naming it and why, the first time only.
    func recordFailure(_ reason: String, at index: Int) {
        guard queue[index].failure == nil else { return }
        host.updateEntry(at: index) { $0.failure = reason }
        logger.warning("skipping \(MediaSources.displayName(queue[index].uri)): \(reason)")
        host.announce(.entryInfo(queue[index].id))
    }

    /// The entry at `index` changed: when it is the current one, clients see it.
    func showIfCurrent(_ index: Int) {
        guard host.current?.id == queue[index].id else { return }
        host.setCurrent(queue[index])
        host.announce(.metadata)
    }

    /// An entry never read ahead (a stream, a file read too slowly) gets what the pipeline
    /// knows of it once it settles.
    func fillInInfo(at index: Int) {
        if !MediaSources.isLocal(queue[index].uri) {
            let info = engine.streamTags.info(known: queue[index].info, facts: engine.facts)
            if info != queue[index].info {
                host.updateEntry(at: index) { $0.info = info }
                host.announce(.entryInfo(queue[index].id))
            }
        } else if queue[index].info == nil {
            record(TrackInfo(facts: engine.facts), at: index)
        }
    }

    /// Reads the selected entry's tags when they are not known yet, so that a stopped player
    /// shows what Play would start (or moves past what cannot play).
    func discoverSelectedIfNeeded() {
        guard let index = host.selectedIndex, queue[index].needsRead else { return }
        let id = queue[index].id
        prefetch.discoverer.discover(queue[index].uri) { [weak self] result in
            guard let self, let index = queue.index(of: id) else { return }
            switch result {
            case .success(let info): record(info, at: index)
            case .failure(let error) where error.isTimeout: break  // busy, not broken
            case .failure(let error): recordFailure(error.reason, at: index)
            }
            let host = host
            let stillSelected = host.selectedIndex == index && (host.current == nil || host.current?.id == id)
            if stillSelected, queue[index].failure != nil {
                // Unplayable: while stopped, the selection moves on to what Play would start.
                if host.requestedStatus == .stopped,
                    let next = host.neighbour(of: index, forward: true, automatic: false, allowRepeatOne: true)
                {
                    host.select(next)
                    host.setCurrent(nil)
                    discoverSelectedIfNeeded()
                }
            } else if stillSelected {
                host.setCurrent(queue[index])
                host.announce(.metadata)
            }
        }
    }

    /// Reads the tags of the entry that follows, needed before it can be handed over; `done`
    /// runs once they are in (or the entry is found unplayable).
    func readAhead(_ id: UInt64, uri: String, done: @escaping @MainActor () -> Void) {
        prefetch.readAhead(id, uri: uri) { [weak self] result in
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
    /// in the background is no failure: the entry is read again when it plays. True when a
    /// patient read brought the current entry's tags: what follows it is to be prepared again.
    @discardableResult
    func read(_ id: UInt64, _ result: Result<TrackInfo, MediaError>, _ kind: TagPrefetch.Kind) -> Bool {
        guard let index = queue.index(of: id), queue[index].needsRead else { return false }
        switch result {
        case .success(let info):
            record(info, at: index)
            if kind == .patient, info.oversizedPictureBytes != nil { trimHeapSoon() }
        case .failure(let error) where kind == .patient:
            logger.debug(
                "reading the tags of \(MediaSources.displayName(queue[index].uri)) again: \(error.reason)")
        case .failure(let error) where error.isTimeout:
            return false
        case .failure(let error):
            recordFailure(error.reason, at: index)
        }
        guard host.current?.id == id else { return false }
        host.setCurrent(queue[index])
        host.announce(.metadata)
        return kind == .patient
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
        host.current?.id == id && host.status != .stopped
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
        if let facts { host.updateEntry(at: index) { $0.info = facts } }
        let info = engine.streamTags.info(known: queue[index].info, facts: engine.facts)
        guard info != before else { return }
        let id = queue[index].id
        host.updateEntry(at: index) { $0.info = info }
        host.announce(.entryInfo(id))
        showIfCurrent(index)
    }

    /// A picture a stream carries is copied out of GStreamer's buffer and kept in the artwork
    /// cache off the main actor, then shown with the stream: in its first Metadata when kept
    /// before the stream settles, else in one update (none when it is the picture already
    /// shown). Dropped when another entry is loaded by then.
    private func keepStreamArtwork(_ picture: StreamTags.Picture, of id: UInt64) {
        guard let artwork = prefetch.artwork else { return }
        TagPrefetch.queues[0].async { [weak self] in
            let url = picture.bytes.flatMap { artwork.store($0) }
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, let url else { return }
                    let engine = self.engine
                    guard engine.transport.loadedEntry == id, engine.streamTags.artworkURL != url,
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
            let info = queue[index].info?.withDurationLearned(from: engine.facts)
        else { return }
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    func reportEndIfStream(_ id: UInt64) {
        guard let entry = host.entry(id: id), !MediaSources.isLocal(entry.uri), entry.info?.duration == nil else {
            return
        }
        logger.warning(
            "the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }
}
