public import FoundationEssentials
import Glibc
public import Logging
import PlaybackVocabulary

/// What a folder, playlist or URI expands to: one URI to play, and what its playlist calls
/// it.
public struct MediaItem: Sendable, Equatable {
    /// A `file:` URI or a network stream's URL.
    public var uri: String
    /// The title the playlist gives the entry (`#EXTINF`, `TitleN=`), if any: a station's
    /// name for a stream, "Artist - Title" or a title for a file.
    public var title: String?

    /// An item for `uri`, titled `title` by its playlist.
    public init(uri: String, title: String? = nil) {
        self.uri = uri
        self.title = title
    }
}

/// Turns what a user names (files, folders, playlists, URIs) into a list of playable URIs.
public enum MediaSources {
    /// The extensions of the local files Quaver plays, lower case: what a folder scan takes,
    /// and what a file named on the command line, with `OpenUri` or `AddTrack`, or in a
    /// playlist must end in (network streams are not asked). Audio files, and the
    /// containers music videos come in (only their sound plays). A folder also holds covers,
    /// cue sheets and logs: telling media by their content would open every file of a
    /// library of 100,000 of them.
    public static let mediaExtensions: Set<String> = [
        // MP3 and MPEG audio; FLAC; Ogg Vorbis, Opus, Speex.
        "mp3", "mp2", "flac", "ogg", "oga", "opus", "spx",
        // MP4 audio (AAC, ALAC) and raw AAC; WAV, AIFF, AU, CAF.
        "m4a", "m4b", "aac", "alac", "wav", "wave", "aif", "aiff", "aifc", "au", "caf",
        // Windows Media, Matroska audio, Monkey's Audio, WavPack, Musepack, TTA, AC-3, DTS, DSD.
        "wma", "mka", "ape", "wv", "mpc", "tta", "ac3", "dts", "dsf",
        // Music videos (and WebM audio): MP4, QuickTime, Matroska, WebM, Ogg video, AVI, ASF, 3GP.
        "mp4", "m4v", "mov", "mkv", "webm", "weba", "ogv", "avi", "wmv", "asf", "3gp",
    ]
    /// The extensions of playlists, lower case: `.m3u` and `.m3u8` are M3U, `.pls` is PLS.
    public static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls"]
    /// The URI schemes Quaver plays: local files, and streams over HTTP and HTTPS.
    public static let supportedSchemes = ["file", "http", "https"]

    /// Whether a file name or path ends in one of `mediaExtensions` (in any case).
    public static func isMediaName(_ name: String) -> Bool {
        mediaExtensions.contains(pathExtension(name))
    }

    /// Expands each argument in order: a folder recursively in natural order, a playlist into
    /// its entries, a file or URI as itself. Problems are logged naming the argument; they
    /// never stop the rest.
    public static func expand(_ arguments: [String], relativeTo base: URL? = nil, logger: Logger) -> [String] {
        expandItems(arguments, relativeTo: base, logger: logger).map(\.uri)
    }

    /// Like `expand(_:relativeTo:logger:)`, each URI with what its playlist calls it.
    public static func expandItems(_ arguments: [String], relativeTo base: URL? = nil, logger: Logger) -> [MediaItem] {
        var result: [MediaItem] = []
        expand(arguments, relativeTo: base, logger: logger) { result += $0 }
        return result
    }

    /// Expands each argument in order, handing the items to `emit` as they are found (a
    /// folder's after it is read and sorted, a playlist's entry by entry). For queues of
    /// 100,000 files: one `stat` per entry, no Foundation URL per file. However playlists
    /// name each other (themselves, in a circle, over and over), each is read once in one
    /// call.
    public static func expand(
        _ arguments: [String], relativeTo base: URL? = nil, logger: Logger, emit: ([MediaItem]) -> Void
    ) {
        var expansion = Expansion()
        for argument in arguments {
            expand(
                argument, title: nil, relativeTo: base.map { $0.path }, depth: 0, expansion: &expansion,
                logger: logger, emit: emit)
        }
    }

    /// What one expansion has read so far.
    struct Expansion {
        /// The playlists read, by file: a playlist named again is skipped, which ends
        /// playlists that include themselves or each other, and keeps nested playlists that
        /// each name the next many times from multiplying its tracks.
        var playlistsRead = Set<FileIdentity>()
        /// The playlists skipped as read already, each logged the first time only.
        var playlistsSkipped = Set<FileIdentity>()
        /// The playlists read from the network, by URL, for the same reason.
        var remotePlaylistsRead = Set<String>()
    }

    /// Expands one argument (`depth` playlists deep) into `emit`, within `expansion`. A
    /// `title` (a playlist's for this entry) goes with the argument when it is one file or
    /// URI, not with what a folder or playlist it names holds.
    static func expand(
        _ argument: String, title: String?, relativeTo base: String?, depth: Int, expansion: inout Expansion,
        logger: Logger, emit: ([MediaItem]) -> Void
    ) {
        guard depth < 8 else {
            logger.warning("skipping \(argument): playlists nested too deeply")
            return
        }
        let path = Array(localPath(argument, relativeTo: base).utf8)
        let status = FileStatus.of(path)
        // "Interlude: Reprise.flac" names a file, not a URI with the scheme "interlude"; so
        // does a link that loops (to be named as such).
        let exists: Bool
        switch status {
        case .success: exists = true
        case .failure(let failure): exists = failure.code != ENOENT && FileStatus.exists(path)
        }
        if exists, !argument.utf8.starts(with: "file:".utf8) {
            return expandFile(
                path, status: status, argument: argument, title: title, depth: depth, expansion: &expansion,
                logger: logger, emit: emit)
        }
        if let scheme = scheme(of: argument) {
            guard supportedSchemes.contains(scheme) else {
                logger.warning(
                    "skipping \(argument): unsupported URI scheme '\(scheme)' (supported: \(supportedSchemes.joined(separator: ", ")))"
                )
                return
            }
            guard scheme == "file" else {
                guard RemotePlaylist.names(argument) else { return emit([MediaItem(uri: argument, title: title)]) }
                return expandRemotePlaylist(
                    argument, title: title, depth: depth, expansion: &expansion, logger: logger, emit: emit)
            }
            guard let filePath = filePath(ofURI: argument) else {
                logger.warning("skipping \(argument): not a valid file URI")
                return
            }
            return expandFile(
                filePath, status: FileStatus.of(filePath), argument: argument, title: title, depth: depth,
                expansion: &expansion, logger: logger, emit: emit)
        }
        expandFile(
            path, status: status, argument: argument, title: title, depth: depth, expansion: &expansion, logger: logger,
            emit: emit)
    }

    /// Expands a playlist on the network (see ``RemotePlaylist``) into its entries, each an
    /// `http` or `https` URL (relative ones resolved against the playlist's); an HLS
    /// playlist is a stream, handed on as it is.
    private static func expandRemotePlaylist(
        _ url: String, title: String?, depth: Int, expansion: inout Expansion, logger: Logger,
        emit: ([MediaItem]) -> Void
    ) {
        let name = displayName(url)
        guard expansion.remotePlaylistsRead.insert(url).inserted else {
            logger.warning("skipping \(name): this playlist was read already")
            return
        }
        let contents = RemotePlaylist.fetch(url, limit: maximumPlaylistBytes)
        switch contents {
        case .data(let data) where RemotePlaylist.isHLS(data), .start(let data, _) where RemotePlaylist.isHLS(data):
            return emit([MediaItem(uri: url, title: title)])
        default: break
        }
        let isPLS = URL(string: url).map { pathExtension($0.path) == "pls" } ?? false
        for entry in PlaylistReader.entries(of: contents, name: name, isPLS: isPLS, logger: logger) {
            guard let resolved = RemotePlaylist.resolve(entry.location, against: url) else {
                logger.warning(
                    "skipping \(entry.location) (in the playlist \(name)): a playlist on the network names http and https URLs only"
                )
                continue
            }
            expand(
                resolved, title: entry.title, relativeTo: nil, depth: depth + 1, expansion: &expansion, logger: logger,
                emit: emit)
        }
    }

    /// A path argument as an absolute path: absolute, `~/`, or relative to `base` (else the
    /// current folder), with `.` and `..` resolved.
    public static func localPath(_ argument: String, relativeTo base: String? = nil) -> String {
        let joined: String
        if argument.hasPrefix("/") {
            joined = argument
        } else if argument.hasPrefix("~/") {
            joined = FileManager.default.homeDirectoryForCurrentUser.path + "/" + argument.dropFirst(2)
        } else {
            joined = (base ?? FileManager.default.currentDirectoryPath) + "/" + argument
        }
        return normalized(joined)
    }

    /// `path` without empty, `.` and `..` elements (symbolic links are not resolved).
    static func normalized(_ path: String) -> String {
        guard path.contains("/.") || path.contains("//") else { return path }
        return String(decoding: normalized(Array(path.utf8)), as: UTF8.self)
    }

    /// The path a `file:` URI names, as bytes (a file name need not be UTF-8): its
    /// percent-escapes decoded, `.` and `..` resolved; nil for another host or bad escapes.
    static func filePath(ofURI uri: String) -> [UInt8]? {
        var rest = Substring(uri)
        guard let colon = rest.firstIndex(of: ":"), rest[..<colon].lowercased() == "file" else { return nil }
        rest = rest[rest.index(after: colon)...]
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            let host = rest[..<slash]
            guard host.isEmpty || host.lowercased() == "localhost" else { return nil }
            rest = rest[slash...]
        }
        guard rest.hasPrefix("/") else { return nil }
        var bytes: [UInt8] = []
        var iterator = rest.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        guard !bytes.contains(0) else { return nil }
        return normalized(bytes)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `path` without empty, `.` and `..` elements, as bytes.
    static func normalized(_ path: [UInt8]) -> [UInt8] {
        var parts: [ArraySlice<UInt8>] = []
        for part in path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if part.elementsEqual([UInt8(ascii: ".")]) { continue }
            if part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                _ = parts.popLast()
                continue
            }
            parts.append(part)
        }
        return [UInt8(ascii: "/")] + Array(parts.joined(separator: [UInt8(ascii: "/")]))
    }

    private static func expandFile(
        _ path: [UInt8], status lookup: Result<FileStatus, FileStatus.Failure>, argument: String, title: String?,
        depth: Int, expansion: inout Expansion, logger: Logger, emit: ([MediaItem]) -> Void
    ) {
        let status: FileStatus
        switch lookup {
        case .success(let found): status = found
        case .failure(let failure):
            logger.warning("skipping \(argument): \(failure.reason)")
            return
        }
        if status.isDirectory {
            if let problem = folderProblem(path, status) {
                logger.warning("skipping \(argument): \(problem)")
                return
            }
            var found = false
            var visited = Set<[UInt8]>()
            collect(path, visited: &visited, logger: logger) { file in
                found = true
                emit([MediaItem(uri: fileURI(file))])
            }
            if !found { logger.warning("\(argument): no media files found in this folder") }
            return
        }
        if let problem = LocalFiles.problem(playing: path, status) {
            logger.warning("skipping \(argument): \(problem)")
            return
        }
        let pathText = String(decoding: path, as: UTF8.self)
        if playlistExtensions.contains(pathExtension(pathText)) {
            guard expansion.playlistsRead.insert(status.identity).inserted else {
                if expansion.playlistsSkipped.insert(status.identity).inserted {
                    logger.warning(
                        "skipping \(pathText): this playlist was read already (playlists that include themselves or each other are read once)"
                    )
                }
                return
            }
            let folder = String(pathText[..<(pathText.lastIndex(of: "/") ?? pathText.startIndex)])
            // The first entry at once (to start playing), then in batches.
            var pending: [MediaItem] = []
            var emitted = false
            for entry in PlaylistReader.entries(path: path, logger: logger) {
                expand(
                    entry.location, title: entry.title, relativeTo: folder.isEmpty ? "/" : folder, depth: depth + 1,
                    expansion: &expansion, logger: logger
                ) {
                    pending += $0
                }
                if pending.count >= 1024 || (!emitted && !pending.isEmpty) {
                    emit(pending)
                    emitted = true
                    pending = []
                }
            }
            if !pending.isEmpty { emit(pending) }
            return
        }
        guard isMediaName(pathText) else {
            logger.warning("skipping \(argument): \(notMediaReason(pathText))")
            return
        }
        guard withCString(path, { access($0, R_OK) }) == 0 else {
            logger.warning("skipping \(argument): permission denied")
            return
        }
        emit([MediaItem(uri: fileURI(path), title: title)])
    }

    /// Why a file whose name is not a media name is not played, as a log line gives it.
    static func notMediaReason(_ name: String) -> String {
        let ending = pathExtension(name)
        return
            "not named as a media file (\(ending.isEmpty ? "no extension" : "\"." + ending + "\"")): Quaver plays the extensions listed under Media files in docs/usage.md"
    }

    /// Why the folder at `path` is not scanned, or nil: the kernel's `/proc` and `/sys` hold
    /// no media, and reach the whole file system again (`/proc/self/root`).
    static func folderProblem(_ path: [UInt8], _ status: FileStatus) -> String? {
        LocalFiles.isKernelPath(path) || status.isKernelFile ? "a folder of the kernel's /proc or /sys, not media" : nil
    }

    /// Calls `body` with `path` as a NUL-terminated C string.
    static func withCString<R>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (path + [0]).withUnsafeBufferPointer { buffer in
            body(UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self))
        }
    }

    /// Whether `argument` names a folder or a playlist, local or on the network (which can
    /// be long to read), rather than one track.
    public static func isCollection(_ argument: String) -> Bool {
        var path = argument
        if RemotePlaylist.names(argument) { return true }
        if scheme(of: argument) != nil {
            guard let url = URL(string: argument), url.isFileURL else { return false }
            path = url.path
        }
        return playlistExtensions.contains(pathExtension(path)) || FileStatus(path)?.isDirectory == true
    }

    /// The lower-cased extension of a file name or path, without the dot.
    static func pathExtension(_ name: String) -> String {
        let base = name.lastIndex(of: "/").map { name[name.index(after: $0)...] } ?? name[...]
        guard let dot = base.lastIndex(of: "."), dot != base.startIndex else { return "" }
        return base[base.index(after: dot)...].lowercased()
    }

    /// `file://` and the absolute path, percent-encoded as RFC 3986 asks (what
    /// `URL(fileURLWithPath:).absoluteString` gives, without its cost).
    public static func fileURI(_ path: String) -> String {
        fileURI(path.utf8)
    }

    /// `file://` and a path given as bytes (any bytes but NUL), percent-encoded.
    static func fileURI(_ path: some Collection<UInt8>) -> String {
        var bytes: [UInt8] = Array("file://".utf8)
        bytes.reserveCapacity(path.count + 16)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in path {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"),
                UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
                UInt8(ascii: ")"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
                UInt8(ascii: ":"), UInt8(ascii: "@"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Natural order: case-insensitive, with runs of digits compared as numbers.
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        NaturalKey(a) < NaturalKey(b)
    }

    /// The lower-cased scheme of a URI (`file`, `http`), or nil for a plain path.
    public static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        let candidate = text[..<colon]
        guard let first = candidate.first, first.isLetter, first.isASCII,
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
            text[text.index(after: colon)...].hasPrefix("//") || candidate.count > 1
        else { return nil }
        return candidate.lowercased()
    }

    /// Whether a URI names a local file (anything else is a network stream).
    package static func isLocal(_ uri: String) -> Bool { uri.hasPrefix("file:") }

    /// A readable name for a URI in log lines: the path for files, the URI without its
    /// credentials otherwise (see `redactingCredentials(in:)`).
    public static func displayName(_ uri: String) -> String {
        if let url = URL(string: uri), url.isFileURL { return url.path }
        return redactingCredentials(in: uri)
    }
}
