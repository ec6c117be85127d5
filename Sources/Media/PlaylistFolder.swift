internal import CLibcShims
import Dispatch
public import FoundationEssentials
import Glibc
public import Logging
import PlaybackVocabulary

/// The playlists (`.m3u`, `.m3u8`, `.pls`, any case) directly inside one folder, kept up to
/// date through inotify: nothing polls. While the folder does not exist, its nearest
/// existing parent folder is watched until it appears.
///
/// Hidden files and subfolders are ignored; anything else that is not a regular file (after
/// following symbolic links: a FIFO, a socket, a device) and unreadable files are left out
/// and logged once.
@MainActor
public final class PlaylistFolder {
    /// The folder whose playlists are offered (standardized).
    public let folder: URL
    /// The current playlists, in alphabetical order (as `sorted(by: .alphabetical, reversed: false)`).
    public private(set) var playlists: [PlaylistItem] = []
    /// Called on the main queue after a rescan changed anything (a playlist added, removed,
    /// retitled, renamed or modified), with the playlists that kept their id but changed
    /// their title. Not called for the first scan, made by `start()`.
    public var onChange: (@MainActor (_ retitled: [PlaylistItem]) -> Void)?

    private let logger: Logger
    private var nextID: UInt64 = 1
    /// The file each playlist was at the last scan, by playlist id (to follow renames).
    private var identities: [UInt64: FileIdentity] = [:]
    /// What reading each file gave, by path, until its `stat` signature changes.
    private var reads: [String: FileRead] = [:]
    /// Problems logged, by path, so that each is logged once while it lasts.
    private var problems: [String: String] = [:]
    private var problemsThisScan: [String: String] = [:]

    private var isRunning = false
    private var inotify: Int32 = -1
    private var source: (any DispatchSourceRead)?
    private var watch: Watch?
    private var rescanScheduled = false

    /// Offers the playlists of `folder` once ``start()`` is called; problems with its files
    /// are logged to `logger`, each once while it lasts.
    public init(folder: URL, logger: Logger) {
        self.folder = folder.standardizedFileURL
        self.logger = logger
    }

    isolated deinit {
        source?.cancel()
    }

    /// The folder inotify watches: `folder`, or while it is missing its nearest existing parent.
    var watchedPath: String? { watch?.path }
    /// The inotify descriptor while started (-1 if none).
    var inotifyDescriptor: Int32 { inotify }
    /// How many times the folder was scanned (the first scan included).
    private(set) var scans = 0

    /// The current playlist with `id`, nil if there is none (removed since, say).
    public func playlist(id: UInt64) -> PlaylistItem? {
        playlists.first { $0.id == id }
    }

    /// The playlists by `ordering`, ascending: alphabetical is the natural, case-insensitive
    /// order of titles (ties by path); dates run oldest first (ties by title, then path).
    /// Then reversed if asked.
    public func sorted(by ordering: PlaylistOrdering, reversed: Bool) -> [PlaylistItem] {
        let ascending = playlists.sorted { Self.precedes($0, $1, by: ordering) }
        return reversed ? Array(ascending.reversed()) : ascending
    }

    static func precedes(_ a: PlaylistItem, _ b: PlaylistItem, by ordering: PlaylistOrdering) -> Bool {
        switch ordering {
        case .alphabetical: break
        case .created where a.created != b.created: return a.created < b.created
        case .modified where a.modified != b.modified: return a.modified < b.modified
        case .created, .modified: break
        }
        if a.title != b.title { return MediaSources.naturalOrder(a.title, b.title) }
        return a.url.path < b.url.path
    }

    /// Scans the folder (before returning) and starts watching it. Idempotent.
    public func start() {
        guard !isRunning else { return }
        isRunning = true
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if descriptor < 0 {
            logger.warning(
                "cannot watch \(folder.path) for playlist changes: \(Self.errnoDescription()); its playlists are read once"
            )
        } else {
            inotify = descriptor
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: .main)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated { self?.drainEvents() }
            }
            source.setCancelHandler { close(descriptor) }  // also removes every watch
            source.resume()
            self.source = source
        }
        rescan(notify: false)
    }

    /// Stops watching; `playlists` keeps its last value.
    public func stop() {
        isRunning = false
        source?.cancel()
        source = nil
        inotify = -1
        watch = nil
    }

    // MARK: Scanning

    private static let playlistExtensions = MediaSources.playlistExtensions

    /// Whether a name in the folder can be a playlist (the file type is checked by the scan).
    static func isPlaylistName(_ name: String) -> Bool {
        guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { return false }
        return playlistExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    private func rescan(notify: Bool) {
        scans += 1
        updateWatch()
        let files = scan()
        problems = problemsThisScan
        problemsThisScan = [:]
        let retitled = apply(files)
        if notify, let retitled { onChange?(retitled) }
    }

    private func scan() -> [ScannedFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        } catch {
            var info = stat()
            if stat(folder.path, &info) == 0 {  // else it does not exist (yet): the watch waits for it
                let isFolder = info.st_mode & S_IFMT == S_IFDIR
                report(isFolder ? "cannot list it: \(MediaError.reason(error))" : "not a folder", about: folder.path)
            }
            reads = [:]
            return []
        }
        var files: [ScannedFile] = []
        var seen: [String: FileRead] = [:]
        for name in names.sorted(by: MediaSources.naturalOrder) where Self.isPlaylistName(name) {
            let url = folder.appendingPathComponent(name, isDirectory: false)
            var info = stat()
            guard stat(url.path, &info) == 0 else {
                let error = errno
                var link = stat()
                if error != ENOENT || lstat(url.path, &link) == 0 {  // else removed since listed
                    report(String(cString: strerror(error)), about: url.path)
                }
                continue
            }
            let status = FileStatus(info)
            guard status.kind == .regular else {
                // A subfolder is no playlist; a FIFO, socket or device named like one is a
                // trap (reading it could block for good), named once.
                if status.kind != .directory { report("not a regular file (\(status.kind.name))", about: url.path) }
                continue
            }
            let signature = Signature(info)
            let read =
                reads[url.path].flatMap { $0.signature == signature ? $0 : nil } ?? readFile(url, signature: signature)
            seen[url.path] = read
            if let problem = read.problem {
                report(problem, about: url.path)
                continue
            }
            files.append(
                ScannedFile(
                    url: url, identity: signature.identity, born: read.born, modified: Self.date(info.st_mtim),
                    title: read.title ?? url.deletingPathExtension().lastPathComponent))
        }
        reads = seen
        return files
    }

    /// Longer files are only searched this far for their `#PLAYLIST:` directive.
    private static let titleSearchLimit = 1 << 20

    private func readFile(_ url: URL, signature: Signature) -> FileRead {
        let born = Self.birthTime(url.path)
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)  // O_NONBLOCK: never hang on a FIFO
        guard descriptor >= 0 else {
            return FileRead(
                signature: signature, title: nil, born: born, problem: "cannot read it: \(Self.errnoDescription())")
        }
        defer { close(descriptor) }
        // What was opened may not be what was checked: a FIFO renamed over it meanwhile.
        var opened = stat()
        if fstat(descriptor, &opened) == 0, let problem = LocalFiles.problem(playing: FileStatus(opened)) {
            return FileRead(signature: signature, title: nil, born: born, problem: problem)
        }
        guard url.pathExtension.lowercased() != "pls" else {
            return FileRead(signature: signature, title: nil, born: born, problem: nil)  // readable is all that matters
        }
        guard let data = Self.readPrefix(descriptor, upTo: Self.titleSearchLimit) else {
            return FileRead(
                signature: signature, title: nil, born: born, problem: "cannot read it: \(Self.errnoDescription())")
        }
        return FileRead(signature: signature, title: Self.playlistDirective(in: data), born: born, problem: nil)
    }

    /// The first `limit` bytes of an open file (fewer if it is shorter), or nil with `errno`
    /// set when reading fails.
    private static func readPrefix(_ descriptor: Int32, upTo limit: Int) -> Data? {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while data.count < limit {
            let wanted = min(chunk.count, limit - data.count)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, wanted) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return nil }
            if count == 0 { break }
            data.append(contentsOf: chunk[..<count])
        }
        return data
    }

    /// The first non-empty `#PLAYLIST:` directive of an m3u file.
    static func playlistDirective(in data: Data) -> String? {
        var text = String(decoding: data, as: UTF8.self)
        if text.unicodeScalars.first == "\u{FEFF}" { text.unicodeScalars.removeFirst() }  // a byte order mark
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingSpaces()
            guard trimmed.prefix(10).lowercased() == "#playlist:" else { continue }
            let value = trimmed.dropFirst(10).trimmingSpaces()
            if !value.isEmpty { return value }
        }
        return nil
    }

    /// Merges a scan into `playlists`, giving each file its id (see `PlaylistItem.id`).
    /// Returns nil if nothing changed, else the playlists retitled.
    private func apply(_ files: [ScannedFile]) -> [PlaylistItem]? {
        let now = Date()
        let previous = Dictionary(uniqueKeysWithValues: playlists.map { ($0.id, $0) })
        let previousByPath = Dictionary(playlists.map { ($0.url.path, $0) }, uniquingKeysWith: { first, _ in first })
        let paths = Set(files.map(\.url.path))
        // The files of playlists whose path is gone: one found under a new path was renamed.
        var gone: [FileIdentity: PlaylistItem] = [:]
        for item in playlists where !paths.contains(item.url.path) {
            if let identity = identities[item.id] { gone[identity] = item }
        }
        var items: [PlaylistItem] = []
        var newIdentities: [UInt64: FileIdentity] = [:]
        for file in files {
            let id: UInt64
            var created = file.born ?? now
            if let old = previousByPath[file.url.path] ?? gone.removeValue(forKey: file.identity) {
                id = old.id
                created = min(created, old.created)
            } else {
                id = nextID
                nextID += 1
            }
            items.append(
                PlaylistItem(id: id, title: file.title, url: file.url, modified: file.modified, created: created))
            newIdentities[id] = file.identity
        }
        items.sort { Self.precedes($0, $1, by: .alphabetical) }
        identities = newIdentities
        guard items != playlists else { return nil }
        playlists = items
        return items.filter { item in previous[item.id].map { $0.title != item.title } ?? false }
    }

    private func report(_ reason: String, about path: String) {
        guard problemsThisScan[path] == nil else { return }
        problemsThisScan[path] = reason
        if problems[path] != reason {
            logger.warning("playlists: \(path): \(reason)")
        }
    }

    // MARK: Watching

    private static let folderEvents = UInt32(
        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB
    )
    /// On a parent while the folder is missing: its next component appearing (or becoming
    /// watchable), or the parent itself going away.
    private static let parentEvents = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    private struct Watch {
        var descriptor: Int32
        var path: String
        var identity: FileIdentity
        /// Nil when watching the folder itself, else the name in `path` on the way to it.
        var child: String?
    }

    /// Points the inotify watch at the folder or, while it does not exist (or cannot be
    /// watched), at its nearest existing parent.
    private func updateWatch() {
        guard inotify >= 0 else { return }
        var components = folder.pathComponents
        var child: String?
        while !components.isEmpty {
            let path = components.count == 1 ? "/" : "/" + components.dropFirst().joined(separator: "/")
            if let identity = Self.directoryIdentity(path) {
                // Unchanged: the watch in place still fits.
                if let watch, watch.path == path, watch.identity == identity, watch.child == child { return }
                let mask = (child == nil ? Self.folderEvents : Self.parentEvents) | UInt32(IN_ONLYDIR)
                let descriptor = inotify_add_watch(inotify, path, mask)
                if descriptor >= 0 {
                    replaceWatch(with: Watch(descriptor: descriptor, path: path, identity: identity, child: child))
                    return
                }
                report("cannot watch it for changes: \(Self.errnoDescription())", about: path)
            }
            child = components.removeLast()
        }
        if let old = watch { inotify_rm_watch(inotify, old.descriptor) }
        watch = nil
    }

    private func replaceWatch(with new: Watch) {
        if let old = watch, old.descriptor != new.descriptor {
            inotify_rm_watch(inotify, old.descriptor)  // fails harmlessly if its folder is gone
        }
        watch = new
        if let child = new.child {
            logger.debug("playlist folder \(folder.path) is missing; watching \(new.path) for it")
            // It may have appeared between looking for it and watching its parent.
            let childPath = new.path == "/" ? "/" + child : new.path + "/" + child
            if Self.directoryIdentity(childPath) != nil { scheduleRescan() }
        } else {
            logger.debug("watching playlist folder \(folder.path)")
        }
    }

    /// Reads every pending inotify event, then rescans once if any matters.
    private func drainEvents() {
        guard inotify >= 0 else { return }
        var relevant = false
        withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: MemoryLayout<inotify_event>.alignment) {
            buffer in
            while true {
                let count = read(inotify, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    if errno != EAGAIN && errno != EWOULDBLOCK {
                        logger.warning("reading playlist folder events failed: \(Self.errnoDescription())")
                    }
                    return
                }
                guard count > 0 else { return }
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= count {
                    let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + header
                    let nameEnd = min(nameStart + Int(event.len), count)
                    let bytes = UnsafeRawBufferPointer(rebasing: buffer[nameStart..<nameEnd])
                    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    if isRelevant(descriptor: event.wd, mask: event.mask, name: name) { relevant = true }
                    if event.mask & UInt32(IN_IGNORED) != 0, event.wd == watch?.descriptor {
                        // The kernel dropped it: its folder is gone. A new folder in its place
                        // may have the same inode number, so forget it rather than compare.
                        watch = nil
                    }
                    offset = nameEnd
                }
            }
        }
        if relevant { scheduleRescan() }
    }

    private func isRelevant(descriptor: Int32, mask: UInt32, name: String) -> Bool {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 { return true }  // events were lost
        guard let watch, descriptor == watch.descriptor else { return false }  // a watch already replaced
        if name.isEmpty { return true }  // the watched folder itself: moved, deleted, permissions changed
        if let child = watch.child { return name == child }
        return mask & UInt32(IN_ISDIR) == 0 && Self.isPlaylistName(name)
    }

    /// Rescans once the events already queued on the main queue are handled, so that a
    /// burst of events (an editor's save) gives one rescan.
    private func scheduleRescan() {
        guard !rescanScheduled else { return }
        rescanScheduled = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                self.rescanScheduled = false
                if self.isRunning { self.rescan(notify: true) }
            }
        }
    }

    // MARK: Files

    /// What changes when a file is written, replaced or has its permissions changed.
    private struct Signature: Equatable {
        var identity: FileIdentity
        var size: Int64
        var modifiedSeconds: Int, modifiedNanoseconds: Int
        var changedSeconds: Int, changedNanoseconds: Int

        init(_ info: stat) {
            identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            size = Int64(info.st_size)
            (modifiedSeconds, modifiedNanoseconds) = (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
            (changedSeconds, changedNanoseconds) = (info.st_ctim.tv_sec, info.st_ctim.tv_nsec)
        }
    }

    private struct FileRead {
        var signature: Signature
        /// The `#PLAYLIST:` directive.
        var title: String?
        var born: Date?
        /// Why the file cannot be used.
        var problem: String?
    }

    private struct ScannedFile {
        var url: URL
        var identity: FileIdentity
        var born: Date?
        var modified: Date
        var title: String
    }

    private static func directoryIdentity(_ path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    private static func date(_ time: timespec) -> Date {
        Date(timeIntervalSince1970: TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1_000_000_000)
    }

    private static func errnoDescription() -> String {
        String(cString: strerror(errno))
    }

    /// The birth time `statx(2)` reports, or nil where the file system (or the kernel, or a
    /// sandbox) does not tell.
    nonisolated static func birthTime(_ path: String) -> Date? {
        var seconds: Int64 = 0
        var nanoseconds: UInt32 = 0
        guard csystem_birth_time(path, &seconds, &nanoseconds) == 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanoseconds) / 1_000_000_000)
    }
}
