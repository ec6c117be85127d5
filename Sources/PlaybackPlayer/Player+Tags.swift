internal import CLibcShims
import Dispatch
import FoundationEssentials
import Media
import PlaybackEngine
import PlaybackVocabulary

/// Reading tags off the main actor, and what the pipeline tells of network streams: the
/// reads start here, and what they find goes through the player's state.
extension Player {
    /// Reads the selected entry's tags when they are not known yet, so that a stopped player
    /// shows what Play would start (or moves past what cannot play).
    func readSelectedIfNeeded() {
        guard let index = selectedIndex, queue[index].needsRead else { return }
        let id = queue[index].id
        prefetch.discoverer.discover(queue[index].uri) { [weak self] result in
            guard let self else { return }
            let view = engineView
            step { $0.selectedRead(id, result, view) }
        }
    }

    /// Reads the tags of the entry that follows, needed before it can be handed over; what
    /// follows is prepared again once they are in (or the entry is found unplayable).
    func readAhead(_ id: UInt64) {
        guard let uri = entry(id: id)?.uri else { return }
        prefetch.readAhead(id, uri: uri) { [weak self] result in
            self?.step { $0.aheadRead(id, result) }
        }
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
        current?.id == id && status != .stopped
    }

    /// The loaded stream's tags changed (a new title, a picture): clients see the change once
    /// the stream has settled; before, settling it applies them (in its first Metadata).
    func streamTagsChanged(_ id: UInt64, picture: StreamTags.Picture?) {
        if let picture { keepStreamArtwork(picture, of: id) }
        if isSettled(id) { updateStreamInfo(of: id) }
    }

    /// What the stream's tags and the pipeline say of the entry `id` now, with `known` (nil:
    /// what the entry holds) as what was known before: the entry changes once per actual
    /// change, never for a repeat of what it already says.
    private func updateStreamInfo(of id: UInt64, known: TrackInfo? = nil) {
        guard let entry = entry(id: id) else { return }
        let info = engine.streamTags.info(known: known ?? entry.info, facts: engine.facts)
        step { $0.streamInfoHeard(info, of: id) }
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
                    guard self.engine.transport.loadedEntry == id, self.engine.streamTags.artworkURL != url,
                        self.queue.contains(id)
                    else { return }
                    self.engine.keepStreamArtwork(url)
                    if self.isSettled(id) { self.updateStreamInfo(of: id) }
                }
            }
        }
    }

    /// A stream's duration became known after it started playing: its length and
    /// seekability are published then, once.
    func streamDurationChanged(_ id: UInt64) {
        guard isSettled(id), let entry = entry(id: id), !entry.isLocal,
            let info = entry.info?.withDurationLearned(from: engine.facts)
        else { return }
        updateStreamInfo(of: id, known: info)
    }
}
