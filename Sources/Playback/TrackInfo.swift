internal import CGStreamer
internal import CShims
import Dispatch
import Foundation

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
    /// Foundation's wrapper around it.
    public static func reason(_ error: any Error) -> String {
        var error = error as NSError
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error { error = underlying as NSError }
        return error.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32(error.code))) : error.localizedDescription
    }
}

/// Reads tags and durations with GStreamer's discoverer on a background queue, one file
/// at a time, and delivers results on the main actor.
public final class Discoverer: Sendable {
    private let queue = DispatchQueue(label: "quaver.discoverer", qos: .userInitiated)
    private let timeout: Duration
    /// Where cover images found while reading go; nil: artwork is not looked for.
    public let artwork: ArtworkCache?

    public init(timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil) {
        GStreamer.initialize()
        self.timeout = timeout
        self.artwork = artwork
    }

    /// Reads `uri` in the background and calls `completion` on the main actor.
    public func discover(_ uri: String, completion: @escaping @MainActor @Sendable (Result<TrackInfo, MediaError>) -> Void) {
        let timeout = self.timeout, artwork = self.artwork
        queue.async {
            let result = Discoverer.discoverNow(uri, timeout: timeout, artwork: artwork)
            DispatchQueue.main.async { MainActor.assumeIsolated { completion(result) } }
        }
    }

    /// Reads `uri` on the calling thread (blocking up to the timeout). With `artwork`, the
    /// cover image (embedded, else beside the file) is stored there and named in the result.
    public static func discoverNow(
        _ uri: String, timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil
    ) -> Result<TrackInfo, MediaError> {
        GStreamer.initialize()
        var error: UnsafeMutablePointer<GError>?
        guard let discoverer = gst_discoverer_new(GstClockTime(timeout.nanoseconds), &error) else {
            defer { if let error { g_error_free(error) } }
            return .failure(MediaError("cannot create a discoverer: \(error.map { String(cString: $0.pointee.message) } ?? "?")"))
        }
        defer { g_object_unref(UnsafeMutableRawPointer(discoverer)) }
        let info = gst_discoverer_discover_uri(discoverer, uri, &error)
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let message = error.map { String(cString: $0.pointee.message) }
        if let error { g_error_free(error) }
        guard let info else { return .failure(MediaError(message ?? "unreadable")) }

        switch gst_discoverer_info_get_result(info) {
        case GST_DISCOVERER_OK:
            break
        case GST_DISCOVERER_URI_INVALID:
            return .failure(MediaError("invalid URI"))
        case GST_DISCOVERER_TIMEOUT:
            return .failure(MediaError("timed out reading the file", isTimeout: true))
        case GST_DISCOVERER_MISSING_PLUGINS:
            return .failure(MediaError("no GStreamer plugin can decode it (\(message ?? "missing plugins"))"))
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
        if let tags { track.apply(tags) }
        if let artwork {
            track.artworkURL = artwork.artwork(forTrack: uri, tags: tags)
            track.artworkSearched = true
        }
        return .success(track)
    }

    private static func countAndFree(_ list: UnsafeMutablePointer<GList>?) -> Int {
        guard let list else { return 0 }
        let count = Int(g_list_length(list))
        gst_discoverer_stream_info_list_free(list)
        return count
    }
}

/// Reads typed values from a borrowed `GstTagList`.
struct TagReader {
    let list: OpaquePointer

    init(_ list: UnsafePointer<GstTagList>) { self.list = OpaquePointer(list) }

    private var raw: UnsafePointer<GstTagList> { UnsafePointer(list) }

    func strings(_ tag: String) -> [String] {
        let count = gst_tag_list_get_tag_size(raw, tag)
        var result: [String] = []
        for index in 0..<count {
            var value: UnsafeMutablePointer<gchar>?
            if gst_tag_list_get_string_index(raw, tag, index, &value) != 0, let value {
                let text = TagReader.clean(String(cString: value))
                g_free(value)
                if !text.isEmpty && !result.contains(text) { result.append(text) }
            }
        }
        return result
    }

    /// The bytes of the picture to show for the track: the first front cover among the
    /// images, else the first image, else the first preview image, skipping pictures larger
    /// than `maximumBytes` and those `accept` refuses (bytes that are not an image).
    func coverImage(maximumBytes: Int, accept: (UnsafeRawBufferPointer) -> Bool) -> Data? {
        var fronts: [(String, guint)] = [], others: [(String, guint)] = [], previews: [(String, guint)] = []
        for index in 0..<gst_tag_list_get_tag_size(raw, GST_TAG_IMAGE) {
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
        for index in 0..<gst_tag_list_get_tag_size(raw, GST_TAG_PREVIEW_IMAGE) {
            previews.append((GST_TAG_PREVIEW_IMAGE, index))
        }
        for (tag, index) in fronts + others + previews {
            var sample: OpaquePointer?
            guard gst_tag_list_get_sample_index(raw, tag, index, &sample) != 0, let sample else { continue }
            defer { gst_sample_unref(sample) }
            guard let buffer = gst_sample_get_buffer(sample), gst_buffer_get_size(buffer) <= maximumBytes else { continue }
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { continue }
            defer { gst_buffer_unmap(buffer, &map) }
            let bytes = UnsafeRawBufferPointer(start: map.data, count: Int(map.size))
            if accept(bytes) { return Data(bytes) }
        }
        return nil
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
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                scalars.append(" ")
            } else {
                scalars.append(scalar)
            }
            if scalars.count >= 1024 { break }
        }
        return String(scalars).trimmingCharacters(in: .whitespaces)
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
    }
}

