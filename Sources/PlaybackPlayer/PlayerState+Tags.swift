import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// Tag reads that ended, and what the pipeline tells of network streams: the steps that keep
/// what is known of each entry and what clients are shown of it.
extension PlayerState {
    /// The selected entry's tags were read so that a stopped player shows what Play would
    /// start: it is shown, or, found unplayable while stopped, the selection moves on to what
    /// Play would start (and that one is read).
    mutating func selectedRead(_ id: UInt64, _ result: Result<TrackInfo, MediaError>, _ engine: EngineView)
        -> [Action]
    {
        guard let index = queue.index(of: id) else { return [] }
        var actions: [Action]
        switch result {
        case .success(let info): actions = record(info, at: index)
        case .failure(let error) where error.isTimeout: actions = []  // busy, not broken
        case .failure(let error): actions = recordFailure(error.reason, at: index)
        }
        guard selection.index == index, shown == nil || shown?.id == id else { return actions }
        guard queue[index].failure != nil else {
            show(queue[index])
            return actions + [.announce(.metadata)]
        }
        if requested(engine) == .stopped,
            let next = selection.neighbour(of: index, in: queue, forward: true, automatic: false)
        {
            if next != index { abandonReading() }
            selection.index = next
            show(nil)
            actions.append(.readSelected)
        }
        return actions
    }

    /// The tags of the entry that follows, needed before it can be handed over, were read:
    /// what follows is prepared again (a read too slow is no failure: the entry is loaded
    /// when its turn comes).
    mutating func aheadRead(_ id: UInt64, _ result: Result<TrackInfo, MediaError>) -> [Action] {
        guard let index = queue.index(of: id) else { return [] }
        switch result {
        case .success(let info):
            return record(info, at: index) + showIfShown(index) + [.prepareNext]
        case .failure(let error) where error.isTimeout:
            return []
        case .failure(let error):
            return recordFailure(error.reason, at: index) + [.prepareNext]
        }
    }

    /// What a background read (`patient`: a second read after a slow one) found. A timeout
    /// in the background is no failure: the entry is read again when it plays. When a
    /// patient read brings the shown entry's tags, what follows it is prepared again.
    mutating func backgroundRead(_ id: UInt64, _ result: Result<TrackInfo, MediaError>, patient: Bool) -> [Action] {
        guard let index = queue.index(of: id), queue[index].needsRead else { return [] }
        var actions: [Action]
        switch result {
        case .success(let info):
            actions = record(info, at: index)
            if patient, info.oversizedPictureBytes != nil { actions.append(.trimHeap) }
        case .failure(let error) where patient:
            actions = [
                .log(.debug, "reading the tags of \(MediaSources.displayName(queue[index].uri)) again: \(error.reason)")
            ]
        case .failure(let error) where error.isTimeout:
            return []
        case .failure(let error):
            actions = recordFailure(error.reason, at: index)
        }
        guard showAgainIfShown(id) else { return actions }
        return actions + [.announce(.metadata)] + (patient ? [.prepareNext] : [])
    }

    /// The pipeline told more of the loaded network stream `id`: `info` is what it says of
    /// it now. The entry changes, and clients hear of it, once per actual change.
    mutating func streamInfoHeard(_ info: TrackInfo, of id: UInt64) -> [Action] {
        guard let index = queue.index(of: id), info != queue[index].info else { return [] }
        queue[index].info = info
        return [.announce(.entryInfo(id))] + showIfShown(index)
    }
}
