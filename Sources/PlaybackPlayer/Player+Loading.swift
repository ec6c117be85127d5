import Media
import PlaybackEngine
import PlaybackVocabulary

/// Carrying out a load of the selected entry, as ``PlayerState/loadSelected(at:intent:)``
/// decides it: the read of its tags first, then the engine's load.
extension Player {
    /// Reads the tags of the entry `id` that a load waits for; the state decides, when the
    /// read ends, whether the load goes on.
    func readBeforeLoad(_ id: UInt64, uri: String, generation: Int) {
        prefetch.discoverer.discover(uri) { [weak self] result in
            guard let self else { return }
            let view = engineView
            step { $0.readBeforeLoadEnded(id, generation: generation, result, view) }
        }
    }

    /// Hands the queued entry `id` to the engine, with what the engine needs to know of it.
    func startLoad(_ id: UInt64, at position: Duration?, intent: Status) {
        guard let entry = entry(id: id) else { return }
        logger.trace("loading \(MediaSources.displayName(entry.uri))")
        let load = Transport.Load(entry: entry.id, uri: entry.uri, position: position)
        engine.load(load, facts: facts(of: entry.id), intent: intent)
    }
}
