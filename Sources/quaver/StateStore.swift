import FoundationEssentials
import Glibc
import Logging
import Media
import NowPlaying
import PlaybackPlayer
import PlaybackVocabulary

/// What survives a restart: the queue, where playback was, and the playback options.
///
/// Kept in `$XDG_STATE_HOME/quaver/` as two files: `queue.m3u8` (rewritten only when the
/// queue changes, since it can be long) and `state.json` (small, rewritten at each pause,
/// stop, seek and track change). Both are written to a temporary file, flushed to disk and
/// renamed over the old one, so a crash leaves either the old or the new file, never half.
struct SavedState: Codable, Equatable {
    static let currentVersion = 1

    var version = SavedState.currentVersion
    /// Number of entries `queue.m3u8` must hold for this state to apply to it.
    var queueCount: Int
    /// Index of the current entry in the queue.
    var current: Int?
    /// Where playback was, in microseconds.
    var position: Int64
    var volume: Double
    var rate: Double
    var loop: String
    var shuffle: Bool

    enum CodingKeys: String, CodingKey {
        case version, queueCount, current, position, volume, rate, loop, shuffle
    }

    /// The positions a state may hold, in microseconds: a week, longer than any track
    /// seeks, and far below what converting it to nanoseconds could overflow.
    static let positions: ClosedRange<Int64> = 0...(7 * 86_400 * 1_000_000)
    static let volumes: ClosedRange<Double> = 0...1
    /// What the player starts with, taken in place of a value dropped.
    static let defaultVolume = 1.0
    static let defaultRate = 1.0
}

/// A state file as read: every field checked on its own, those out of range replaced by
/// what the player starts with (the current entry by none) and named in `dropped`.
struct CheckedState: Decodable {
    var state: SavedState
    var dropped: [String] = []

    init(from decoder: any Decoder) throws {
        typealias Key = SavedState.CodingKeys
        let container = try decoder.container(keyedBy: Key.self)
        // Without these two the file cannot be matched to a queue: not a state file at all.
        let version = try container.decode(Int.self, forKey: .version)
        let queueCount = try container.decode(Int.self, forKey: .queueCount)
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
            version: version, queueCount: queueCount, current: current, position: position ?? 0,
            volume: volume ?? SavedState.defaultVolume, rate: rate ?? SavedState.defaultRate,
            loop: loop ?? Player.RepeatMode.off.rawValue, shuffle: shuffle ?? false)
        self.dropped = dropped
    }
}

/// Reads and writes `SavedState` and the queue, atomically, in one folder (0700, files 0600).
///
/// What it reads is checked as closely as what clients send over D-Bus: the files' sizes
/// before they are read, each field's range, and each queued URI against the schemes and the
/// length `OpenUri` accepts. A folder that is a symbolic link is neither written through nor
/// made 0700; that is said once.
struct StateStore {
    let folder: URL
    let logger: Logger

    /// The largest `state.json` read: a state is a few hundred bytes.
    static let maximumStateBytes = 1 << 20
    /// The largest `queue.m3u8` read: room for a few hundred thousand entries.
    static let maximumQueueBytes = 64 << 20
    /// Queue entries refused are named in the log up to this many; the rest are counted.
    static let droppedEntriesNamed = 5

    var stateFile: URL { folder.appendingPathComponent("state.json") }
    var queueFile: URL { folder.appendingPathComponent("queue.m3u8") }
    private var privateFolder: PrivateFolder { PrivateFolder(folder) }
    private static let notSaved = "the session is not saved"

    enum LoadError: Error, CustomStringConvertible {
        case corrupt(String)
        var description: String {
            switch self {
            case .corrupt(let reason): reason
            }
        }
    }

    /// The saved state and queue; nil when nothing was saved. A file that cannot be read as
    /// a state (or is too large to be one) is moved aside (`state.json.corrupt`) and
    /// reported, and nil is returned. Fields out of range and queue entries Quaver does not
    /// open are dropped, with a log line, and the rest is restored.
    func load() -> (state: SavedState, queue: [String])? {
        let refusal = privateFolder.refusal()
        if let refusal { PrivateFolder.reportOnce(refusal, logger: logger, Self.notSaved) }
        do {
            let data: Data
            do {
                data = try PrivateFolder.read(stateFile, limit: Self.maximumStateBytes)
            } catch PrivateFolder.ReadFailure.missing {
                return nil
            }
            let checked: CheckedState
            do {
                checked = try JSONDecoder().decode(CheckedState.self, from: data)
            } catch {
                throw LoadError.corrupt("not a Quaver state file (\(Self.describe(error)))")
            }
            var state = checked.state
            guard state.version == SavedState.currentVersion else {
                throw LoadError.corrupt("state version \(state.version) is not \(SavedState.currentVersion)")
            }
            let queue = try loadQueue(refused: refusal != nil)
            guard queue.count == state.queueCount else {
                throw LoadError.corrupt(
                    "\(queueFile.path) holds \(queue.count) entries, the state expects \(state.queueCount)")
            }
            var dropped = checked.dropped
            if let current = state.current, !queue.indices.contains(current) {
                dropped.append("current \(current) (outside the queue of \(queue.count))")
                state.current = nil
            }
            let kept = keepOpenable(queue)
            state.queueCount = kept.queue.count
            if let current = state.current {
                state.current = kept.newIndex[current]
                if state.current == nil { dropped.append("current \(current) (its entry is dropped)") }
            }
            if state.current == nil { state.position = 0 }
            if !dropped.isEmpty {
                logger.warning("\(stateFile.path): dropped \(dropped.joined(separator: ", ")); restoring the rest")
            }
            return (state, kept.queue)
        } catch {
            setAside(stateFile, refused: refusal != nil, because: "\(error)")
            return nil
        }
    }

    /// The entries of `queue.m3u8` as written; none when it is missing. One too large is
    /// set aside without being read.
    private func loadQueue(refused: Bool) throws -> [String] {
        let data: Data
        do {
            data = try PrivateFolder.read(queueFile, limit: Self.maximumQueueBytes)
        } catch PrivateFolder.ReadFailure.missing {
            return []
        } catch {
            if case PrivateFolder.ReadFailure.tooLarge = error {
                setAside(queueFile, refused: refused, because: "\(error)")
            }
            throw LoadError.corrupt("cannot read the queue: \(error)")
        }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
    }

    /// The entries Quaver opens (those `OpenUri` would accept: a supported scheme, no
    /// longer than a D-Bus client may send), and where each old index went. The others are
    /// logged: a queue file is edited by hand, or by another program, as easily as a
    /// client calls `OpenUri`.
    private func keepOpenable(_ queue: [String]) -> (queue: [String], newIndex: [Int: Int]) {
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
                "\(queueFile.path): dropped \(refusedCount) entries Quaver does not open: \(refused.joined(separator: ", "))\(more)"
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

    /// Moves `file` aside (`<name>.corrupt`) and logs why; left in place, unread, when the
    /// folder is a symbolic link (moving it would write through the link).
    private func setAside(_ file: URL, refused: Bool, because reason: String) {
        let aside = folder.appendingPathComponent(file.lastPathComponent + ".corrupt")
        var outcome = "left it in place"
        if !refused {
            try? FileManager.default.removeItem(at: aside)
            outcome =
                rename(file.path, aside.path) == 0
                ? "moved it aside to \(aside.lastPathComponent)" : "could not move it aside"
        }
        logger.error("cannot restore the saved session from \(file.path): \(reason); \(outcome) and starting afresh")
    }

    func save(_ state: SavedState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try write(encoder.encode(state), named: stateFile.lastPathComponent)
    }

    func saveQueue(_ uris: [String]) throws {
        var text = "#EXTM3U\n"
        text.reserveCapacity(uris.reduce(8) { $0 + $1.utf8.count + 1 })
        for uri in uris { text += uri + "\n" }
        try write(Data(text.utf8), named: queueFile.lastPathComponent)
    }

    /// Replaces a file of the folder with `data`, flushed to disk. A folder refused (a
    /// symbolic link) is reported once and the write skipped, not thrown: the caller logs
    /// every failure, and this one recurs at every save.
    private func write(_ data: Data, named name: String) throws {
        do {
            try privateFolder.replace(name, with: data)
        } catch {
            if PrivateFolder.reportOnce(error, logger: logger, Self.notSaved) { return }
            throw error
        }
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
