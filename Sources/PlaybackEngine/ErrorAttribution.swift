import Media
import PlaybackPipeline

/// Whose a pipeline error or warning is, and whether it is worth a line in the log.
///
/// Pure. When the stream handed over for a gapless switch fails, its decoder bin can go on
/// posting errors: those are echoes of the failure already handled, and are ignored. A
/// warning that no output is reachable is told once; decodebin's note on a stream it skips
/// on purpose (video, pictures, subtitles) is no problem at all.
struct ErrorAttribution: Sendable, Equatable {
    /// What a warning is.
    enum Warning: Sendable, Equatable {
        /// No sound server or device is reachable, heard for the first time.
        case noOutput
        /// No output is reachable, heard before: said once is enough.
        case noOutputAgain
        /// A stream not decoded, on purpose: nothing is wrong.
        case notDecoded
        case other
    }

    /// The decoder bin of a handed-over stream that failed: its later errors are echoes.
    private(set) var ignoredSource: ElementPath?
    private var warnedAboutNoOutput = false

    /// Whether an error from `source` is an echo of a stream already handled: it comes from
    /// inside that stream's decoder bin.
    func isEcho(_ source: ElementPath) -> Bool {
        ignoredSource.map { source.isInside($0) } ?? false
    }

    /// The handed-over stream failed with an error from `source`: later errors from its
    /// decoder bin are echoes.
    mutating func handOverFailed(source: ElementPath) {
        ignoredSource = source.decoderBin
    }

    /// A load starts: playbin may make its decoder bins again under the names the failed one
    /// had, and their errors are new ones.
    mutating func loadStarted() {
        ignoredSource = nil
    }

    /// What a warning `message` from element `source` (its name) is.
    mutating func classify(warning message: String, source: String) -> Warning {
        if source.contains("audio-sink") || source.contains("autoaudiosink") {
            defer { warnedAboutNoOutput = true }
            return warnedAboutNoOutput ? .noOutputAgain : .noOutput
        }
        return Self.isSkippedStreamNotice(message) ? .notDecoded : .other
    }

    /// Whether a warning is decodebin's "No decoder available for type '…'" about a stream
    /// that is never decoded (video, pictures, subtitles). The caps are quoted in the
    /// message whatever its language.
    static func isSkippedStreamNotice(_ message: String) -> Bool {
        [
            "'video/", "'image/", "'text/", "'subpicture/", "'subtitle/", "'closedcaption/", "'application/x-ssa",
            "'application/x-ass", "'application/x-subtitle",
        ]
        .contains { message.contains($0) }
    }
}
