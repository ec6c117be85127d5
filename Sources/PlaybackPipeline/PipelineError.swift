internal import CGStreamer
import PlaybackVocabulary

/// An element's place in the pipeline, read from GStreamer's object path
/// (`/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1/GstFlacDec:flacdec0`): each
/// element from the top down, by type and name. Whose an error is, is decided on these.
package struct ElementPath: Sendable, Equatable, CustomStringConvertible {
    /// One element of the path.
    package struct Element: Sendable, Equatable {
        /// Its GType name (`GstFlacDec`).
        package var type: String
        /// Its name in the pipeline (`flacdec0`).
        package var name: String
    }

    /// The elements from the pipeline down to the one the path names.
    package var elements: [Element]

    /// The path GStreamer wrote; an element without a `Type:` part is taken by its name.
    package init(_ path: String) {
        elements = path.split(separator: "/").map { part in
            guard let colon = part.firstIndex(of: ":") else { return Element(type: "", name: String(part)) }
            return Element(type: String(part[..<colon]), name: String(part[part.index(after: colon)...]))
        }
    }

    init(elements: [Element]) { self.elements = elements }

    /// The path as GStreamer writes it.
    package var description: String {
        elements.map { $0.type.isEmpty ? "/\($0.name)" : "/\($0.type):\($0.name)" }.joined()
    }

    /// Whether the path names the audio output: a sink (`GstPulseSink`, `GstAlsaSink`, a file
    /// sink) inside playbin's sink bin or the `audio-sink` given. A converter in front of it
    /// failing is the track's problem (a format it cannot take), not the output's.
    package var isOutput: Bool {
        guard let element = elements.last, element.type.hasSuffix("Sink") else { return false }
        return elements.contains { $0.type == "GstPlaySink" || $0.name == "quaver-audio-sink" }
    }

    /// The URI decoder bin the element is inside (a stream's own source and decoders), if any.
    package var decoderBin: ElementPath? {
        guard let index = elements.firstIndex(where: { $0.type == "GstURIDecodeBin" }) else { return nil }
        return ElementPath(elements: Array(elements[...index]))
    }

    /// Whether the element is `other` or inside it.
    package func isInside(_ other: ElementPath) -> Bool {
        elements.count >= other.elements.count && Array(elements.prefix(other.elements.count)) == other.elements
    }

    /// Whether the element is a network source reading over HTTP (`GstSoupHTTPSrc`).
    var isHTTPSource: Bool { elements.last.map { $0.type.lowercased().hasSuffix("httpsrc") } ?? false }
}

/// An error the pipeline reported, as GStreamer said it: its GError's domain and code, the
/// element that posted it, the URI it was about. What the log says, and whose fault it is,
/// are decided on these.
package struct PipelineError: Sendable, Equatable, CustomStringConvertible {
    /// The GError's domain, by GStreamer's four (`gst-core-error-quark` and the others).
    package enum Domain: Sendable, Equatable {
        case core, library, resource, stream
        /// Another domain, by its quark's name (an element's own, or Quaver's).
        case other(String)

        /// The domain named `name`.
        package init(_ name: String) {
            switch name {
            case "gst-core-error-quark": self = .core
            case "gst-library-error-quark": self = .library
            case "gst-resource-error-quark": self = .resource
            case "gst-stream-error-quark": self = .stream
            default: self = .other(name)
            }
        }
    }

    /// GStreamer's message (`Could not open resource for reading.`).
    package var message: String
    /// GStreamer's debug string (source file, function, element path), for developers.
    package var debug: String?
    /// The GError's domain.
    package var domain: Domain
    /// The GError's code within its domain (`GST_STREAM_ERROR_DECODE` and the like).
    package var code: Int32
    /// The element that posted it.
    package var source: ElementPath
    /// The URI that failed: the one the failing decoder reads (the stream handed over for a
    /// gapless switch, when it is that one's), else the one loaded; nil when nothing is.
    package var uri: String?
    /// The audio output failed (the sound server went away, the device was removed), not
    /// the track: a sink of the output posted it, or the output could not be made.
    package var inOutput: Bool

    /// An error with all its parts; `inOutput` defaults to whether `source` is the output.
    package init(
        message: String, debug: String? = nil, domain: Domain, code: Int32, source: ElementPath, uri: String? = nil,
        inOutput: Bool? = nil
    ) {
        self.message = message
        self.debug = debug
        self.domain = domain
        self.code = code
        self.source = source
        self.uri = uri
        self.inOutput = inOutput ?? source.isOutput
    }

    /// What the log says of it, in the listener's terms: GStreamer's message and, for a
    /// network source, the cause its debug string ends with ("Could not connect: Connection
    /// refused"), which the message ("Could not establish connection to server.") leaves out.
    package var reason: String {
        guard source.isHTTPSource else { return message }
        // With libsoup 3 (what desktops load), souphttpsrc turns a failed connection into a
        // bare flow error (GST_STREAM_ERROR_FAILED), and says why only in its debug log.
        if domain == .stream, code == Self.streamFailed, debug?.contains("reason error") == true {
            return "the connection to the server failed (refused, unreachable or dropped)"
        }
        guard let detail = debug?.split(separator: "\n").last?.trimmingSpaces(), !detail.isEmpty,
            detail.count <= 200, !detail.hasPrefix(message.trimming(while: \.isPunctuation))
        else { return message }
        return "\(message) (\(detail))"
    }

    /// Whether the stream stopped because an element pushed into a pad nothing was linked
    /// to ("streaming stopped, reason not-linked"): a race as playbin links a stream, not a
    /// fault of the data.
    package var stoppedUnlinked: Bool {
        domain == .stream && code == Self.streamFailed && debug?.contains("reason not-linked") == true
    }

    /// `GST_STREAM_ERROR_FAILED`: a stream's data stopped flowing (its element says why in
    /// its debug string).
    package static let streamFailed = Int32(GST_STREAM_ERROR_FAILED.rawValue)

    /// One line for the developer-level log: the domain and code with the message and the
    /// element.
    package var description: String {
        let domainName: String =
            switch domain {
            case .core: "core"
            case .library: "library"
            case .resource: "resource"
            case .stream: "stream"
            case .other(let name): name
            }
        return "\(domainName) error \(code) from \(source): \(message)"
    }
}
