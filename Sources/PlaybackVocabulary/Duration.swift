package import Dispatch

extension Duration {
    /// `m:ss` (`1:05`), as log lines give a place in a track.
    public var clock: String {
        let seconds = max(Int(components.seconds), 0)
        return "\(seconds / 60):" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)"
    }

    /// The length in whole nanoseconds, as GStreamer's clock times count.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The same length as Dispatch takes it (a deadline's offset, a timeout).
    package var dispatchInterval: DispatchTimeInterval { .nanoseconds(Int(nanoseconds)) }
}
