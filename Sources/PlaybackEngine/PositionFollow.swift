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
    /// The pipeline's first answer of this stretch of steady pace (since a load, a seek, a
    /// switch, a pause, or a change of the output's pace), and when it held: the pace is
    /// measured from there, over a window that grows, since a slow output moves in bursts that
    /// make short windows noisy.
    private var lastAnswer: (position: Duration, at: Instant)?
    /// The answer the clock last took the pipeline's word at.
    private var lastCorrection: (position: Duration, at: Instant)?
    /// How far the pace since the last correction may differ from the stretch's before the
    /// output counts as having changed its pace (a stretch measured anew from there).
    static let paceChange = 0.1

    /// How far apart two answers are for the pace between them to count: closer ones are
    /// mostly the jitter of when each was taken.
    static let paceWindow = Duration.milliseconds(800)

    /// A stream was loaded, or a seek asked for: its answers are its own.
    mutating func loaded() {
        switchedAt = nil
        paceInterrupted()
    }

    /// playbin switched to the next stream gaplessly at `now`: what was shown of the stream
    /// before it is not this one's.
    mutating func switched(at now: Instant) {
        switchedAt = now
        furthest = nil
        paceInterrupted()
    }

    /// Playback paused or changed rate: the pace is measured anew.
    mutating func paceInterrupted() {
        lastAnswer = nil
        lastCorrection = nil
    }

    /// The pipeline answered `reported` as of `at`.
    mutating func answered(_ reported: Duration, at: Instant) {
        if lastAnswer == nil { lastAnswer = (reported, at) }
    }

    /// The clock takes the pipeline's word `reported` as of `at`: how fast the position has
    /// moved, in seconds of media a second (nil: not measured over ``paceWindow`` yet). Over
    /// the stretch, unless the pace since the last correction differs by ``paceChange`` (the
    /// output sped up or slowed down): then over that, which starts a new stretch.
    mutating func corrected(to reported: Duration, at: Instant) -> Double? {
        defer { lastCorrection = (reported, at) }
        func pace(since start: (position: Duration, at: Instant)?) -> Double? {
            guard let start, at - start.at >= Self.paceWindow else { return nil }
            return (reported - start.position) / (at - start.at)
        }
        let stretch = pace(since: lastAnswer)
        guard let recent = pace(since: lastCorrection), let stretch, abs(recent - stretch) > Self.paceChange else {
            return stretch
        }
        lastAnswer = lastCorrection
        return recent
    }

    /// The pace over the stretch so far, were the clock to take `reported` as of `at`, and
    /// how long the stretch is (nil: not measured over ``paceWindow`` yet). Changes nothing:
    /// the clock's rate follows it while the position stays within ``tolerance``.
    func stretchPace(to reported: Duration, at: Instant) -> (pace: Double, over: Duration)? {
        guard let start = lastAnswer, at - start.at >= Self.paceWindow else { return nil }
        return ((reported - start.position) / (at - start.at), at - start.at)
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
