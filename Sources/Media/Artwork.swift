internal import CGStreamer
public import FoundationEssentials
import Glibc
public import Logging
import PlaybackVocabulary

/// The image formats a cover may be in, told by their first bytes (never by a file name
/// or a MIME type a tag claims).
public enum ImageFormat: String, Sendable, CaseIterable {
    case jpeg, png, gif, webp, bmp

    /// The format `bytes` start with, or nil when they are not an image of a known kind.
    public init?(magic bytes: some Collection<UInt8>) {
        let head = Array(bytes.prefix(12))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + prefix.count && Array(head[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) {
            self = .gif
        } else if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) {
            self = .webp
        } else if starts(Array("BM".utf8)) && head.count >= 6 {
            self = .bmp
        } else {
            return nil
        }
    }

    /// The extension a cached file of this format gets (`jpg`, `png`...), without the dot.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .webp: "webp"
        case .bmp: "bmp"
        }
    }
}

/// Cover images kept for clients to show: each one a file named by the SHA-256 of its
/// bytes (stored as found, never re-encoded; never named after tag text), written
/// atomically, 0600 in a 0700 folder. The folder is kept under `maximumBytes` by removing
/// the images used longest ago first.
///
/// Safe to use from any thread: the discoverer's queues store what they find while reading.
public final class ArtworkCache: Sendable {
    /// The folder the cached images are in (made on the first image stored).
    public let folder: URL
    /// How many bytes the cached images may take in all before the oldest-used go.
    public let maximumBytes: Int
    /// A picture larger than this is not kept (a tag can hold anything).
    public static let maximumImageBytes = 16 << 20
    /// The file names a cover beside the tracks may have (any case), most wanted first.
    static let sidecarNames = ["cover", "folder", "front"]
    static let sidecarExtensions = ["jpg", "jpeg", "png"]

    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        var failureLogged = false
        var temporaryCounter = 0
        /// The sidecar candidates of folders already looked in, and the folder's
        /// modification time then.
        var sidecars: [String: (modified: Date?, names: [String])] = [:]
        /// The tracks whose oversized picture was logged.
        var oversizedLogged = Set<String>()
    }

    /// A cache in `folder`, kept under `maximumBytes`; what it cannot store or remove is
    /// logged to `logger`, once each.
    public init(folder: URL, maximumBytes: Int = 64 << 20, logger: Logger) {
        self.folder = folder
        self.maximumBytes = maximumBytes
        self.logger = logger
    }

    // MARK: - Storing

    /// Keeps `image` (bytes as found: a file's cover, a stream's picture) and returns the
    /// `file://` URL of the cached copy; nil when the bytes are not an image of a known
    /// format, too large, or the cache cannot be written (logged once).
    public func store(_ image: Data) -> String? {
        guard image.count <= Self.maximumImageBytes else {
            logger.debug(
                "not keeping a \(image.count)-byte picture as artwork: larger than \(Self.maximumImageBytes) bytes")
            return nil
        }
        guard let format = ImageFormat(magic: image) else {
            logger.debug("not keeping a picture as artwork: its bytes are not JPEG, PNG, GIF, WebP or BMP")
            return nil
        }
        guard let digest = GLib.sha256(image) else { return nil }
        let name = digest + "." + format.fileExtension
        let file = folder.appendingPathComponent(name)
        return state.withLock { state in
            if touch(file) { return file.absoluteString }
            do {
                try makeFolder()
                state.temporaryCounter &+= 1
                let temporary = folder.appendingPathComponent(".\(name).\(getpid()).\(state.temporaryCounter).part")
                try write(image, to: temporary)
                guard rename(temporary.path, file.path) == 0 else {
                    let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                    try? FileManager.default.removeItem(at: temporary)
                    throw error
                }
            } catch {
                if !state.failureLogged {
                    state.failureLogged = true
                    logger.warning(
                        "could not keep artwork in \(folder.path) (\(MediaError.reason(error))); tracks are shown without it"
                    )
                } else {
                    logger.debug("could not keep artwork in \(folder.path): \(MediaError.reason(error))")
                }
                return nil
            }
            trim(keeping: name)
            return file.absoluteString
        }
    }

    /// Whether the image a URL of this cache names is still there (the cache may have been
    /// trimmed or removed since it was stored).
    public func contains(_ url: String) -> Bool {
        guard let file = URL(string: url), file.isFileURL else { return false }
        return FileManager.default.fileExists(atPath: file.path)
    }

    /// Marks the image as just used, so that trimming removes it last. False when it is gone.
    @discardableResult
    public func markUsed(_ url: String) -> Bool {
        guard let file = URL(string: url), file.isFileURL else { return false }
        return state.withLock { _ in touch(file) }
    }

    private func touch(_ file: URL) -> Bool {
        (try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)) != nil
    }

    /// The folder, private to the user (made so if it exists with other permissions). It and
    /// the folder holding it (`quaver/art` in the cache) are Quaver's own: a symbolic link in
    /// the place of either is refused, never written through or made 0700.
    private func makeFolder() throws {
        close(try PrivateFolder(folder, ownedComponents: 2).open())
    }

    /// Writes a new file readable by the user only (created so: never wider, even briefly).
    private func write(_ data: Data, to file: URL) throws {
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var failure = PrivateFolder.writeAll(data, to: descriptor)
        if close(descriptor) != 0 && failure == nil { failure = errno }
        if let failure {
            try? FileManager.default.removeItem(at: file)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
    }

    /// Removes the images used longest ago until the folder holds at most `maximumBytes`
    /// (never `kept`, the image just stored), and pieces of writes a crash left behind.
    private func trim(keeping kept: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        var images: [(file: URL, size: Int, modified: Date)] = []
        var total = 0
        for name in names {
            let file = folder.appendingPathComponent(name)
            // lstat: a symbolic link is not an image of the cache, as with URL resource values.
            var info = stat()
            guard lstat(file.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let modified = Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
            if name.hasPrefix(".") {
                if modified < Date(timeIntervalSinceNow: -600) { try? FileManager.default.removeItem(at: file) }
                continue
            }
            let size = Int(info.st_size)
            total += size
            if file.lastPathComponent != kept { images.append((file, size, modified)) }
        }
        guard total > maximumBytes else { return }
        for image in images.sorted(by: { $0.modified < $1.modified }) where total > maximumBytes {
            if (try? FileManager.default.removeItem(at: image.file)) != nil {
                total -= image.size
                logger.debug("artwork cache over \(maximumBytes) bytes: removed \(image.file.lastPathComponent)")
            }
        }
    }

    // MARK: - Finding a track's artwork

    /// The artwork of a track: its embedded cover (front cover first), else a cover image in
    /// its folder (`cover`, `folder` or `front` with `.jpg`, `.jpeg` or `.png`, any case).
    /// Nil when there is none, or it cannot be kept.
    ///
    /// An embedded picture is stored straight from GStreamer's buffer, never copied; one over
    /// `maximumImageBytes` is not even read, and logged once per track.
    func artwork(forTrack uri: String, tags: TagReader?) -> String? {
        if let tags {
            var largest = 0
            var url: String?
            let found = tags.withCoverImage(
                maximumBytes: Self.maximumImageBytes, oversized: { largest = max(largest, $0) },
                accept: { ImageFormat(magic: $0) != nil }
            ) { bytes in
                guard let start = bytes.baseAddress else { return }
                // Lent for the call only: `store` hashes and writes it, and keeps nothing.
                url = store(
                    Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: start), count: bytes.count, deallocator: .none))
            }
            if largest > 0 { noteOversizedPicture(of: uri, bytes: largest) }
            if found { return url }
        }
        guard let path = GLib.filename(fromURI: uri) else { return nil }
        return sidecarArtwork(besides: path)
    }

    /// Logs, once per track, that its picture is too large to be shown.
    private func noteOversizedPicture(of uri: String, bytes: Int) {
        let isNew = state.withLock { state in
            if state.oversizedLogged.count >= 256 { state.oversizedLogged.removeAll() }
            return state.oversizedLogged.insert(uri).inserted
        }
        guard isNew else { return }
        logger.info(
            """
            not showing the picture in \(MediaSources.displayName(uri)) as artwork: \(LocalFiles.byteCount(bytes)), \
            over the \(LocalFiles.byteCount(Self.maximumImageBytes)) limit
            """)
    }

    /// The first sidecar image in the folder of the file at `path` that is an image.
    func sidecarArtwork(besides path: String) -> String? {
        let folder = LocalFiles.parentPath(path)
        for name in sidecarCandidates(in: folder) {
            let file = URL(fileURLWithPath: folder).appendingPathComponent(name)
            // Read only as a regular file of a bounded size: a FIFO named cover.jpg would
            // block the reader for good.
            guard case .data(let image) = LocalFiles.read(Array(file.path.utf8), limit: Self.maximumImageBytes) else {
                continue
            }
            if let url = store(image) { return url }
        }
        return nil
    }

    /// The names in `folder` a sidecar cover may have, best first. Remembered per folder
    /// until it changes (the tracks of an album are read one after another).
    private func sidecarCandidates(in folder: String) -> [String] {
        let modified = (try? FileManager.default.attributesOfItem(atPath: folder))?[.modificationDate] as? Date
        if let known = state.withLock({ $0.sidecars[folder] }), known.modified == modified, modified != nil {
            return known.names
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var names: [String] = []
        for base in Self.sidecarNames {
            for ext in Self.sidecarExtensions {
                names += entries.filter { $0.lowercased() == base + "." + ext }.sorted()
            }
        }
        state.withLock { state in
            if state.sidecars.count >= 256 { state.sidecars.removeAll() }
            state.sidecars[folder] = (modified, names)
        }
        return names
    }
}

/// GLib functions the cache needs.
enum GLib {
    /// The SHA-256 of `data` as 64 lowercase hex digits.
    /// The corresponding GLib function is `g_compute_checksum_for_data`.
    static func sha256(_ data: Data) -> String? {
        data.withUnsafeBytes { bytes in
            guard
                let digest = g_compute_checksum_for_data(
                    G_CHECKSUM_SHA256, bytes.baseAddress?.assumingMemoryBound(to: guchar.self), gsize(bytes.count))
            else { return nil }
            defer { g_free(digest) }
            return String(cString: digest)
        }
    }

    /// The local path a `file:` URI names, when it is valid UTF-8 (nil otherwise).
    /// The corresponding GLib function is `g_filename_from_uri`.
    static func filename(fromURI uri: String) -> String? {
        guard let path = g_filename_from_uri(uri, nil, nil) else { return nil }
        defer { g_free(path) }
        return String(validatingCString: path)
    }
}
