internal import CGStreamer
internal import CGStreamerShims

/// The next URI for gapless playback, prepared by the main actor and read by GStreamer's
/// `about-to-finish` handler on a streaming thread. The lock is the only shared state.
final class GaplessHandoff: Sendable {
    struct Item: Sendable, Equatable {
        var entryID: UInt64
        var uri: String
        /// The gain the stream plays at, applied when it starts.
        var loudness: LoudnessPlan?
    }
    private struct State {
        var prepared: Item?
        var committed: Item?
        /// The loudness of the streams that start next, in the order they start: the loaded
        /// one's (until its stream starts), then the one handed over. playbin can take the
        /// next URI before the loaded stream has reached the audio filter.
        var upcomingLoudness: [LoudnessPlan?] = []
    }
    private let state = Locked(State())

    /// Main actor: what should follow the current stream (nil: nothing, let it end).
    func prepare(_ item: Item?) { state.withLock { $0.prepared = item } }

    /// Streaming thread: hands over the prepared URI and remembers it was handed over.
    func commit() -> String? {
        state.withLock { state in
            guard let item = state.prepared else { return nil }
            state.committed = item
            state.prepared = nil
            state.upcomingLoudness.append(item.loudness)
            return item.uri
        }
    }

    /// Main actor, on stream start: the item that playbin switched to gaplessly, if any.
    func takeCommitted() -> Item? {
        state.withLock { state in
            defer { state.committed = nil }
            return state.committed
        }
    }

    /// Main actor: whether playbin already took the prepared URI and has not started it yet.
    var hasCommitted: Bool { state.withLock { $0.committed != nil } }

    /// Main actor: the entry whose URI playbin took and has not started yet.
    var committedEntryID: UInt64? { state.withLock { $0.committed?.entryID } }

    /// Main actor: forget everything (a new track is loaded by hand).
    func reset() { state.withLock { $0 = State() } }

    /// Pipeline queue, once a stream is loaded: its loudness comes first.
    func loaded(loudness: LoudnessPlan?) { state.withLock { $0.upcomingLoudness = [loudness] } }

    /// Streaming thread, as a stream starts in the audio filter: its loudness (`known` false
    /// when none was given for it, and the one applied goes on).
    func streamStarts() -> (known: Bool, plan: LoudnessPlan?) {
        state.withLock { state in
            guard !state.upcomingLoudness.isEmpty else { return (false, nil) }
            return (true, state.upcomingLoudness.removeFirst())
        }
    }
}
