import PlaybackPipeline
import PlaybackVocabulary

/// Where playback is, without asking the pipeline: the model of Apple's Now Playing guides.
///
/// An elapsed time, the rate it advances at, and the monotonic instant it was taken at. A
/// read extrapolates from that; events (a state reached, a seek done, a track change) take a
/// new snapshot. Reads never wait, and right after a seek the position is its target.
public struct PositionClock: Sendable, Equatable {
    /// The elapsed time at `stamp`.
    public private(set) var elapsed: Duration
    /// How fast `elapsed` advances: the playback rate while playing, 0 otherwise.
    public private(set) var rate: Double
    /// When `elapsed` was taken.
    public private(set) var stamp: ContinuousClock.Instant

    /// A clock standing at zero.
    public init(at stamp: ContinuousClock.Instant = .now) {
        elapsed = .zero
        rate = 0
        self.stamp = stamp
    }

    /// The position at `now`, extrapolated from the last snapshot; never negative.
    public func position(at now: ContinuousClock.Instant = .now) -> Duration {
        guard rate != 0, now > stamp else { return elapsed }
        return max(elapsed + (now - stamp) * rate, .zero)
    }

    /// Takes a snapshot: `elapsed` at `now`, advancing at `rate` (0: standing still).
    public mutating func set(_ elapsed: Duration, rate: Double, at now: ContinuousClock.Instant = .now) {
        self.elapsed = max(elapsed, .zero)
        self.rate = rate.isFinite ? rate : 0
        stamp = now
    }

    /// Keeps the position where it is at `now` and goes on at `rate` from there.
    public mutating func changeRate(to rate: Double, at now: ContinuousClock.Instant = .now) {
        set(position(at: now), rate: rate, at: now)
    }
}
