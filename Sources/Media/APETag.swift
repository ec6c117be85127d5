import FoundationEssentials
import Glibc
import PlaybackVocabulary

/// The text items of an APEv2 tag at the end of a file: Musepack's, WavPack's and Monkey's
/// Audio's own tag format.
///
/// GStreamer's `apedemux` reads these tags, but `musepackdec` drops the tag event it sends,
/// so a Musepack file would show its file name. This reader serves as the fallback for a
/// local file that GStreamer gave no title: the footer (`APETAGEX`, 32 bytes at the end, or
/// before an ID3v1 tag) says where the items start. A tag larger than ``maximumBytes`` is
/// not read, and each value is cut as GStreamer's are (``TagReader``).
struct APETag: Sendable, Equatable {
    /// The text items, keys lowercased: `title`, `artist`, `album`, ...; a key given twice
    /// keeps its first value. Multiple values of one item are separated by NUL in the tag and
    /// kept apart here.
    var items: [String: [String]] = [:]

    /// The largest tag read.
    static let maximumBytes = 256 << 10
    private static let footerBytes = 32
    private static let id3v1Bytes = 128

    /// The tag at the end of the file at `path`, or nil when it has none (or cannot be read).
    static func read(path: String) -> APETag? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(status.st_size)
        for end in [size, size - id3v1Bytes] where end >= footerBytes {
            guard let footer = bytes(descriptor, at: end - footerBytes, count: footerBytes),
                footer.starts(with: Array("APETAGEX".utf8))
            else { continue }
            let tagSize = Int(littleEndian32(footer, at: 12))
            let count = Int(littleEndian32(footer, at: 16))
            guard tagSize >= footerBytes, tagSize <= maximumBytes, tagSize <= end,
                let body = bytes(descriptor, at: end - tagSize, count: tagSize - footerBytes)
            else { return nil }
            return parse(body, count: count)
        }
        return nil
    }

    /// The items of a tag body (what lies between its header, if any, and its footer).
    static func parse(_ body: [UInt8], count: Int) -> APETag {
        var tag = APETag()
        var offset = 0
        for _ in 0..<min(count, 1024) {
            guard offset + 8 < body.count else { break }
            let valueBytes = Int(littleEndian32(body, at: offset))
            let flags = littleEndian32(body, at: offset + 4)
            offset += 8
            guard let keyEnd = body[offset...].firstIndex(of: 0) else { break }
            let key = String(decoding: body[offset..<keyEnd], as: UTF8.self).lowercased()
            let valueStart = keyEnd + 1
            guard valueBytes >= 0, valueStart + valueBytes <= body.count else { break }
            offset = valueStart + valueBytes
            // Bits 1-2: 0 is UTF-8 text; the rest are binary items or links.
            guard flags & 0b110 == 0, tag.items[key] == nil else { continue }
            let kept = body[valueStart..<(valueStart + min(valueBytes, TagReader.maximumValueBytes))]
            let values = kept.split(separator: 0).map { String(decoding: $0, as: UTF8.self).trimmingSpaces() }
                .filter { !$0.isEmpty }
            if !values.isEmpty { tag.items[key] = values }
        }
        return tag
    }

    private static func bytes(_ descriptor: Int32, at offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return read == count ? buffer : nil
    }

    private static func littleEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}

extension TrackInfo {
    /// Fills what GStreamer's tags left out from an APEv2 tag: title, artists, album, album
    /// artists, genres, track and disc numbers (`3/12` counts as 3).
    mutating func fillIn(from tag: APETag) {
        if title == nil { title = tag.items["title"]?.first }
        if artists.isEmpty { artists = tag.items["artist"] ?? [] }
        if album == nil { album = tag.items["album"]?.first }
        if albumArtists.isEmpty { albumArtists = tag.items["album artist"] ?? tag.items["albumartist"] ?? [] }
        if genres.isEmpty { genres = tag.items["genre"] ?? [] }
        func number(_ key: String) -> Int? {
            tag.items[key]?.first.flatMap { Int($0.split(separator: "/").first ?? "") }
        }
        if trackNumber == nil { trackNumber = number("track") }
        if discNumber == nil { discNumber = number("disc") }
    }
}
