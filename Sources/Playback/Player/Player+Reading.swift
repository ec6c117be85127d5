import Dispatch
import FoundationEssentials

/// Reading the tags of queued entries in the background, ahead of their turn.
extension Player {
    /// Reads the tags of these entries in the background, lowest priority and at most
    /// `backgroundReads` at a time, each entry once; `.entryInfo(id)` tells when one is in.
    /// Only the latest requests are kept when more than `maximumPendingReads` wait.
    public func readInfoAhead(_ ids: some Sequence<UInt64>) {
        for id in ids where !infoRequested.contains(id) {
            guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { continue }
            infoRequested.insert(id)
            pendingReads.append(id)
        }
        if pendingReads.count > Self.maximumPendingReads {
            for id in pendingReads.prefix(pendingReads.count - Self.maximumPendingReads) { infoRequested.remove(id) }
            pendingReads.removeFirst(pendingReads.count - Self.maximumPendingReads)
        }
        startBackgroundReads()
    }

    static let backgroundReads = 2
    /// One serial queue per concurrent read. Not a global queue: using one starts
    /// libdispatch's worker-pool monitor, which then wakes the process every second.
    static let readQueues = (0..<backgroundReads).map { DispatchQueue(label: "quaver.tags.\($0)", qos: .utility) }
    static let maximumPendingReads = 2_000

    private func startBackgroundReads() {
        while readsInFlight < Self.backgroundReads, !pendingReads.isEmpty {
            let id = pendingReads.removeFirst()
            infoRequested.remove(id)
            guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { continue }
            readsInFlight += 1
            readsStarted &+= 1
            let uri = queue[index].uri
            let artwork = self.artwork
            Self.readQueues[readsStarted % Self.readQueues.count].async { [weak self] in
                let result = Discoverer.discoverNow(uri, artwork: artwork)
                DispatchQueue.main.async {
                    MainActor.assumeIsolated { self?.finishBackgroundRead(id, result) }
                }
            }
        }
    }

    private func finishBackgroundRead(_ id: UInt64, _ result: Result<TrackInfo, MediaError>) {
        readsInFlight -= 1
        defer { startBackgroundReads() }
        guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { return }
        switch result {
        case .success(let info): record(info, at: index)
        case .failure(let error) where error.isTimeout: return  // busy, not broken: read again when played
        case .failure(let error): recordFailure(error.reason, at: index)
        }
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }

    /// Sets the artwork of an entry whose tags were read (found again after its cached image
    /// went, or a picture a stream sent); the observer hears of it when it is the current one.
    public func setArtworkURL(_ url: String?, forEntry id: UInt64) {
        guard let index = queue.index(of: id), var info = queue[index].info else { return }
        info.artworkURL = url
        info.artworkSearched = true
        queue[index].info = info
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }
}
