import Dispatch
import FoundationEssentials
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// Loading entries: a local file's tags are read first, so that clients see one Metadata
/// for it, and a broken file is skipped before it reaches the pipeline.
extension Player {
    /// Loads the entry at `index` toward `intent`; a local file's tags are read first.
    func load(_ index: Int, at position: Duration? = nil, intent: Status) {
        state.selection.index = index
        state.abandonReading()
        let entry = queue[index]
        guard entry.info == nil, isLocal(entry.uri) else {
            return start(entry, at: position, intent: intent)
        }
        logger.trace("reading the tags of \(MediaSources.displayName(entry.uri)) before loading it")
        let generation = state.startReading(at: position, intent: intent)
        prefetch.discoverer.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            guard let read = state.finishReading(generation: generation), let index = queue.index(of: entry.id) else {
                logger.trace("\(MediaSources.displayName(entry.uri)) was read, but another load came since")
                return
            }
            switch result {
            case .success(let info):
                step { $0.record(info, at: index) }
                start(queue[index], at: read.position, intent: read.intent)
            case .failure(let error) where error.isTimeout:
                // Slow to read is not broken: let the pipeline try (it reports real errors),
                // and read it again in the background with time to spare.
                logger.info(
                    "the tags of \(MediaSources.displayName(entry.uri)) take long to read; playing it meanwhile under its file name"
                )
                start(queue[index], at: read.position, intent: read.intent)
                prefetch.readAgain(entry.id, uri: entry.uri)
            case .failure(let error):
                let view = engineView
                step { $0.failed(entry.id, reason: error.reason, intent: read.intent, view) }
            }
        }
    }

    private func start(_ entry: Entry, at position: Duration?, intent: Status) {
        guard intent != .stopped else { return }
        logger.trace("loading \(MediaSources.displayName(entry.uri))")
        let load = Transport.Load(entry: entry.id, uri: entry.uri, position: position)
        engine.load(load, facts: facts(of: entry.id), intent: intent)
    }
}
