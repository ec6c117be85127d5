internal import CGStreamer
internal import CGStreamerShims
public import FoundationEssentials
internal import Media

/// Renders short tagged FLAC tracks with GStreamer: the built-in demo playlist, and the
/// media the tests play.
public enum TrackGenerator {
    /// The container and codec a track is written in, each with its own way of holding
    /// pictures (the tests read every one of them back).
    public enum Format: String, Sendable, CaseIterable {
        /// FLAC, pictures in PICTURE blocks.
        case flac
        /// MP3 with an ID3v2 tag, pictures in APIC frames.
        case mp3
        /// MP3 audio in an MP4 file, the picture in a `covr` atom.
        case m4a
        /// Vorbis in Ogg, pictures in METADATA_BLOCK_PICTURE comments.
        case ogg
        /// Opus in Ogg, pictures in METADATA_BLOCK_PICTURE comments.
        case opus

        /// The file name extension of a track in this format.
        public var fileExtension: String { rawValue }

        /// The encoding part of the pipeline; the element named `tagger` takes the tags.
        var encoder: String {
            switch self {
            case .flac: "flacenc name=tagger"
            case .mp3: "lamemp3enc ! id3v2mux name=tagger"
            case .m4a: "lamemp3enc ! mpegaudioparse ! mp4mux name=tagger"
            case .ogg: "vorbisenc name=tagger ! oggmux"
            case .opus: "audioresample ! opusenc name=tagger ! oggmux"
            }
        }
    }

    /// An image to embed in a track.
    public struct Picture: Sendable {
        /// What the picture shows, as its tag says.
        public enum Kind: Sendable {
            /// The album's front cover, the one players show.
            case frontCover
            /// The back cover.
            case backCover
            /// A picture of no stated kind.
            case other

            var imageType: GstTagImageType {
                switch self {
                case .frontCover: GST_TAG_IMAGE_TYPE_FRONT_COVER
                case .backCover: GST_TAG_IMAGE_TYPE_BACK_COVER
                case .other: GST_TAG_IMAGE_TYPE_UNDEFINED
                }
            }
        }

        /// The image's bytes (PNG or JPEG).
        public var data: Data
        /// What it shows.
        public var kind: Kind

        /// A picture of `kind` made of the image bytes `data`.
        public init(_ data: Data, kind: Kind = .frontCover) {
            self.data = data
            self.kind = kind
        }
    }

    /// One track to render: a sine tone and its tags.
    public struct Track: Sendable {
        /// The file's name in the folder it is written to.
        public var fileName: String
        /// The title tag.
        public var title: String
        /// The artist tag.
        public var artist: String
        /// The album tag.
        public var album: String
        /// The genre tag.
        public var genre: String
        /// The track number tag.
        public var trackNumber: Int
        /// The tone's pitch in Hz.
        public var frequency: Double
        /// The track's length.
        public var seconds: Double
        /// The container and codec it is written in.
        public var format: Format
        /// Embedded in this order.
        public var pictures: [Picture]

        /// A track of `seconds` of a `frequency` Hz tone, tagged with the rest.
        public init(
            fileName: String, title: String, artist: String, album: String, genre: String = "Test Tones",
            trackNumber: Int, frequency: Double, seconds: Double, format: Format = .flac, pictures: [Picture] = []
        ) {
            self.fileName = fileName
            self.title = title
            self.artist = artist
            self.album = album
            self.genre = genre
            self.trackNumber = trackNumber
            self.frequency = frequency
            self.seconds = seconds
            self.format = format
            self.pictures = pictures
        }
    }

    /// The demo playlist: a few gentle tones, tagged so every widget has something to show.
    public static let demo: [Track] = [
        Track(
            fileName: "01 A Quiet A.flac", title: "A Quiet A", artist: "Quaver", album: "Quaver Demo", trackNumber: 1,
            frequency: 440, seconds: 30),
        Track(
            fileName: "02 Middle C.flac", title: "Middle C", artist: "Quaver", album: "Quaver Demo", trackNumber: 2,
            frequency: 261.63, seconds: 30),
        Track(
            fileName: "03 E Above.flac", title: "E Above", artist: "Quaver", album: "Quaver Demo", trackNumber: 3,
            frequency: 329.63, seconds: 30),
    ]

    /// Tracks named "Track N" by "Artist N" on "Test Album", N from 1.
    public static func numbered(count: Int, seconds: Double, format: Format = .flac) -> [Track] {
        (1...max(count, 1)).map { n in
            Track(
                fileName: "\(n.zeroPadded(to: 2)) Track \(n).\(format.fileExtension)", title: "Track \(n)",
                artist: "Artist \(n)",
                album: "Test Album", trackNumber: n, frequency: 220 * Double(n + 1), seconds: seconds, format: format)
        }
    }

    /// Writes `tracks` into `folder` (created if needed), skipping files that already exist.
    /// Returns the files in order.
    public static func generate(_ tracks: [Track], into folder: URL) throws -> [URL] {
        GStreamer.initialize()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var files: [URL] = []
        for track in tracks {
            let file = folder.appendingPathComponent(track.fileName)
            files.append(file)
            if FileManager.default.fileExists(atPath: file.path) { continue }
            let partial = folder.appendingPathComponent("." + track.fileName + ".part")
            try render(track, to: partial)
            _ = try? FileManager.default.removeItem(at: file)
            try FileManager.default.moveItem(at: partial, to: file)
        }
        return files
    }

    /// A PNG (or JPEG) of `size` x `size` pixels of one colour (`0xRRGGBB`): a cover image
    /// whose bytes differ with the colour.
    public static func image(color: UInt32, size: Int = 32, jpeg: Bool = false) throws -> Data {
        GStreamer.initialize()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-image-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let description = """
            videotestsrc num-buffers=1 pattern=solid-color foreground-color=\(0xFF00_0000 | (color & 0xFF_FFFF)) \
            ! video/x-raw,width=\(size),height=\(size) ! videoconvert ! \(jpeg ? "jpegenc" : "pngenc") ! filesink name=out
            """
        try run(description, what: "an image") { bin in
            guard let sink = gst_bin_get_by_name(bin, "out") else { throw MediaError("image pipeline is incomplete") }
            defer { gst_object_unref(sink) }
            cshims_object_set_string(sink, "location", file.path)
        }
        return try Data(contentsOf: file)
    }

    private static func render(_ track: Track, to file: URL) throws {
        let samplesPerBuffer = 4410
        let buffers = Int((track.seconds * 44100 / Double(samplesPerBuffer)).rounded(.up))
        let description = """
            audiotestsrc wave=sine volume=0.25 freq=\(track.frequency) samplesperbuffer=\(samplesPerBuffer) num-buffers=\(buffers) \
            ! audio/x-raw,rate=44100,channels=2 ! audioconvert ! taginject name=tags ! \(track.format.encoder) ! filesink name=out
            """
        try run(description, what: track.fileName) { bin in
            guard let tags = gst_bin_get_by_name(bin, "tags"), let sink = gst_bin_get_by_name(bin, "out"),
                let tagger = gst_bin_get_by_name(bin, "tagger")
            else {
                throw MediaError("generator pipeline is incomplete")
            }
            defer {
                gst_object_unref(tags)
                gst_object_unref(sink)
                gst_object_unref(tagger)
            }
            func quoted(_ s: String) -> String {
                "\"" + String(String.UnicodeScalarView(s.unicodeScalars.filter { $0 != "\\" && $0 != "\"" })) + "\""
            }
            let tagText =
                "title=\(quoted(track.title)),artist=\(quoted(track.artist)),album=\(quoted(track.album)),genre=\(quoted(track.genre)),track-number=(uint)\(track.trackNumber)"
            cshims_object_set_string(tags, "tags", tagText)
            cshims_object_set_string(sink, "location", file.path)
            try embed(track.pictures, in: tagger)
        }
    }

    /// Hands the pictures to the element that writes the tags (a GstTagSetter).
    private static func embed(_ pictures: [Picture], in tagger: UnsafeMutablePointer<GstElement>) throws {
        guard !pictures.isEmpty else { return }
        guard let list = gst_tag_list_new_empty() else { throw MediaError("cannot make a tag list") }
        defer { gst_tag_list_unref(list) }
        for picture in pictures {
            let sample = picture.data.withUnsafeBytes { bytes in
                gst_tag_image_data_to_image_sample(
                    bytes.baseAddress?.assumingMemoryBound(to: guint8.self), guint(bytes.count), picture.kind.imageType)
            }
            guard let sample else { throw MediaError("GStreamer does not take the picture as an image") }
            var value = GValue()
            g_value_init(&value, gst_sample_get_type())
            g_value_take_boxed(&value, UnsafeRawPointer(sample))
            gst_tag_list_add_value(list, GST_TAG_MERGE_APPEND, GST_TAG_IMAGE, &value)
            g_value_unset(&value)
        }
        gst_tag_setter_merge_tags(OpaquePointer(tagger), list, GST_TAG_MERGE_APPEND)
    }

    /// Runs a pipeline to its end; `configure` sets its elements up first.
    private static func run(
        _ description: String, what: String, configure: (UnsafeMutablePointer<GstBin>) throws -> Void
    ) throws {
        let (parsed, error) = GStreamerError.catching { gst_parse_launch(description, &$0) }
        guard let pipeline = parsed else {
            throw MediaError("cannot build the generator pipeline: \(error?.message ?? "?")")
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        try configure(OpaquePointer(pipeline).bin)
        guard gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE else {
            throw MediaError("cannot start the generator pipeline (is gstreamer1.0-plugins-good installed?)")
        }
        let bus = gst_element_get_bus(pipeline)
        defer { gst_object_unref(bus) }
        let types = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, 60 * 1_000_000_000, types) else {
            throw MediaError("rendering \(what) timed out")
        }
        defer { gst_message_unref(message) }
        if message.pointee.type == GST_MESSAGE_ERROR {
            throw MediaError("rendering \(what) failed: \(GStreamerError.of(message).error?.message ?? "?")")
        }
    }
}
