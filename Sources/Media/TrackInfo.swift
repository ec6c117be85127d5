internal import CGStreamer
internal import CGStreamerShims
import Dispatch
import FoundationEssentials
import Glibc

/// What a media file says about itself: tags and duration, read before it plays.
public struct TrackInfo: Sendable, Equatable {
    public var title: String?
    public var artists: [String] = []
    public var album: String?
    public var albumArtists: [String] = []
    public var genres: [String] = []
    public var trackNumber: Int?
    public var discNumber: Int?
    public var duration: Duration?
    public var audioStreams = 0
    public var videoStreams = 0
    public var isSeekable = true
    public var isLive = false
    /// A `file://` URL of the cover image in the artwork cache (never image bytes: a queue
    /// may hold 100,000 entries).
    public var artworkURL: String?
    /// Whether artwork was looked for (embedded, then beside the file) when this was read.
    public var artworkSearched = false
    /// The size in bytes of the largest embedded picture over `ArtworkCache.maximumImageBytes`,
    /// if the tags hold one. GStreamer keeps several copies of such a picture while the file
    /// is loaded, and after a gapless switch still in playbin's previous group, until the
    /// pipeline goes to READY.
    public var oversizedPictureBytes: Int?
    /// The ReplayGain values of the tags (Opus R128 gains converted), if they hold any.
    public var replayGain: ReplayGainTags?
    /// For a local file without ReplayGain values: its path, size and modification time when
    /// it was read, which its measured loudness is kept under. Taken with the tags, off the
    /// main actor, so that no file is looked at there when the track is loaded.
    public var signature: TrackSignature?

    public init() {}
}

/// Why a file cannot be played.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// The file was not read in time: a busy machine, not proof that it is broken.
    public var isTimeout = false
    public init(_ reason: String, isTimeout: Bool = false) {
        self.reason = reason
        self.isTimeout = isTimeout
    }
    public var description: String { reason }

    /// The reason an error gives, at the level a user can act on ("Not a directory"), not
    /// Foundation's wrapper around it: a file operation's `CocoaError` gives the `errno`
    /// under it, a `LocalizedError` its description, anything else its text.
    public static func reason(_ error: any Error) -> String {
        var error = error
        if let cocoa = error as? CocoaError, let underlying = cocoa.underlying { error = underlying }
        if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        if let localized = error as? any LocalizedError, let description = localized.errorDescription {
            return description
        }
        return "\(error)"
    }
}

/// Reads tags and durations with GStreamer's discoverer on a background queue, one file
/// at a time, and delivers results on the main actor.
public final class Discoverer: Sendable {
    /// The queue the readings run on, one at a time (tests hold it to queue requests).
    let queue = DispatchQueue(label: "quaver.discoverer", qos: .userInitiated)
    private let timeout: Duration
    /// Where cover images found while reading go; nil: artwork is not looked for.
    public let artwork: ArtworkCache?

    public init(timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil) {
        GStreamer.initialize()
        self.timeout = timeout
        self.artwork = artwork
    }

    /// Reads `uri` in the background and calls `completion` on the main actor. A request for
    /// a file this discoverer is reading, or has queued, gets that reading's result; so does
    /// one for a file another reader began reading after the request (see `discoverNow`).
    public func discover(
        _ uri: String, completion: @escaping @MainActor @Sendable (Result<TrackInfo, MediaError>) -> Void
    ) {
        let isNew = requests.withLock { requests in
            requests[uri, default: []].append(completion)
            return requests[uri]!.count == 1
        }
        guard isNew else { return }
        let timeout = self.timeout
        let artwork = self.artwork
        let requests = self.requests
        let asked = ContinuousClock.now
        queue.async {
            let result = Discoverer.discoverNow(uri, timeout: timeout, artwork: artwork, askedAt: asked)
            let completions = requests.withLock { $0.removeValue(forKey: uri) ?? [] }
            DispatchQueue.main.async { MainActor.assumeIsolated { completions.forEach { $0(result) } } }
        }
    }

    /// What each file queued or being read is to be handed to, in the order asked.
    private let requests = Locked<[String: [@MainActor @Sendable (Result<TrackInfo, MediaError>) -> Void]]>([:])

    /// Reads `uri` on the calling thread (blocking up to the timeout). With `artwork`, the
    /// cover image (embedded, else beside the file) is stored there and named in the result.
    ///
    /// A local file is handed to GStreamer only when it is a regular file outside `/proc` and
    /// `/sys` (checked with `stat`): a FIFO, a socket or a device fails at once, naming what
    /// it is. A file already being read with the same timeout and cache is not read again
    /// alongside: the call waits for that reading and gives its result.
    public static func discoverNow(
        _ uri: String, timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil
    ) -> Result<TrackInfo, MediaError> {
        discoverNow(uri, timeout: timeout, artwork: artwork, askedAt: nil)
    }

    /// `discoverNow`, for a request made at `askedAt` and run later: a reading running now
    /// gives the result, and so does one done that began since the request (it saw the file,
    /// and the artwork cache, as they were when asked or later). Without `askedAt`, only a
    /// reading running now is shared.
    static func discoverNow(
        _ uri: String, timeout: Duration, artwork: ArtworkCache?, askedAt: ContinuousClock.Instant?
    ) -> Result<TrackInfo, MediaError> {
        if let path = MediaSources.filePath(ofURI: uri), let problem = LocalFiles.problem(playing: path) {
            return .failure(MediaError(problem))
        }
        let key = Reading.Key(uri: uri, timeout: timeout, artwork: artwork.map(ObjectIdentifier.init))
        let (reading, isFirst) = readings.withLock { readings -> (Reading, Bool) in
            let now = ContinuousClock.now
            readings.recent = readings.recent.filter { now - $0.value.finished < recentLimit }
            if let askedAt, let recent = readings.recent[key], recent.started >= askedAt { return (recent, false) }
            if let reading = readings.running[key] { return (reading, false) }
            let reading = Reading(started: now)
            readings.running[key] = reading
            return (reading, true)
        }
        guard isFirst else { return reading.wait() }
        let result = read(uri, timeout: timeout, artwork: artwork)
        readings.withLock { readings in
            if readings.running[key] === reading { readings.running[key] = nil }
            reading.finished = ContinuousClock.now
            guard case .success = result else { return }
            if readings.recent.count >= 256 { readings.recent.removeAll() }  // a queue read ahead in bulk
            readings.recent[key] = reading
        }
        reading.finish(result)
        return result
    }

    /// How long a finished reading is kept for requests made before it began.
    private static let recentLimit = Duration.seconds(30)

    /// The readings running, and those done lately. GStreamer's parsing of a file with a huge
    /// embedded picture takes many times the picture's size in memory; the player, the readers
    /// ahead and the artwork reader asking for the same file at once, or queuing requests for
    /// it while it is read, would each take that much.
    private static let readings = Locked(Readings())

    private struct Readings: Sendable {
        var running: [Reading.Key: Reading] = [:]
        var recent: [Reading.Key: Reading] = [:]
    }

    /// One reading of a file, which other callers wait for.
    private final class Reading: @unchecked Sendable {
        struct Key: Hashable, Sendable {
            var uri: String
            var timeout: Duration
            var artwork: ObjectIdentifier?
        }

        let started: ContinuousClock.Instant
        /// When it ended; set under the lock of `readings`, and read only there.
        var finished: ContinuousClock.Instant
        private let done = DispatchGroup()
        private let result = Locked<Result<TrackInfo, MediaError>?>(nil)

        init(started: ContinuousClock.Instant) {
            self.started = started
            finished = started
            done.enter()
        }

        /// Blocks until the reading ends; its result.
        func wait() -> Result<TrackInfo, MediaError> {
            done.wait()
            return result.withLock { $0 } ?? .failure(MediaError("unreadable"))
        }

        /// Hands `outcome` to every caller waiting, and to any still to come.
        func finish(_ outcome: Result<TrackInfo, MediaError>) {
            result.withLock { $0 = outcome }
            done.leave()
        }
    }

    /// Reads `uri` with a discoverer of its own: the reading `discoverNow` shares.
    private static func read(_ uri: String, timeout: Duration, artwork: ArtworkCache?) -> Result<TrackInfo, MediaError>
    {
        GStreamer.initialize()
        let made = GStreamerError.catching { gst_discoverer_new(GstClockTime(timeout.nanoseconds), &$0) }
        guard let discoverer = made.value else {
            return .failure(MediaError("cannot create a discoverer: \(made.error?.message ?? "?")"))
        }
        defer { g_object_unref(UnsafeMutableRawPointer(discoverer)) }
        cshims_discoverer_decode_audio_only(UnsafeMutableRawPointer(discoverer))
        let (info, error) = GStreamerError.catching { gst_discoverer_discover_uri(discoverer, uri, &$0) }
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let message = error?.message
        guard let info else { return .failure(MediaError(message ?? "unreadable")) }

        switch gst_discoverer_info_get_result(info) {
        case GST_DISCOVERER_OK:
            break
        case GST_DISCOVERER_URI_INVALID:
            return .failure(MediaError("invalid URI"))
        case GST_DISCOVERER_TIMEOUT:
            return .failure(MediaError("timed out reading the file", isTimeout: true))
        case GST_DISCOVERER_MISSING_PLUGINS where !Self.missesOnlyPictures(info):
            return .failure(MediaError("no GStreamer plugin can decode it (\(message ?? "missing plugins"))"))
        case GST_DISCOVERER_MISSING_PLUGINS:
            break  // the video, images or subtitles, skipped on purpose; the audio plays
        default:
            return .failure(MediaError(message ?? "not a media file GStreamer can read"))
        }

        var track = TrackInfo()
        track.audioStreams = countAndFree(gst_discoverer_info_get_audio_streams(info))
        track.videoStreams = countAndFree(gst_discoverer_info_get_video_streams(info))
        guard track.audioStreams > 0 else {
            return .failure(MediaError("it has no audio stream"))
        }
        let duration = gst_discoverer_info_get_duration(info)
        if duration != cshims_clock_time_none(), duration > 0 { track.duration = .nanoseconds(Int64(duration)) }
        track.isSeekable = gst_discoverer_info_get_seekable(info) != 0
        track.isLive = gst_discoverer_info_get_live(info) != 0
        let tags = gst_discoverer_info_get_tags(info).map(TagReader.init)
        if let tags {
            track.apply(tags)
            let largest = tags.largestPictureBytes()
            if largest > ArtworkCache.maximumImageBytes { track.oversizedPictureBytes = largest }
        }
        if track.title == nil, MediaSources.isLocal(uri), let path = URL(string: uri)?.path,
            let apeTag = APETag.read(path: path)
        {
            track.fillIn(from: apeTag)  // musepackdec drops the tags apedemux reads
        }
        if let artwork {
            track.artworkURL = artwork.artwork(forTrack: uri, tags: tags)
            track.artworkSearched = true
        }
        if track.replayGain == nil, MediaSources.isLocal(uri), let path = URL(string: uri)?.path {
            track.signature = TrackSignature.of(path: path)
        }
        return .success(track)
    }

    /// Whether every element the discoverer missed is of video, images or subtitles, which
    /// Quaver skips on purpose (a music video's picture): its installer details name each as
    /// `gstreamer|1.0|...|decoder-video/x-theora`.
    private static func missesOnlyPictures(_ info: OpaquePointer) -> Bool {
        guard let details = gst_discoverer_info_get_missing_elements_installer_details(info) else { return false }
        var missing: [String] = []
        var index = 0
        while let detail = details[index] {
            missing.append(String(cString: detail))
            index += 1
        }
        return !missing.isEmpty
            && missing.allSatisfy { detail in
                ["video/", "image/", "subtitle/", "text/", "application/x-ssa", "application/x-ass"].contains {
                    detail.contains("decoder-" + $0)
                }
            }
    }

    private static func countAndFree(_ list: UnsafeMutablePointer<GList>?) -> Int {
        guard let list else { return 0 }
        let count = Int(g_list_length(list))
        gst_discoverer_stream_info_list_free(list)
        return count
    }
}

/// Reads typed values from a borrowed `GstTagList`, a bounded amount whatever the list
/// holds: a file can carry any number of values of a tag, each of any length. It runs off
/// the main actor: on the discoverer's queues for a file, and on the pipeline's queue for
/// the tags a stream sends as it plays (``StreamTags``).
struct TagReader {
    let list: OpaquePointer

    /// At most this many values of one tag are read (and this many pictures looked at).
    static let maximumValues = 32
    /// At most this many bytes of one value are read: room for the 1,024 characters `clean`
    /// keeps, at four bytes each.
    static let maximumValueBytes = 4 << 10

    init(_ list: UnsafePointer<GstTagList>) { self.list = OpaquePointer(list) }

    private var raw: UnsafePointer<GstTagList> { UnsafePointer(list) }

    /// How many values of `tag` are read: all of them, up to `maximumValues`.
    private func valueCount(_ tag: String) -> guint {
        min(gst_tag_list_get_tag_size(raw, tag), guint(Self.maximumValues))
    }

    /// The distinct values of a text tag, cleaned, from its first `maximumValues`.
    func strings(_ tag: String) -> [String] {
        var result: [String] = []
        for index in 0..<valueCount(tag) {
            // Peeked, not copied: a value of megabytes is read no further than its start.
            var value: UnsafePointer<gchar>?
            guard gst_tag_list_peek_string_index(raw, tag, index, &value) != 0, let value else { continue }
            let text = TagReader.clean(TagReader.prefix(of: value))
            if !text.isEmpty && !result.contains(text) { result.append(text) }
        }
        return result
    }

    /// The first `maximumValueBytes` of a C string as text, cut before a character that
    /// would not fit whole (GStreamer's tag strings are UTF-8).
    static func prefix(of value: UnsafePointer<CChar>) -> String {
        let length = strnlen(value, maximumValueBytes + 1)
        let bytes = UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self)
        var count = min(length, maximumValueBytes)
        if length > maximumValueBytes {
            while count > 0, bytes[count] & 0xC0 == 0x80 { count -= 1 }  // inside a character
        }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The bytes of the picture to show for the track (see `coverSample`), copied.
    func coverImage(
        maximumBytes: Int, oversized: (Int) -> Void = { _ in }, accept: (UnsafeRawBufferPointer) -> Bool
    ) -> Data? {
        var image: Data?
        withCoverImage(maximumBytes: maximumBytes, oversized: oversized, accept: accept) { image = Data($0) }
        return image
    }

    /// Lends the bytes of the picture to show for the track (see `coverSample`) to `body`,
    /// in GStreamer's own buffer: nothing is copied. False when there is no such picture.
    @discardableResult
    func withCoverImage(
        maximumBytes: Int, oversized: (Int) -> Void = { _ in }, accept: (UnsafeRawBufferPointer) -> Bool,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        guard let sample = coverSample(maximumBytes: maximumBytes, oversized: oversized, accept: accept) else {
            return false
        }
        defer { gst_sample_unref(sample) }
        return TagReader.withBytes(of: sample) { body($0) } != nil
    }

    /// The picture to show for the track, as a new reference to its `GstSample`: the first
    /// front cover among the images, else the first image, else the first preview image (of
    /// the first `maximumValues` of each), skipping pictures larger than `maximumBytes`
    /// (never mapped or copied: `oversized` is told their size) and those `accept` refuses
    /// (bytes that are not an image).
    func coverSample(maximumBytes: Int, oversized: (Int) -> Void = { _ in }, accept: (UnsafeRawBufferPointer) -> Bool)
        -> OpaquePointer?
    {
        var fronts: [(String, guint)] = []
        var others: [(String, guint)] = []
        var previews: [(String, guint)] = []
        for index in 0..<valueCount(GST_TAG_IMAGE) {
            var sample: OpaquePointer?
            guard gst_tag_list_get_sample_index(raw, GST_TAG_IMAGE, index, &sample) != 0, let sample else { continue }
            var type: gint = -1
            if let info = gst_sample_get_info(sample) {
                _ = gst_structure_get_enum(info, "image-type", gst_tag_image_type_get_type(), &type)
            }
            gst_sample_unref(sample)
            if type == gint(GST_TAG_IMAGE_TYPE_FRONT_COVER.rawValue) {
                fronts.append((GST_TAG_IMAGE, index))
            } else {
                others.append((GST_TAG_IMAGE, index))
            }
        }
        for index in 0..<valueCount(GST_TAG_PREVIEW_IMAGE) {
            previews.append((GST_TAG_PREVIEW_IMAGE, index))
        }
        for (tag, index) in fronts + others + previews {
            var sample: OpaquePointer?
            guard gst_tag_list_get_sample_index(raw, tag, index, &sample) != 0, let sample else { continue }
            let size = gst_sample_get_buffer(sample).map { Int(gst_buffer_get_size($0)) } ?? 0
            if size > maximumBytes { oversized(size) }
            if size > 0, size <= maximumBytes, TagReader.withBytes(of: sample, accept) == true { return sample }
            gst_sample_unref(sample)
        }
        return nil
    }

    /// The size in bytes of the largest of the first `maximumValues` images and preview
    /// images (0 for none), told without mapping any.
    func largestPictureBytes() -> Int {
        var largest = 0
        for tag in [GST_TAG_IMAGE, GST_TAG_PREVIEW_IMAGE] {
            for index in 0..<valueCount(tag) {
                var sample: OpaquePointer?
                guard gst_tag_list_get_sample_index(raw, tag, index, &sample) != 0, let sample else { continue }
                largest = max(largest, gst_sample_get_buffer(sample).map { Int(gst_buffer_get_size($0)) } ?? 0)
                gst_sample_unref(sample)
            }
        }
        return largest
    }

    /// Calls `body` with the bytes of a sample's buffer, mapped for reading; nil when it has
    /// no buffer or cannot be mapped.
    static func withBytes<Result>(of sample: OpaquePointer, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        guard let buffer = gst_sample_get_buffer(sample) else { return nil }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        return body(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
    }

    func double(_ tag: String) -> Double? {
        var value = 0.0
        guard gst_tag_list_get_double(raw, tag, &value) != 0, value.isFinite else { return nil }
        return value
    }

    /// The Q7.8 integer of an Opus R128 gain comment (`R128_TRACK_GAIN`).
    func r128(_ key: String) -> Int? {
        var value: gint = 0
        guard cshims_r128_gain(raw, key, &value) != 0 else { return nil }
        return Int(value)
    }

    func uint(_ tag: String) -> Int? {
        var value: guint = 0
        guard gst_tag_list_get_uint(raw, tag, &value) != 0, value > 0 else { return nil }
        return Int(value)
    }

    /// Tag text as D-Bus accepts it: valid UTF-8 (GStreamer guarantees it for tag strings;
    /// `String(cString:)` repairs anything else), no NUL or other control characters, trimmed,
    /// and bounded so one absurd tag cannot bloat every Metadata message.
    static func clean(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var count = 0  // the view's own count walks it from the start
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                scalars.append(" ")
            } else {
                scalars.append(scalar)
            }
            count += 1
            if count >= 1024 { break }
        }
        return String(scalars).trimmingSpaces()
    }
}

extension TrackInfo {
    mutating func apply(_ tags: TagReader) {
        if let title = tags.strings(GST_TAG_TITLE).first { self.title = title }
        let artists = tags.strings(GST_TAG_ARTIST)
        if !artists.isEmpty { self.artists = artists }
        if let album = tags.strings(GST_TAG_ALBUM).first { self.album = album }
        let albumArtists = tags.strings(GST_TAG_ALBUM_ARTIST)
        if !albumArtists.isEmpty { self.albumArtists = albumArtists }
        let genres = tags.strings(GST_TAG_GENRE)
        if !genres.isEmpty { self.genres = genres }
        if let number = tags.uint(GST_TAG_TRACK_NUMBER) { trackNumber = number }
        if let number = tags.uint(GST_TAG_ALBUM_VOLUME_NUMBER) { discNumber = number }
        let replayGain = ReplayGainTags(
            trackGain: tags.double(GST_TAG_TRACK_GAIN), trackPeak: tags.double(GST_TAG_TRACK_PEAK),
            albumGain: tags.double(GST_TAG_ALBUM_GAIN), albumPeak: tags.double(GST_TAG_ALBUM_PEAK))
        // ReplayGain tags win over R128 ones: GStreamer hands them to rgvolume in the stream.
        if replayGain.hasGain {
            self.replayGain = replayGain
        } else if let r128 = ReplayGainTags.r128(
            track: tags.r128("R128_TRACK_GAIN"), album: tags.r128("R128_ALBUM_GAIN"))
        {
            self.replayGain = r128
        }
    }
}
