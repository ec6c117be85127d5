import PlaybackPipeline

/// Where `--output`, or `output =` in `quaver.conf`, sends the audio: for now, a Snapcast
/// server's pipe source (`snapcast:PATH`) or TCP source (`snapcast:tcp://HOST:PORT`), with
/// `?sampleformat=RATE:BITS:CHANNELS` when the source reads another format than snapserver's
/// default, 48000:16:2.
enum OutputSpec: Equatable, CustomStringConvertible {
    /// snapserver's pipe source at `path`, read in `format`.
    case snapcastPipe(path: String, format: SnapcastSampleFormat)
    /// snapserver's TCP source, listening at `host`:`port`, read in `format`.
    case snapcastTCP(host: String, port: Int, format: SnapcastSampleFormat)

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
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var tcp: (host: String, port: Int)?
        var path = ""
        if parts[0].hasPrefix("tcp://") {
            let place = parts[0].dropFirst("tcp://".count)
            guard let colon = place.lastIndex(of: ":"), let port = Int(place[place.index(after: colon)...]),
                (1...65535).contains(port), colon > place.startIndex
            else {
                throw ParseError(description: "snapcast:tcp:// takes HOST:PORT, as in snapcast:tcp://127.0.0.1:4953")
            }
            tcp = (String(place[..<colon]), port)
        } else {
            path = String(parts[0].hasPrefix("//") ? parts[0].dropFirst(2) : parts[0])
            guard path.hasPrefix("/") else {
                throw ParseError(
                    description:
                        "snapcast: takes the absolute path of snapserver's pipe, or tcp://HOST:PORT, not \"\(path)\"")
            }
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
        self =
            tcp.map { .snapcastTCP(host: $0.host, port: $0.port, format: format) }
            ?? .snapcastPipe(path: path, format: format)
    }

    var description: String {
        switch self {
        case .snapcastPipe(let path, let format):
            format == .standard ? "snapcast:\(path)" : "snapcast:\(path)?sampleformat=\(format)"
        case .snapcastTCP(let host, let port, let format):
            "snapcast:tcp://\(host):\(port)" + (format == .standard ? "" : "?sampleformat=\(format)")
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
        case .snapcastTCP(let host, let port, let format):
            let connection = try SnapcastConnection.open(host: host, port: port, format: format)
            return .snapcastTCP(connection)
        }
    }
}
