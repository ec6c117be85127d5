import Dispatch
import FoundationEssentials
import Media

/// Reading the tags of queued entries in the background, ahead of their turn.
extension Player {
    /// Reads the tags of these entries in the background, lowest priority and a couple at a
    /// time, each entry once; `.entryInfo(id)` tells when one is in. Only the latest
    /// requests are kept when too many wait (see `ReadSchedule`).
    public func readInfoAhead(_ ids: some Sequence<UInt64>) {
        prefetch.request(ids)
    }

    /// Sets the artwork of an entry whose tags were read (found again after its cached image
    /// went, or a picture a stream sent); the observer hears of it when it is the current one.
    public func setArtworkURL(_ url: String?, forEntry id: UInt64) {
        guard let index = queue.index(of: id), var info = queue[index].info else { return }
        info.artworkURL = url
        info.artworkSearched = true
        step { state in
            state.queue[index].info = info
            return state.showIfShown(index)
        }
    }
}
