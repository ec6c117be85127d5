import Dispatch
import FoundationEssentials

/// Network streams as entries: their tags and pictures, and their duration once known (the
/// engine follows the stream itself: its buffering, and whether it stalls).
extension Player {
    /// The loaded entry has settled (Playing or Paused) and is the one shown.
    func isSettled(_ id: UInt64) -> Bool {
        current?.id == id && status != .stopped
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
    func updateStreamInfo(at index: Int, facts: TrackInfo? = nil) {
        let before = queue[index].info
        if let facts { queue[index].info = facts }
        let info = engine.streams.tags.info(known: queue[index].info, facts: engine.facts)
        guard info != before else { return }
        let id = queue[index].id
        queue[index].info = info
        onChange?(.entryInfo(id))
        showIfCurrent(index)
    }

    /// A picture a stream carries is copied out of GStreamer's buffer and kept in the artwork
    /// cache off the main actor, then shown with the stream: in its first Metadata when kept
    /// before the stream settles, else in one update (none when it is the picture already
    /// shown). Dropped when another entry is loaded by then.
    func keepStreamArtwork(_ picture: StreamTags.Picture, of id: UInt64) {
        guard let artwork else { return }
        TagPrefetch.queues[0].async { [weak self] in
            let url = picture.bytes.flatMap { artwork.store($0) }
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, let url, self.transport.loadedEntry == id, self.engine.streams.tags.artworkURL != url,
                        let index = self.queue.index(of: id)
                    else { return }
                    self.engine.streams.tags.artworkURL = url
                    if self.isSettled(id) { self.updateStreamInfo(at: index) }
                }
            }
        }
    }

    /// A stream's duration became known after it started playing: its length and
    /// seekability are published then, once.
    func streamDurationChanged(_ id: UInt64) {
        guard isSettled(id), let index = queue.index(of: id), !isLocal(queue[index].uri),
            let info = queue[index].info?.withDurationLearned(from: engine.facts)
        else { return }
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    func reportEndIfStream(_ id: UInt64) {
        guard let entry = entry(id: id), !isLocal(entry.uri), entry.info?.duration == nil else { return }
        logger.warning("the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }
}
