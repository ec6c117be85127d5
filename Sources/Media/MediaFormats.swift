internal import CGStreamer
internal import CGStreamerShims
import PlaybackVocabulary

/// A kind of file found in users' music libraries, and whether this machine's GStreamer can
/// play it.
///
/// Whether a format plays is read from GStreamer's registry, the way decodebin itself picks
/// elements: for each stream the file holds on the way to raw audio (its container, then its
/// codec), some demuxer, parser or decoder of at least marginal rank must take that stream's
/// caps. An element of video, images or subtitles does not count, since Quaver never uses one.
/// What is missing is named with the Debian package that adds it.
public struct MediaFormat: Sendable, Hashable {
    /// What users call it: `M4A (ALAC)`.
    public let name: String
    /// The file extensions it comes in, without the dot, lowercased.
    public let extensions: [String]
    /// Whether it is a video container, of which Quaver plays the audio.
    public let isVideo: Bool
    /// The streams decodebin must find an element for, in order.
    let steps: [Step]

    /// One stream on the way to raw audio.
    struct Step: Sendable, Hashable {
        /// The stream's caps, as GStreamer's type finder or the demuxer before it gives them.
        let caps: String
        /// The Debian package whose plugin takes it.
        let package: String
        /// Whether a decoder must take it (a codec), or a demuxer or parser may (a container).
        var isCodec = true
    }

    /// Whether this machine can play a format.
    public enum Support: Sendable, Hashable {
        /// Every stream on the way to raw audio has an element.
        case playable
        /// Some stream has none; `packages` add what is missing, in the order needed.
        case missing(packages: [String])
    }

    /// Whether GStreamer, as its registry stands now, can play this format.
    public var support: Support {
        GStreamer.initialize()
        var packages: [String] = []
        for step in steps where !Self.hasElement(taking: step) && !packages.contains(step.package) {
            packages.append(step.package)
        }
        return packages.isEmpty ? .playable : .missing(packages: packages)
    }

    /// Whether some element of at least marginal rank, other than one of video, images or
    /// subtitles, takes the stream of `step` on its sink pad: a decoder for a codec, a demuxer
    /// or parser for a container.
    static func hasElement(taking step: Step) -> Bool {
        guard let parsed = gst_caps_from_string(step.caps) else { return false }
        defer { gst_caps_unref(parsed) }
        let kinds = step.isCodec ? cshims_factory_type_decoder() : cshims_factory_type_container()
        let all = gst_element_factory_list_get_elements(kinds, GST_RANK_MARGINAL)
        defer { gst_plugin_feature_list_free(all) }
        let taking = gst_element_factory_list_filter(all, parsed, GST_PAD_SINK, 0)
        defer { gst_plugin_feature_list_free(taking) }
        var node = taking
        while let current = node {
            if let factory = current.pointee.data, cshims_factory_is_non_audio(OpaquePointer(factory)) == 0 {
                return true
            }
            node = current.pointee.next
        }
        return false
    }

    private static let base = "gstreamer1.0-plugins-base"
    private static let good = "gstreamer1.0-plugins-good"
    private static let bad = "gstreamer1.0-plugins-bad"
    private static let ugly = "gstreamer1.0-plugins-ugly"
    private static let libav = "gstreamer1.0-libav"

    private static let ogg = Step(caps: "audio/ogg", package: base, isCodec: false)
    private static let vorbis = Step(caps: "audio/x-vorbis", package: base)
    private static let opus = Step(caps: "audio/x-opus", package: base)
    private static let m4a = Step(caps: "audio/x-m4a", package: good, isCodec: false)
    private static let aac = Step(caps: "audio/mpeg, mpegversion=(int)4, stream-format=(string)raw", package: libav)
    private static let apeTag = Step(caps: "application/x-apetag", package: good, isCodec: false)

    /// The formats of users' libraries, audio first, then music videos.
    public static let all: [MediaFormat] = [
        MediaFormat(
            name: "MP3", extensions: ["mp3"], isVideo: false,
            steps: [Step(caps: "audio/mpeg, mpegversion=(int)1, layer=(int)3", package: good)]),
        MediaFormat(
            name: "FLAC", extensions: ["flac"], isVideo: false, steps: [Step(caps: "audio/x-flac", package: good)]),
        MediaFormat(name: "Ogg Vorbis", extensions: ["ogg", "oga"], isVideo: false, steps: [ogg, vorbis]),
        MediaFormat(name: "Opus", extensions: ["opus"], isVideo: false, steps: [ogg, opus]),
        MediaFormat(name: "M4A (AAC)", extensions: ["m4a", "m4b", "aac"], isVideo: false, steps: [m4a, aac]),
        MediaFormat(
            name: "M4A (ALAC)", extensions: ["m4a"], isVideo: false,
            steps: [m4a, Step(caps: "audio/x-alac", package: libav)]),
        MediaFormat(
            name: "AIFF", extensions: ["aif", "aiff", "aifc"], isVideo: false,
            steps: [Step(caps: "audio/x-aiff", package: bad, isCodec: false)]),
        MediaFormat(
            name: "WMA", extensions: ["wma"], isVideo: false,
            steps: [
                Step(caps: "video/x-ms-asf", package: ugly, isCodec: false),
                Step(caps: "audio/x-wma, wmaversion=(int)2", package: libav),
            ]),
        MediaFormat(
            name: "WavPack", extensions: ["wv"], isVideo: false,
            steps: [apeTag, Step(caps: "audio/x-wavpack", package: good)]),
        MediaFormat(
            name: "Musepack", extensions: ["mpc", "mp+", "mpp"], isVideo: false,
            steps: [apeTag, Step(caps: "audio/x-musepack, streamversion=(int)8", package: bad)]),
        MediaFormat(
            name: "APE (Monkey's Audio)", extensions: ["ape"], isVideo: false,
            steps: [
                Step(caps: "application/x-ape", package: libav, isCodec: false),
                Step(caps: "audio/x-ffmpeg-parsed-ape", package: libav),
            ]),
        MediaFormat(
            name: "MKA", extensions: ["mka"], isVideo: false,
            steps: [Step(caps: "audio/x-matroska", package: good, isCodec: false)]),
        MediaFormat(
            name: "WAV", extensions: ["wav", "wave"], isVideo: false,
            steps: [Step(caps: "audio/x-wav", package: good, isCodec: false)]),
        MediaFormat(
            name: "MP4 video (AAC)", extensions: ["mp4", "m4v"], isVideo: true,
            steps: [Step(caps: "video/quicktime", package: good, isCodec: false), aac]),
        MediaFormat(
            name: "MKV video (Opus)", extensions: ["mkv"], isVideo: true,
            steps: [Step(caps: "video/x-matroska", package: good, isCodec: false), opus]),
        MediaFormat(
            name: "WebM video (Opus)", extensions: ["webm"], isVideo: true,
            steps: [Step(caps: "video/webm", package: good, isCodec: false), opus]),
        MediaFormat(
            name: "Ogg video (Vorbis)", extensions: ["ogv"], isVideo: true,
            steps: [Step(caps: "video/ogg", package: base, isCodec: false), vorbis]),
    ]
}
