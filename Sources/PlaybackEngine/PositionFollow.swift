import PlaybackPipeline
import PlaybackVocabulary

/// When the position clock asks the pipeline where it is, and when it takes the answer.
///
/// Pure: instants are handed in. While playing, the pipeline is asked at most once a second,
/// so that the clock follows an output slower (or faster) than real time; not in the two
/// seconds after a gapless switch, when playbin still reports the old stream's position.
/// It also keeps the furthest position clients were shown of the stream loaded (of each load,
/// and since each gapless switch): where an output failed is never before that.
struct PositionFollow: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// How long after a gapless switch the pipeline's answers are not taken.
    static let switchSettling = Duration.seconds(2)
    /// How far the pipeline's answer may be from the clock before the clock takes it.
    static let tolerance = Duration.milliseconds(250)

    /// When the last gapless switch happened (nil: since a load or a seek, none).
    private(set) var switchedAt: Instant?
    private var lastQuery: Instant?
    private var furthest: (load: Int, position: Duration)?

    /// A stream was loaded, or a seek asked for: its answers are its own.
    mutating func loaded() {
        switchedAt = nil
    }

    /// playbin switched to the next stream gaplessly at `now`: what was shown of the stream
    /// before it is not this one's.
    mutating func switched(at now: Instant) {
        switchedAt = now
        furthest = nil
    }

    /// Whether to ask the pipeline where it is now (and if so, the asking is counted).
    mutating func shouldQuery(now: Instant, isPlaying: Bool) -> Bool {
        guard isPlaying, switchedAt.map({ now - $0 > Self.switchSettling }) ?? true else { return false }
        if let lastQuery, now - lastQuery < .seconds(1) { return false }
        lastQuery = now
        return true
    }

    /// Whether the clock takes the pipeline's answer `reported`, given `at`, where the clock
    /// puts the stream at that moment (`predicted`): only a drift beyond ``tolerance``, and
    /// never an answer about the stream a gapless switch just left. `nextTaken`: playbin
    /// holds the next stream's URI, so it may already play it while its STREAM_START is on
    /// its way to the main actor: an answer further back than ``switchSettling`` is that
    /// stream's, and taking it would show its position beside the current track's metadata.
    func follows(_ reported: Duration, predicted: Duration, at: Instant, nextTaken: Bool = false) -> Bool {
        if let switchedAt, at - switchedAt < Self.switchSettling { return false }
        let drift = reported - predicted
        if nextTaken, drift < .zero - Self.switchSettling { return false }
        return drift > Self.tolerance || drift < .zero - Self.tolerance
    }

    /// Clients were shown `position` of load number `load`.
    mutating func shown(_ position: Duration, load: Int) {
        if let furthest, furthest.load == load {
            self.furthest = (load, max(furthest.position, position))
        } else {
            furthest = (load, position)
        }
    }

    /// The furthest position shown of load number `load`, if any was.
    func furthestShown(load: Int) -> Duration? {
        furthest.flatMap { $0.load == load ? $0.position : nil }
    }
}
