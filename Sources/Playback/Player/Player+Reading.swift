import Dispatch
import FoundationEssentials

/// Reading the tags of queued entries in the background, ahead of their turn.
extension Player {
    /// Reads the tags of these entries in the background, lowest priority and a couple at a
    /// time, each entry once; `.entryInfo(id)` tells when one is in. Only the latest
    /// requests are kept when too many wait (see ``ReadSchedule``).
    public func readInfoAhead(_ ids: some Sequence<UInt64>) {
        prefetch.request(ids)
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
            logger.debug("reading the tags of \(MediaSources.displayName(queue[index].uri)) again: \(error.reason)")
        case .failure(let error) where error.isTimeout:
            return
        case .failure(let error):
            recordFailure(error.reason, at: index)
        }
        guard current?.id == id else { return }
        current = queue[index]
        onChange?(.metadata)
        if kind == .patient { prepareNext() }
    }

    /// Sets the artwork of an entry whose tags were read (found again after its cached image
    /// went, or a picture a stream sent); the observer hears of it when it is the current one.
    public func setArtworkURL(_ url: String?, forEntry id: UInt64) {
        guard let index = queue.index(of: id), var info = queue[index].info else { return }
        info.artworkURL = url
        info.artworkSearched = true
        queue[index].info = info
        showIfCurrent(index)
    }
}
