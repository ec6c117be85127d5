import FoundationEssentials
package import Media
import PlaybackPipeline
package import PlaybackVocabulary

/// The engine's network streams: the tags heard in them, and the countdown of the watch
/// (``StreamWatch``) that skips a stream sending nothing.
///
/// The tags and the watch are the engine's state (``EngineState``); the engine hands in what
/// only the pipeline knows when the stall limit passes: what the sources sent, and which
/// stream playbin holds next.
extension Engine {
    /// The tags heard in the loaded stream so far.
    package var streamTags: StreamTags { state.streamTags }

    /// How long a network stream may send nothing before it is reported and skipped.
    package var stallLimit: Duration {
        get { state.streamWatch.stallLimit }
        set { run(state.setStallLimit(newValue)) }
    }

    /// Keeps the artwork found in the loaded stream (its file's URL), shown with its tags.
    package func keepStreamArtwork(_ url: String) {
        run(state.keepStreamArtwork(url))
    }

    /// The stall limit passed (see ``EngineState/streamStalled(_:at:bytes:now:)``).
    func streamStalled() {
        guard let wait = state.streamWatch.wait else { return }
        let bytes = pipeline.bytesFromSources
        let place = state.place(of: wait.entry, handedOver: pipeline.handoff.committedEntryID, now: .now)
        run(state.streamStalled(wait, at: place, bytes: bytes, now: .now))
    }
}
