public import FoundationEssentials
public import Logging
import PlaybackVocabulary

/// One entry of a playlist as written: where it is (a path, relative to the playlist's
/// folder or absolute, or a URI), and its `#EXTINF` title (M3U) or `TitleN=` (PLS),
/// cleaned as a tag is; nil when the playlist gives none.
struct PlaylistEntry: Equatable {
    var location: String
    var title: String?
}

extension MediaSources {
    /// Only this much of a playlist is read: far above any real one (about 160,000 entries),
    /// and bounded. The entries in it are kept; the rest is left unread, and the log says so.
    public static let maximumPlaylistBytes = 16 << 20
    /// Lines longer than this are skipped (no path or URI is that long).
    public static let maximumLineBytes = 8 << 10

    /// The entries of an `.m3u`/`.m3u8`/`.pls` file, as written (paths or URIs); see
    /// `PlaylistReader`.
    public static func playlistEntries(_ url: URL, logger: Logger) -> [String] {
        PlaylistReader.entries(path: Array(url.path.utf8), logger: logger).map(\.location)
    }
}

/// Reads the entries of `.m3u`, `.m3u8` and `.pls` playlists with their titles.
///
/// Read as bytes (a playlist of 100,000 lines takes milliseconds): lines end at LF or CR,
/// blanks and tabs around them are dropped, and so is a byte order mark. Only a regular
/// file is read, and only its first `maximumPlaylistBytes` (up to the last whole line in
/// them); lines over `maximumLineBytes` are skipped, with one warning for the file.
enum PlaylistReader {
    /// The entries of the playlist file at `path`.
    static func entries(path: [UInt8], logger: Logger) -> [PlaylistEntry] {
        let name = String(decoding: path, as: UTF8.self)
        let contents = LocalFiles.read(path, limit: MediaSources.maximumPlaylistBytes, keepingStart: true)
        return entries(of: contents, name: name, isPLS: MediaSources.pathExtension(name) == "pls", logger: logger)
    }

    /// The entries of a playlist read as `contents` (PLS or else M3U), named `name` in the
    /// log lines.
    static func entries(of contents: LocalFiles.Contents, name: String, isPLS: Bool, logger: Logger)
        -> [PlaylistEntry]
    {
        let limit = LocalFiles.byteCount(MediaSources.maximumPlaylistBytes)
        var data: Data
        switch contents {
        case .data(let contents): data = contents
        case .start(let start, let size):
            let length = size.map { "is \(LocalFiles.byteCount(Int($0)))" } ?? "is over \(limit)"
            logger.warning(
                "playlist \(name) \(length): only its first \(limit) are read (the limit for a playlist)")
            // The line the limit cuts is left out with the rest.
            let lastBreak = start.lastIndex { $0 == 0x0A || $0 == 0x0D }
            data = lastBreak.map { start[..<$0] } ?? Data()
        case .refused(let reason):
            logger.warning("skipping playlist \(name): cannot read it (\(reason))")
            return []
        }
        let (lines, longLines) = self.lines(of: data)
        if longLines > 0 {
            logger.warning(
                "playlist \(name): skipped \(longLines) line\(longLines == 1 ? "" : "s") longer than \(LocalFiles.byteCount(MediaSources.maximumLineBytes))"
            )
        }
        return isPLS ? plsEntries(lines) : m3uEntries(lines)
    }

    /// The lines of `data` that are not blank, trimmed, and how many were skipped as longer
    /// than `maximumLineBytes`.
    static func lines(of data: Data) -> (lines: [String], longLines: Int) {
        var lines: [String] = []
        var longLines = 0
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            var start = bytes.starts(with: bom) ? 3 : 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != 0x0A, bytes[end] != 0x0D { end += 1 }
                var first = start
                var last = end
                while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first += 1 }
                while last > first, bytes[last - 1] == 0x20 || bytes[last - 1] == 0x09 { last -= 1 }
                if last - first > MediaSources.maximumLineBytes {
                    longLines += 1
                } else if last > first {
                    lines.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[first..<last]), as: UTF8.self))
                }
                start = end + 1
            }
        }
        return (lines, longLines)
    }

    /// M3U: every line not starting with `#` is an entry; the `#EXTINF` line before it, with
    /// other directives between them or not, gives its title.
    static func m3uEntries(_ lines: [String]) -> [PlaylistEntry] {
        var entries: [PlaylistEntry] = []
        var title: String?
        for line in lines {
            guard line.hasPrefix("#") else {
                entries.append(PlaylistEntry(location: line, title: title))
                title = nil
                continue
            }
            if line.prefix(8).lowercased() == "#extinf:" { title = extinfTitle(line.dropFirst(8)) }
        }
        return entries
    }

    /// The title of an `#EXTINF:<seconds> [attributes],<title>` line (what follows
    /// `#EXTINF:`): the text after the first comma outside double quotes (attribute values,
    /// `tvg-name="A, B"`, may hold commas); nil when there is none.
    static func extinfTitle(_ rest: Substring) -> String? {
        var quoted = false
        for index in rest.indices {
            switch rest[index] {
            case "\"": quoted.toggle()
            case "," where !quoted: return cleanTitle(rest[rest.index(after: index)...])
            default: break
            }
        }
        return nil
    }

    /// PLS: `FileN=` entries in the order of N (case aside), each titled by its `TitleN=`;
    /// other keys are ignored.
    static func plsEntries(_ lines: [String]) -> [PlaylistEntry] {
        var files: [(number: Int, order: Int, location: String)] = []
        var titles: [Int: String] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].lowercased()
            let value = line[line.index(after: equals)...]
            if key.hasPrefix("file") {
                let location = value.trimmingSpaces()
                guard !location.isEmpty else { continue }
                files.append((Int(key.dropFirst(4)) ?? Int.max, files.count, location))
            } else if key.hasPrefix("title"), let number = Int(key.dropFirst(5)), let title = cleanTitle(value) {
                titles[number] = title
            }
        }
        return files.sorted { ($0.number, $0.order) < ($1.number, $1.order) }.map { file in
            PlaylistEntry(location: file.location, title: file.number == Int.max ? nil : titles[file.number])
        }
    }

    /// A playlist's title as a tag's text is kept (no control characters, bounded), nil
    /// when nothing is left.
    private static func cleanTitle(_ text: Substring) -> String? {
        let title = TagReader.clean(String(text))
        return title.isEmpty ? nil : title
    }
}
