import Foundation
import Logging
import Playback

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
}

/// Reads and writes `SavedState` and the queue, atomically, in one folder (0700, files 0600).
struct StateStore {
    let folder: URL
    let logger: Logger

    var stateFile: URL { folder.appendingPathComponent("state.json") }
    var queueFile: URL { folder.appendingPathComponent("queue.m3u8") }

    enum LoadError: Error, CustomStringConvertible {
        case corrupt(String)
        var description: String {
            switch self {
            case .corrupt(let reason): reason
            }
        }
    }

    /// The saved state and queue; nil when nothing was saved. A file that cannot be read as
    /// a state is moved aside (`state.json.corrupt`) and reported, and nil is returned.
    func load() -> (state: SavedState, queue: [String])? {
        guard FileManager.default.fileExists(atPath: stateFile.path) else { return nil }
        do {
            let data = try Data(contentsOf: stateFile)
            let state: SavedState
            do {
                state = try JSONDecoder().decode(SavedState.self, from: data)
            } catch {
                throw LoadError.corrupt("not a Quaver state file (\(Self.describe(error)))")
            }
            guard state.version == SavedState.currentVersion else {
                throw LoadError.corrupt("state version \(state.version) is not \(SavedState.currentVersion)")
            }
            let text = (try? String(contentsOf: queueFile, encoding: .utf8)) ?? ""
            let queue = text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
            guard queue.count == state.queueCount else {
                throw LoadError.corrupt("\(queueFile.path) holds \(queue.count) entries, the state expects \(state.queueCount)")
            }
            if let current = state.current, !queue.indices.contains(current) {
                throw LoadError.corrupt("current entry \(current) is outside the queue of \(queue.count)")
            }
            return (state, queue)
        } catch {
            let aside = folder.appendingPathComponent("state.json.corrupt")
            try? FileManager.default.removeItem(at: aside)
            let moved = (try? FileManager.default.moveItem(at: stateFile, to: aside)) != nil
            logger.error("cannot restore the saved session from \(stateFile.path): \(error); \(moved ? "moved it aside to \(aside.lastPathComponent)" : "could not move it aside") and starting afresh")
            return nil
        }
    }

    func save(_ state: SavedState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try write(encoder.encode(state), to: stateFile)
    }

    func saveQueue(_ uris: [String]) throws {
        var text = "#EXTM3U\n"
        text.reserveCapacity(uris.reduce(8) { $0 + $1.utf8.count + 1 })
        for uri in uris { text += uri + "\n" }
        try write(Data(text.utf8), to: queueFile)
    }

    /// Writes `data` next to `url`, flushes it and renames it over `url`.
    private func write(_ data: Data, to url: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError("cannot create \(temporary.path): \(String(cString: strerror(errno)))") }
        var failure: String?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = String(cString: strerror(errno)) }
        close(fd)
        if failure == nil, rename(temporary.path, url.path) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary.path)
            throw StoreError("cannot write \(url.path): \(failure)")
        }
    }

    struct StoreError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
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
