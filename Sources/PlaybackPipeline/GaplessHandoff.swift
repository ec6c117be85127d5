internal import CGStreamer
internal import CGStreamerShims
package import Media
package import PlaybackVocabulary

/// The next URI for gapless playback, answered by the main actor and read by GStreamer's
/// `about-to-finish` handler on a streaming thread. The lock is the only shared state.
///
/// playbin asks for the next URI as soon as it has read the current one, which for a short
/// track, or an output faster than real time (a file rendered with `wavenc ! filesink`),
/// is milliseconds after that track started. The main actor answers for each load as it
/// starts it, and for a track handed over once it hears of the switch to it, so the handler
/// waits for that answer, at most ``answerWait``, rather than let the stream end for want of
/// it. The wait is on GStreamer's streaming thread, never on the main actor, and never when
/// the answer is already given.
///
/// A stream that has sent no decoded audio to the output since it started is not handed
/// over from: it has nothing to join, and GStreamer's switch out of it (libav's half-second
/// ALAC, which decodes to nothing) ends the next stream at its first sample. playbin then
/// ends the stream, and the owner loads what follows afresh.
package final class GaplessHandoff: Sendable {
    package struct Item: Sendable, Equatable {
        package var entryID: UInt64
        package var uri: String
        /// The gain the stream plays at, applied when it starts.
        package var loudness: LoudnessPlan?

        /// The entry `entryID` at `uri`, to play at `loudness`.
        package init(entryID: UInt64, uri: String, loudness: LoudnessPlan? = nil) {
            self.entryID = entryID
            self.uri = uri
            self.loudness = loudness
        }
    }

    /// What follows the stream in the pipeline, as the main actor knows it.
    package enum Answer: Sendable, Equatable {
        /// Not known yet (its tags are being read): the handler waits for the answer.
        case pending
        /// Nothing: the stream ends.
        case nothing
        /// This entry plays next.
        case item(Item)
    }

    /// The stream the handoff answers for.
    private enum Stream: Equatable {
        /// None: nothing is loaded yet, or the loaded stream is being taken down.
        case none
        /// The stream of load `number` is in the pipeline.
        case loaded(Int)
        /// The pipeline was released: no load arms the handoff again.
        case retired
    }

    /// What the handler hands playbin.
    private enum Reply {
        /// Nothing follows: the stream ends.
        case nothing
        case uri(String)
    }

    private struct State {
        var stream = Stream.none
        /// The handler is waiting for an answer.
        var asking = false
        /// How many URIs playbin took during this load.
        var taken = 0
        /// The main actor's answer, for the load and the number of URIs taken it was given at.
        var answer: (load: Int, taken: Int, value: Answer)?
        /// The item playbin took and has not started yet.
        var committed: Item?
        /// The decoded audio counted when playbin last took a URI in this load (zero before):
        /// the stream now ending has sent some when the count has grown since.
        var decodedAtLastTake: UInt64 = 0
        /// The loudness of the streams that start next, in the order they start: the loaded
        /// one's (until its stream starts), then the one handed over. playbin can take the
        /// next URI before the loaded stream has reached the audio filter.
        var upcomingLoudness: [LoudnessPlan?] = []

        /// The load whose stream is in the pipeline (nil: none, or it is being taken down).
        var load: Int? {
            if case .loaded(let number) = stream { return number }
            return nil
        }

        /// The answer given for what follows now, if any.
        var currentAnswer: Answer? {
            guard let load, let answer, answer.load == load, answer.taken == taken else { return nil }
            return answer.value
        }
    }
    private let state = Locked(State())

    /// How long `about-to-finish` waits for the main actor's answer.
    let answerWait: Duration
    /// The bytes of decoded audio that reached the output since the load began.
    private let decodedBytes: @Sendable () -> UInt64

    /// - Parameter answerWait: how long the `about-to-finish` handler waits for the main
    ///   actor to say what follows; under the pipeline's stuck limit, since a call into
    ///   GStreamer can wait on that handler.
    /// - Parameter decodedBytes: the pipeline's count of decoded audio that reached the
    ///   output since the load began, read on the streaming thread.
    init(answerWait: Duration, decodedBytes: @escaping @Sendable () -> UInt64) {
        self.answerWait = answerWait
        self.decodedBytes = decodedBytes
    }

    /// Main actor: what follows the stream of load `load`, the last one asked of the
    /// pipeline. Ignored while playbin holds a URI it took and has not started: the answer
    /// for what follows that one comes once the switch to it is heard.
    package func answer(_ value: Answer, load: Int) {
        state.withLockWakingWaiters { state in
            let taken = state.load == load ? state.taken : 0
            guard state.load != load || state.committed == nil else { return }
            state.answer = (load, taken, value)
        }
    }

    /// Streaming thread: hands over the URI that follows, waiting for the answer when it
    /// has not been given yet; nil when nothing follows, the stream is being taken down, or
    /// no answer came within ``answerWait``.
    func commit() -> String? {
        let decoded = decodedBytes()
        // Nil from the body: no answer yet, so the handler waits for one.
        let reply = state.withLock(waitingUpTo: answerWait) { state -> Reply? in
            state.asking = false
            guard state.load != nil, decoded > state.decodedAtLastTake else { return .nothing }
            switch state.currentAnswer {
            case nil, .pending?:
                state.asking = true
                return nil
            case .nothing?: return .nothing
            case .item(let item)?:
                state.committed = item
                state.taken += 1
                state.decodedAtLastTake = decoded
                state.upcomingLoudness.append(item.loudness)
                return .uri(item.uri)
            }
        }
        state.withLock { $0.asking = false }
        guard case .uri(let uri)? = reply else { return nil }
        return uri
    }

    /// Main actor, on stream start: the item that playbin switched to gaplessly, if any.
    package func takeCommitted() -> Item? {
        state.withLock { state in
            defer { state.committed = nil }
            return state.committed
        }
    }

    /// Main actor: whether playbin already took the next URI and has not started it yet.
    package var hasCommitted: Bool { state.withLock { $0.committed != nil } }

    /// Main actor: whether playbin took the next URI, or waits to be told it. A seek now
    /// would race the hand-over: the seek waits on the handler, and the URI answered
    /// meanwhile would follow the stream it moved.
    package var takesNext: Bool { state.withLock { $0.committed != nil || $0.asking } }

    /// Whether the handler is waiting for an answer.
    var isAsking: Bool { state.withLock { $0.asking } }

    /// Main actor: the entry whose URI playbin took and has not started yet.
    package var committedEntryID: UInt64? { state.withLock { $0.committed?.entryID } }

    /// Main actor: what playbin took and has not started yet.
    package var committedItem: Item? { state.withLock { $0.committed } }

    /// Before the stream in the pipeline is taken down (on the pipeline's queue), or the
    /// pipeline released (`retiring`, from any thread): a handler still waiting for an answer
    /// stops waiting, and nothing is handed over until the next load, or ever after a release.
    func abandon(retiring: Bool = false) {
        state.withLockWakingWaiters { state in
            state.stream = retiring || state.stream == .retired ? .retired : .none
            state.committed = nil
            state.upcomingLoudness = []
        }
    }

    /// Pipeline queue, once load `number` is in the pipeline: nothing is taken yet, an
    /// answer already given for it stands, and its loudness comes first.
    func loaded(_ number: Int, loudness: LoudnessPlan?) {
        state.withLockWakingWaiters { state in
            guard state.stream != .retired else { return }
            state.stream = .loaded(number)
            state.taken = 0
            state.decodedAtLastTake = 0
            state.committed = nil
            state.upcomingLoudness = [loudness]
        }
    }

    /// Streaming thread, as a stream starts in the audio filter: its loudness (`known` false
    /// when none was given for it, and the one applied goes on).
    func streamStarts() -> (known: Bool, plan: LoudnessPlan?) {
        state.withLock { state in
            guard !state.upcomingLoudness.isEmpty else { return (false, nil) }
            return (true, state.upcomingLoudness.removeFirst())
        }
    }
}
