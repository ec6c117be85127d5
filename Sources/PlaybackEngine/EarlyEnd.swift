import Media
import PlaybackPipeline
import PlaybackVocabulary

/// Whether the end of a local file's stream is its real end.
///
/// Pure; the engine asks it at each end of stream. GStreamer can end a stream it never
/// played: a gapless switch into a file, after one that decoded to nothing (libav's ALAC of
/// half a second), passes on the EOS of the stream before, and playbin ends the new one at
/// its first sample. A local file that ends more than ``margin`` before its known length is
/// loaded again, once, where it ended, from NULL (the engine's part: a reload through READY
/// can end at once again); ending early again, it has ended (a file shorter than its header
/// says), and what follows plays.
struct EarlyEnd: Sendable, Equatable {
    /// How far before its known length a stream may end and still have played to its end
    /// (the position clock and a header's duration disagree by a fraction of a second).
    static let margin = Duration.seconds(1.5)

    /// What an end of stream leads to.
    enum Decision: Sendable, Equatable {
        /// It played to its end: what follows plays.
        case ended
        /// It ended at `position`, far before its length: load it again there.
        case reload(at: Duration)
        /// It ended early again after being loaded again: what follows plays.
        case endedEarlyAgain
    }

    /// The entry loaded again for ending early, until it ends once more.
    private(set) var reloaded: UInt64?

    /// The stream of `entry` ended at `position`; `length`: its known duration; `isLocal`: a
    /// file (a network stream ends when its server says).
    mutating func ended(_ entry: UInt64, at position: Duration, length: Duration?, isLocal: Bool) -> Decision {
        guard isLocal, let length, length - position > Self.margin else {
            reloaded = nil
            return .ended
        }
        if reloaded == entry {
            reloaded = nil
            return .endedEarlyAgain
        }
        reloaded = entry
        return .reload(at: max(position, .zero))
    }
}
