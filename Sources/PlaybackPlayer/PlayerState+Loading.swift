import Media
import PlaybackVocabulary

/// Loading the selected entry: a local file's tags are read first, so that clients see one
/// Metadata for it and a broken file is skipped before it reaches the pipeline.
extension PlayerState {
    /// The selected entry is to load at `position` (nil: its beginning) toward `intent`. A
    /// local file whose tags are not known is read first (``Action/readBeforeLoad(_:uri:generation:)``),
    /// and the load waits in ``reading``; anything else loads at once. A load toward
    /// `.stopped` only reads.
    mutating func loadSelected(at position: Duration?, intent: PlaybackStatus) -> [Action] {
        abandonReading()
        guard let entry = selected else { return [] }
        guard entry.info == nil, entry.isLocal else { return start(entry.id, at: position, intent: intent) }
        let generation = startReading(at: position, intent: intent)
        return [
            .log(.trace, "reading the tags of \(MediaSources.displayName(entry.uri)) before loading it"),
            .readBeforeLoad(entry.id, uri: entry.uri, generation: generation),
        ]
    }

    /// The read a load waited for (``loadSelected(at:intent:)``) ended with `result`. The load
    /// goes on when it is still the one waiting: with the tags read; under the file's name
    /// when they took too long (slow to read is not broken: the pipeline reports real errors,
    /// and the tags are read again with time to spare); or, for a file that cannot be read,
    /// not at all: the entry fails as a pipeline error would fail it.
    mutating func readBeforeLoadEnded(
        _ id: UInt64, generation: Int, _ result: Result<TrackInfo, MediaError>, _ engine: EngineView
    ) -> [Action] {
        guard let read = finishReading(generation: generation), let index = queue.index(of: id) else {
            let name = queue.index(of: id).map { MediaSources.displayName(queue[$0].uri) } ?? "entry \(id)"
            return [.log(.trace, "\(name) was read, but another load came since")]
        }
        let uri = queue[index].uri
        switch result {
        case .success(let info):
            return record(info, at: index) + start(id, at: read.position, intent: read.intent)
        case .failure(let error) where error.isTimeout:
            return [
                .log(
                    .info,
                    "the tags of \(MediaSources.displayName(uri)) take long to read; playing it meanwhile under its file name"
                )
            ] + start(id, at: read.position, intent: read.intent) + [.readAgain(id, uri: uri)]
        case .failure(let error):
            return failed(id, reason: error.reason, intent: read.intent, engine)
        }
    }

    private func start(_ id: UInt64, at position: Duration?, intent: PlaybackStatus) -> [Action] {
        intent == .stopped ? [] : [.startLoad(id, at: position, intent: intent)]
    }
}
