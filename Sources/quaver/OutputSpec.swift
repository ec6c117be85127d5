import PlaybackPipeline

/// Where `--output`, or `output =` in `quaver.conf`, sends the audio: for now, a Snapcast
/// server's pipe source (`snapcast:PATH`, with `?sampleformat=RATE:BITS:CHANNELS` when the
/// source reads another format than snapserver's default, 48000:16:2).
enum OutputSpec: Equatable, CustomStringConvertible {
    /// snapserver's pipe source at `path`, read in `format`.
    case snapcastPipe(path: String, format: SnapcastSampleFormat)

    /// Why a value names no output, said to the user.
    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    /// The output `text` names.
    init(parsing text: String) throws(ParseError) {
        let scheme = "snapcast:"
        guard text.hasPrefix(scheme) else {
            throw ParseError(
                description:
                    "\"\(text)\" names no output; the outputs are snapcast:PATH (snapserver's pipe source), and --audio-sink takes any GStreamer sink"
            )
        }
        let rest = text.dropFirst(scheme.count)
        if rest.hasPrefix("tcp://") {
            throw ParseError(
                description:
                    "snapserver's TCP source (\(text)) is not supported yet; use its pipe source: snapcast:/path/of/the/pipe"
            )
        }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0].hasPrefix("//") ? parts[0].dropFirst(2) : parts[0])
        guard path.hasPrefix("/") else {
            throw ParseError(description: "snapcast: takes the absolute path of snapserver's pipe, not \"\(path)\"")
        }
        var format = SnapcastSampleFormat.standard
        for field in parts.count > 1 ? parts[1].split(separator: "&") : [] {
            let pair = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0] == "sampleformat", let named = SnapcastSampleFormat(pair[1]) else {
                throw ParseError(
                    description:
                        "snapcast: takes only sampleformat=RATE:BITS:CHANNELS after the path (as snapserver's source says it, e.g. 44100:16:2; bits 16, 24 or 32; channels 1, 2, 4 or 8), not \"\(field)\""
                )
            }
            format = named
        }
        self = .snapcastPipe(path: path, format: format)
    }

    var description: String {
        switch self {
        case .snapcastPipe(let path, let format):
            format == .standard ? "snapcast:\(path)" : "snapcast:\(path)?sampleformat=\(format)"
        }
    }

    /// Opens the output.
    /// - Throws: ``Pipeline/SetupError`` naming what is wrong (a pipe that does not exist, or
    ///   is not a pipe).
    func open() throws(Pipeline.SetupError) -> AudioOutput {
        switch self {
        case .snapcastPipe(let path, let format):
            let pipe = try SnapcastPipe.open(path: path, format: format)
            return .snapcast(pipe)
        }
    }
}
