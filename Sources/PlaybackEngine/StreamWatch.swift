import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The watch over a network stream that may send nothing: when the wait began, how much the
/// pipeline's sources had sent when it was last armed, and the buffering level.
///
/// Pure: instants and byte counts are handed in, so a test can drive it. The owner starts a
/// timer of ``stallLimit`` whenever the watch is armed and asks for a
/// ``verdict(on:at:playing:bytes:now:)`` when it fires: a stream whose server sent nothing in
/// that time is stalled; one that did send is waited for again, a playing stream as long as
/// data comes, one yet to start up to ``startLimit`` from the start of the wait (which tells
/// a slow start from a silent server).
package struct StreamWatch: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    /// One wait for a stream to send.
    struct Wait: Sendable, Equatable {
        var entry: UInt64
        /// When the wait began: a restart for data that came keeps it.
        var began: Instant
        /// What the sources had sent when the watch was last armed.
        var bytes: UInt64
    }

    /// Where the watched stream is when the limit passes.
    enum Place: Sendable, Equatable {
        /// Loaded in the pipeline; `isSettled`: it has played (and is shown).
        case loaded(isSettled: Bool)
        /// Handed over to follow the loaded track gaplessly, not started yet;
        /// `previousPlays`: the track before it is still more than a moment from its end.
        case handedOver(previousPlays: Bool)
        /// Neither: taken down, or no longer handed over.
        case elsewhere
    }

    /// What to do when the limit passed.
    enum Verdict: Sendable, Equatable {
        /// Nothing: the stream is gone, or paused (Play watches it again).
        case leave
        /// Wait again, the wait counted from `since` (nil: from now, a new wait).
        case waitAgain(since: Instant?)
        /// The stream is reported, and skipped, for `reason`.
        case stalled(reason: String)
    }

    /// What a buffering level asks of the watch.
    enum Step: Sendable, Equatable { case arm, disarm, keep }

    /// How long a network stream may send nothing before it is reported and skipped.
    package var stallLimit: Duration
    /// How long a stream that does send, but too slowly (or to a machine too busy to start
    /// it), may take to start playing before it is skipped all the same.
    var startLimit: Duration { stallLimit * 3 }
    /// The wait in progress (nil: the watch is disarmed).
    private(set) var wait: Wait?
    /// The loaded stream's last buffering level (-1: none heard since it began).
    private(set) var bufferingPercent = -1

    init(stallLimit: Duration = .seconds(10)) {
        self.stallLimit = stallLimit
    }

    /// (Re)starts the wait for `entry`, the sources having sent `bytes`. The wait began
    /// `since` when given, else when the running wait began, else now.
    mutating func arm(_ entry: UInt64, bytes: UInt64, now: Instant, since: Instant? = nil) {
        wait = Wait(entry: entry, began: since ?? wait?.began ?? now, bytes: bytes)
    }

    mutating func disarm() {
        wait = nil
    }

    /// A stream starts in the pipeline: its buffering level is not known yet.
    mutating func streamBegan() {
        bufferingPercent = -1
    }

    /// The buffering level of the loaded stream while it should play. Full means the server
    /// did send: once the stream has played (`isSettled`) that ends the watch; before, the
    /// pipeline gets the whole limit again to start it. Otherwise the watch starts when the
    /// level first drops, and starts again whenever it rises (data came).
    mutating func buffering(_ percent: Int, isSettled: Bool) -> Step {
        defer { bufferingPercent = percent }
        if percent >= 100 { return isSettled ? .disarm : .arm }
        return wait == nil || percent > bufferingPercent ? .arm : .keep
    }

    /// The limit passed on `wait`, the stream being at `place`, the commands leading to
    /// playing (`playing`) or not, and the sources having sent `bytes` by `now`. A stream
    /// paused by hand while it buffered is left be (Play fills the buffer, and watches,
    /// again); a handed-over one waits for the track before it to end.
    func verdict(on wait: Wait, at place: Place, playing: Bool, bytes: UInt64, now: Instant) -> Verdict {
        let isLoaded: Bool
        let isSettled: Bool
        switch place {
        case .elsewhere:
            return .leave
        case .loaded(let settled):
            guard playing || !settled else { return .leave }
            (isLoaded, isSettled) = (true, settled)
        case .handedOver(let previousPlays):
            guard playing else { return .leave }
            if previousPlays { return .waitAgain(since: nil) }
            (isLoaded, isSettled) = (false, false)
        }
        // Data came, or a full buffer waits for the pipeline to start: the server is not silent.
        let sending = bytes > wait.bytes || (isLoaded && bufferingPercent >= 100 && !isSettled)
        if sending && (isSettled || now - wait.began < startLimit) { return .waitAgain(since: wait.began) }
        if sending {
            return .stalled(
                reason: "the stream did not start within \(Self.seconds(startLimit)), though the server sends")
        }
        if isSettled {
            return .stalled(reason: "the stream stalled: nothing from the server for \(Self.seconds(stallLimit))")
        }
        return .stalled(reason: "no audio from the server within \(Self.seconds(stallLimit))")
    }

    /// `10 s`, `1.5 s`: a limit as the log names it.
    static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration.nanoseconds) / 1e9
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
