/// The flushing seeks sent since the last one completed, to tell whose ASYNC_DONE comes in.
///
/// Pure. Seeks sent faster than the pipeline completes them each end with an ASYNC_DONE;
/// one that lands far from the newest target belongs to an earlier seek, overtaken by the
/// one still on its way, and is not taken as the stream's new place.
struct SeeksInFlight: Sendable, Equatable {
    /// How far from the target a seek may land and still be the newest one's.
    static let tolerance = Duration.milliseconds(250)

    private(set) var count = 0

    /// A stream was loaded: no seek of it is on its way.
    mutating func loaded() {
        count = 0
    }

    mutating func sent() {
        count += 1
    }

    /// A seek completed, the stream landing at `landed` while the newest seek asked for
    /// `target`. False when it is an earlier seek's, with a later one still on its way.
    mutating func completed(landed: Duration?, target: Duration?) -> Bool {
        if count > 1, let target, let landed, landed - target > Self.tolerance || target - landed > Self.tolerance {
            count -= 1
            return false
        }
        count = 0
        return true
    }
}
