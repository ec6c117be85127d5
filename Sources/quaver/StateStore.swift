import FoundationEssentials
import Glibc
import Logging
import Media
import NowPlaying
import PlaybackPlayer
import PlaybackVocabulary

/// What survives a restart: the queue, where playback was, and the playback options.
///
/// Kept in `$XDG_STATE_HOME/quaver/` as `state.json` (small, rewritten at each pause, stop,
/// seek and track change) and the queue file it names, `queue.<generation>.m3u8` (written
/// only when the queue changes, since it can be long). A save replaces them whole: see
/// ``SessionCommit``. Version 1 named no generation; its queue was `queue.m3u8`.
struct SavedState: Codable, Equatable {
    /// The version written: 2 names the queue file by its generation.
    static let currentVersion = 2

    var version = SavedState.currentVersion
    /// Number of entries the queue file must hold for this state to apply to it.
    var queueCount: Int
    /// The generation of the queue file this state goes with (`queue.<n>.m3u8`); set by the
    /// writer as it writes the state, nil in version 1.
    var queueGeneration: Int?
    /// Index of the current entry in the queue.
    var current: Int?
    /// Where playback was, in microseconds.
    var position: Int64
    var volume: Double
    var rate: Double
    var loop: String
    var shuffle: Bool

    enum CodingKeys: String, CodingKey {
        case version, queueCount, queueGeneration, current, position, volume, rate, loop, shuffle
    }

    /// The positions a state may hold, in microseconds: a week, longer than any track
    /// seeks, and far below what converting it to nanoseconds could overflow.
    static let positions: ClosedRange<Int64> = 0...(7 * 86_400 * 1_000_000)
    static let volumes: ClosedRange<Double> = 0...1
    /// What the player starts with, taken in place of a value dropped.
    static let defaultVolume = 1.0
    static let defaultRate = 1.0
    /// What the player starts with: an empty queue, nothing current, the first options.
    static let initial = SavedState(
        queueCount: 0, current: nil, position: 0, volume: defaultVolume, rate: defaultRate,
        loop: Player.RepeatMode.off.rawValue, shuffle: false)
}

/// A state file as read: every field checked on its own, those out of range replaced by
/// what the player starts with (the current entry by none) and named in `dropped`.
struct CheckedState: Decodable, Equatable {
    var state: SavedState
    var dropped: [String] = []

    /// A state as read, with the fields dropped from it.
    init(state: SavedState, dropped: [String] = []) {
        self.state = state
        self.dropped = dropped
    }

    init(from decoder: any Decoder) throws {
        typealias Key = SavedState.CodingKeys
        let container = try decoder.container(keyedBy: Key.self)
        // Without these two the file cannot be matched to a queue: not a state file at all.
        let version = try container.decode(Int.self, forKey: .version)
        let queueCount = try container.decode(Int.self, forKey: .queueCount)
        // Which queue file the state goes with: a wrong one is no state to restore.
        let queueGeneration = try container.decodeIfPresent(Int.self, forKey: .queueGeneration)
        var dropped: [String] = []

        /// The value at `key` when it decodes and `isValid` accepts it; else nil, noted.
        func checked<T: Decodable>(_ key: Key, _ type: T.Type, expected: String, _ isValid: (T) -> Bool) -> T? {
            guard container.contains(key) else {
                dropped.append("\(key.stringValue) (missing)")
                return nil
            }
            guard let value = try? container.decode(T.self, forKey: key) else {
                dropped.append("\(key.stringValue) (not \(expected))")
                return nil
            }
            guard isValid(value) else {
                dropped.append("\(key.stringValue) \(value) (not \(expected))")
                return nil
            }
            return value
        }

        var current: Int?
        if (try? container.decodeNil(forKey: .current)) == false {
            current = checked(.current, Int.self, expected: "an index from 0") { $0 >= 0 }
        }
        let positions = SavedState.positions
        let position = checked(.position, Int64.self, expected: "\(positions.lowerBound) to \(positions.upperBound) µs")
        { positions.contains($0) }
        let volume = checked(.volume, Double.self, expected: "a volume from 0 to 1") { SavedState.volumes.contains($0) }
        let rates = Config.rateLimits
        let rate = checked(.rate, Double.self, expected: "a rate from \(rates.lowerBound) to \(rates.upperBound)") {
            rates.contains($0)
        }
        let loop = checked(
            .loop, String.self, expected: Player.RepeatMode.allCases.map(\.rawValue).joined(separator: ", ")
        ) {
            Player.RepeatMode(rawValue: $0) != nil
        }
        let shuffle = checked(.shuffle, Bool.self, expected: "true or false") { _ in true }
        state = SavedState(
            version: version, queueCount: queueCount, queueGeneration: queueGeneration, current: current,
            position: position ?? 0, volume: volume ?? SavedState.defaultVolume, rate: rate ?? SavedState.defaultRate,
            loop: loop ?? Player.RepeatMode.off.rawValue, shuffle: shuffle ?? false)
        self.dropped = dropped
    }
}

/// Reads and writes the saved session (`SavedState` and the queue file it names) in one
/// folder (0700, files 0600): each save whole (see ``SessionCommit``), each start restoring
/// the newest whole save, or the queue at least (see ``SessionRestore``).
///
/// What it reads is checked as closely as what clients send over D-Bus: the files' sizes
/// before they are read, each field's range, and each queued URI against the schemes and the
/// length `OpenUri` accepts. A folder that is a symbolic link is neither written through nor
/// made 0700; that is said once.
struct StateStore: Sendable {
    let folder: URL
    let logger: Logger

    /// The largest `state.json` read: a state is a few hundred bytes.
    static let maximumStateBytes = 1 << 20
    /// The largest queue file read: room for a few hundred thousand entries.
    static let maximumQueueBytes = 64 << 20
    /// Queue entries refused are named in the log up to this many; the rest are counted.
    static let droppedEntriesNamed = 5

    var stateFile: URL { folder.appendingPathComponent(SessionFiles.state) }
    /// The path of a queue file of the folder.
    func url(of file: SessionFiles.QueueFile) -> URL { folder.appendingPathComponent(file.name) }
    private var privateFolder: PrivateFolder { PrivateFolder(folder) }
    private static let notSaved = "the session is not saved"

    /// What the start restores.
    struct Restored {
        /// The state, its fields checked, and its current entry following the queue's.
        var state: SavedState
        /// The queue's entries that Quaver opens.
        var queue: [String]
        /// The generation of the queue file `queue` is exactly, named by the state: a state
        /// alone may name it again. Nil when the queue must be written before a state names
        /// it (restored from the old format, without its state, or with entries dropped).
        var generation: Int?
    }

    // MARK: - Start

    /// What the folder holds at start.
    struct Found {
        /// What is restored, when restoring was asked for and anything is.
        var restored: Restored?
        /// The highest queue generation in the folder (see `newestGeneration`).
        var newest: Int
    }

    /// Tidies the folder at start and reads what it holds, under its lock (see `lock`):
    /// removes the temporary files runs killed left, restores the session when `restoring`,
    /// and finds the newest queue generation. The folder is not made when missing: a start
    /// writes nothing. One that is refused, or cannot be opened, is read without the lock.
    func start(restoring: Bool) -> Found {
        let descriptor =
            privateFolder.refusal() == nil
            ? Glibc.open(folder.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1
        if descriptor >= 0 { Self.lock(descriptor) }
        defer { if descriptor >= 0 { close(descriptor) } }
        removeStaleTemporaries()
        let restored = restoring ? load() : nil
        return Found(restored: restored, newest: newestGeneration())
    }

    /// Removes the temporary files of writes that will not finish: left by runs killed, or
    /// cut off, between writing one and renaming it. A running process's are kept.
    private func removeStaleTemporaries() {
        guard privateFolder.refusal() == nil,
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return }
        let stale = SessionFiles.staleTemporaries(in: names) { pid in kill(pid, 0) == 0 || errno == EPERM }
        guard !stale.isEmpty else { return }
        let removed = stale.filter { unlink(folder.appendingPathComponent($0).path) == 0 }
        if !removed.isEmpty {
            logger.info("removed \(removed.count) temporary files that killed runs left in \(folder.path)")
        }
    }

    /// The highest queue generation in the folder: of its queue files, and the one the state
    /// names. The next queue file written is one more, so no number names two queues.
    private func newestGeneration() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let files = SessionFiles.queueFiles(in: names).map(\.number).max() ?? 0
        guard case .read(let checked) = readState() else { return files }
        return max(files, checked.state.queueGeneration ?? 0)
    }

    /// The saved session; nil when nothing is restored. What is damaged is moved aside
    /// (`<name>.corrupt`) or removed, and reported (see ``SessionRestore``). Fields out of
    /// range and queue entries Quaver does not open are dropped, with a log line, and the
    /// rest is restored.
    private func load() -> Restored? {
        let refusal = privateFolder.refusal()
        if let refusal { PrivateFolder.reportOnce(refusal, logger: logger, Self.notSaved) }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let plan = SessionRestore.plan(
            state: readState(), queueFiles: SessionFiles.queueFiles(in: names), read: readQueue)
        let then = plan.restored.map { "restoring the queue of \($0.file) without the position" } ?? "starting afresh"
        for aside in plan.setAside {
            setAside(
                folder.appendingPathComponent(aside.name), refused: refusal != nil, because: aside.reason, then: then)
        }
        for warning in plan.warnings { logger.warning("\(folder.path): \(warning)") }
        if refusal == nil {
            let removed = plan.removed.filter { unlink(url(of: $0).path) == 0 }
            if !removed.isEmpty {
                logger.info(
                    "removed \(removed.map(\.name).joined(separator: ", ")) from \(folder.path): no whole save names them (saves cut short)"
                )
            }
        }
        guard let restored = plan.restored else { return nil }

        var state = restored.state
        let queue = restored.queue
        var dropped = restored.dropped
        if let current = state.current, !queue.indices.contains(current) {
            dropped.append("current \(current) (outside the queue of \(queue.count))")
            state.current = nil
        }
        let kept = keepOpenable(queue, from: restored.file)
        state.queueCount = kept.queue.count
        if let current = state.current {
            state.current = kept.newIndex[current]
            if state.current == nil { dropped.append("current \(current) (its entry is dropped)") }
        }
        if state.current == nil { state.position = 0 }
        if !dropped.isEmpty {
            logger.warning("\(stateFile.path): dropped \(dropped.joined(separator: ", ")); restoring the rest")
        }
        var generation: Int?
        if restored.whole, kept.queue.count == queue.count, case .generation(let number) = restored.file {
            generation = number
        }
        return Restored(state: state, queue: kept.queue, generation: generation)
    }

    /// `state.json` as read: missing, unreadable (too large, not JSON, not a state), or its
    /// fields checked.
    private func readState() -> SessionRestore.Reading<CheckedState> {
        let data: Data
        do {
            data = try PrivateFolder.read(stateFile, limit: Self.maximumStateBytes)
        } catch .missing {
            return .missing
        } catch {
            return .unreadable("\(error)", setAside: true)
        }
        do {
            return .read(try JSONDecoder().decode(CheckedState.self, from: data))
        } catch {
            return .unreadable("not a Quaver state file (\(Self.describe(error)))", setAside: true)
        }
    }

    /// The entries of a queue file as written. The unnumbered file missing is an empty
    /// queue: the version that wrote it wrote an empty queue so. One too large is to be set
    /// aside without being read.
    private func readQueue(_ file: SessionFiles.QueueFile) -> SessionRestore.Reading<[String]> {
        let data: Data
        do {
            data = try PrivateFolder.read(url(of: file), limit: Self.maximumQueueBytes)
        } catch .missing {
            return file == .unnumbered ? .read([]) : .missing
        } catch {
            if case .tooLarge = error { return .unreadable("\(error)", setAside: true) }
            return .unreadable("\(error)", setAside: false)
        }
        let text = String(decoding: data, as: UTF8.self)
        return .read(
            text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty })
    }

    /// The entries Quaver opens (those `OpenUri` would accept: a supported scheme, no
    /// longer than a D-Bus client may send), and where each old index went. The others are
    /// logged: a queue file is edited by hand, or by another program, as easily as a
    /// client calls `OpenUri`.
    private func keepOpenable(_ queue: [String], from file: SessionFiles.QueueFile) -> (
        queue: [String], newIndex: [Int: Int]
    ) {
        var kept: [String] = []
        var newIndex: [Int: Int] = [:]
        var refused: [String] = []
        var refusedCount = 0
        kept.reserveCapacity(queue.count)
        for (index, entry) in queue.enumerated() {
            if let reason = Self.refusal(ofQueued: entry) {
                refusedCount += 1
                if refused.count < Self.droppedEntriesNamed { refused.append("\(entry.prefix(200)) (\(reason))") }
            } else {
                newIndex[index] = kept.count
                kept.append(entry)
            }
        }
        if refusedCount > 0 {
            let more = refusedCount > refused.count ? " and \(refusedCount - refused.count) more" : ""
            logger.warning(
                "\(url(of: file).path): dropped \(refusedCount) entries Quaver does not open: \(refused.joined(separator: ", "))\(more)"
            )
        }
        return (kept, newIndex)
    }

    /// Why a queued entry is not opened, or nil when it is.
    static func refusal(ofQueued entry: String) -> String? {
        guard entry.utf8.count <= MPRISServer.maximumURILength else {
            return "longer than \(MPRISServer.maximumURILength) bytes"
        }
        guard let scheme = MediaSources.scheme(of: entry) else { return "not a URI" }
        guard MediaSources.supportedSchemes.contains(scheme) else {
            return "the scheme '\(scheme)' is not one of \(MediaSources.supportedSchemes.joined(separator: ", "))"
        }
        return nil
    }

    /// Moves `file` aside (`<name>.corrupt`) and logs why, and what the start does instead;
    /// left in place, unread, when the folder is a symbolic link (moving it would write
    /// through the link).
    private func setAside(_ file: URL, refused: Bool, because reason: String, then: String) {
        let aside = folder.appendingPathComponent(file.lastPathComponent + ".corrupt")
        var outcome = "left it in place"
        if !refused {
            try? FileManager.default.removeItem(at: aside)
            outcome =
                rename(file.path, aside.path) == 0
                ? "moved it aside to \(aside.lastPathComponent)" : "could not move it aside"
        }
        logger.error("cannot restore the saved session from \(file.path): \(reason); \(outcome) and \(then)")
    }

    // MARK: - Saving

    /// Why a save was not written.
    enum SaveError: Error, CustomStringConvertible {
        /// A state alone, while no queue file holds the queue it describes.
        case queueNotWritten
        /// A call on this path failed with this `errno`.
        case system(String, Int32)

        /// The reason, for the log.
        var description: String {
            switch self {
            case .queueNotWritten: "the queue it goes with is not on disk (not written, or replaced by another Quaver)"
            case .system(let path, let code): "\(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// Writes one save, whole or not at all: the state, and the queue first when `queue` is
    /// given, as `commit` plans it (and updated as its steps succeed or fail). Off the main
    /// actor, in the writer's order.
    func save(_ state: SavedState, queue: [String]?, commit: inout SessionCommit) -> SessionSave.Outcome {
        let descriptor: Int32
        do {
            descriptor = try privateFolder.open()
        } catch {
            _ = commit.begin(queue: queue != nil, found: nil)
            if PrivateFolder.reportOnce(error, logger: logger, Self.notSaved) { return .refused }
            return .failed("\(error)")
        }
        defer { close(descriptor) }
        Self.lock(descriptor)
        let found = SessionFiles.queueFiles(in: Self.names(in: descriptor))
        guard let steps = commit.begin(queue: queue != nil, found: found) else {
            return .failed("\(SaveError.queueNotWritten)")
        }
        for step in steps {
            do {
                try perform(step, in: descriptor, state: state, queue: queue ?? [])
                commit.succeeded(step)
            } catch {
                guard step.mustSucceed else { continue }
                for undo in commit.failed() { try? perform(undo, in: descriptor, state: state, queue: []) }
                return .failed("\(error)")
            }
        }
        return .written
    }

    /// Holds the folder open as `descriptor` for this process until it is closed: saves and
    /// starts of Quavers sharing the folder (`--instance new`) take turns, so that none sees
    /// another's save half done. A file system without locks is used without them.
    private static func lock(_ descriptor: Int32) {
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
    }

    /// Carries out one step of a save in the folder open as `descriptor`.
    private func perform(_ step: SessionCommit.Step, in descriptor: Int32, state: SavedState, queue: [String]) throws {
        switch step {
        case .writeQueue(let generation):
            var text = "#EXTM3U\n"
            text.reserveCapacity(queue.reduce(8) { $0 + $1.utf8.count + 1 })
            for uri in queue { text += uri + "\n" }
            try PrivateFolder.replace(
                SessionFiles.QueueFile.generation(generation).name, in: descriptor, with: Data(text.utf8), sync: true,
                folderPath: folder.path)
        case .syncFolder:
            guard fsync(descriptor) == 0 else { throw SaveError.system(folder.path, errno) }
        case .writeState(let generation):
            var state = state
            state.version = SavedState.currentVersion
            state.queueGeneration = generation
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try PrivateFolder.replace(
                SessionFiles.state, in: descriptor, with: try encoder.encode(state), sync: true, folderPath: folder.path
            )
        case .removeQueues(let kept):
            for file in SessionFiles.queueFiles(in: Self.names(in: descriptor)) where file != .generation(kept) {
                try Self.remove(file.name, in: descriptor)
            }
        case .removeQueue(let generation):
            try Self.remove(SessionFiles.QueueFile.generation(generation).name, in: descriptor)
        }
    }

    /// Removes `name` from the folder open as `descriptor`; one already gone is no failure.
    private static func remove(_ name: String, in descriptor: Int32) throws {
        guard unlinkat(descriptor, name, 0) == 0 || errno == ENOENT else { throw SaveError.system(name, errno) }
    }

    /// The names in the folder open as `descriptor`, listed through a descriptor of its own
    /// (opened anew, so that no earlier listing's offset is shared).
    private static func names(in descriptor: Int32) -> [String] {
        let own = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0 else { return [] }
        guard let listing = fdopendir(own) else {
            close(own)
            return []
        }
        defer { closedir(listing) }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }
}
