internal import CGStreamer
internal import CGStreamerShims
import FoundationEssentials
import Glibc
import PlaybackVocabulary

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
