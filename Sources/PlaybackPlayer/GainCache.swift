import Dispatch
public import FoundationEssentials
public import Logging
public import Media
public import PlaybackEngine
public import PlaybackPipeline
public import PlaybackVocabulary

/// The gains measured for tracks without tags, kept in `$XDG_CACHE_HOME/quaver/loudness`
/// (a 0600 file in a 0700 folder) so that a track measured once plays at its gain from then
/// on, across restarts.
///
/// Each measurement is stored with the file's signature (path, size, modification time):
/// a file changed since is measured again. At most ``maximumEntries`` are kept, the least
/// recently played going first. The file is replaced whole, atomically; one that cannot be
/// read as the format below is ignored (and replaced at the next measurement), never fatal.
///
/// The main actor never waits for the file: it is read in the background from the start,
/// and taken on the main actor once read. A gain asked for before that is not known (the
/// track plays at the fallback gain and is measured again); a measurement stored before
/// that is kept over the file's, and the file is written once both are in.
@MainActor
public final class GainCache {
    /// The most measurements kept: the file stays small however large the library.
    public nonisolated static let maximumEntries = 20_000
    /// The first line of the file; another one means another format.
    nonisolated static let header = "quaver-loudness 1"
    /// The file's name in its folder.
    public nonisolated static let fileName = "loudness"

    private struct Entry: Sendable {
        var signature: TrackSignature
        var gain: MeasuredGain
        /// When it was last stored or played, as a count: the lowest goes first.
        var used: Int
    }

    private var entries: [String: Entry] = [:]
    private var uses = 0
    private let folder: PrivateFolder?
    private let logger: Logger
    private let writer = DispatchQueue(label: "quaver.loudness-cache")
    /// The file as read in the background (nil until it is), taken on the main actor: a
    /// large cache does not hold up the start, nor anything after it.
    private let read = Locked<[String: Entry]?>(nil)
    /// Whether the file's measurements are in `entries` (or there is no file).
    private var adopted = false
    private let limit: Int

    /// The cache in `folder` (nil: kept in memory only), read in the background from now,
    /// keeping at most `limit` measurements.
    public init(folder: PrivateFolder?, limit: Int = maximumEntries, logger: Logger) {
        self.folder = folder
        self.limit = max(limit, 1)
        self.logger = logger
        guard let folder else {
            adopted = true
            return
        }
        let read = self.read
        writer.async {
            let found = Self.entries(in: folder, logger: logger)
            read.withLock { $0 = found }
            DispatchQueue.main.async { [weak self] in MainActor.assumeIsolated { self?.adopt() } }
        }
    }

    private nonisolated static func entries(in folder: PrivateFolder, logger: Logger) -> [String: Entry] {
        let file = folder.url.appendingPathComponent(fileName)
        let data: Data
        do {
            data = try PrivateFolder.read(file, limit: 64 << 20)
        } catch .missing {
            return [:]
        } catch {
            logger.warning("ignoring the loudness cache \(file.path): cannot read it (\(error))")
            return [:]
        }
        do {
            var entries: [String: Entry] = [:]
            for (index, item) in try decode(data).enumerated() {
                entries[item.signature.path] = Entry(signature: item.signature, gain: item.gain, used: index)
            }
            return entries
        } catch {
            logger.warning("ignoring the loudness cache \(file.path): \(error); tracks without tags are measured again")
            return [:]
        }
    }

    /// Takes what the background read found, if it is done; never waits for it. What was
    /// stored before is kept over it, as the most recently used, and written with it.
    private func adopt() {
        guard !adopted,
            let found = read.withLock({ found in
                defer { found = nil }
                return found
            })
        else { return }
        adopted = true
        let stored = entries.values.sorted { $0.used < $1.used }
        entries = found
        uses = found.count
        for entry in stored {
            uses += 1
            entries[entry.signature.path] = Entry(signature: entry.signature, gain: entry.gain, used: uses)
        }
        dropLeastRecent()
        if !stored.isEmpty { save() }
    }

    /// How many measurements are kept.
    public var count: Int {
        adopt()
        return entries.count
    }

    /// The gain measured for the file as it is now (same size and modification time).
    public func gain(for signature: TrackSignature) -> MeasuredGain? {
        adopt()
        guard let entry = entries[signature.path], entry.signature == signature else { return nil }
        uses += 1
        entries[signature.path]?.used = uses
        return entry.gain
    }

    /// Keeps a measurement, and writes the file in the background.
    public func store(_ gain: MeasuredGain, for signature: TrackSignature) {
        adopt()
        uses += 1
        entries[signature.path] = Entry(signature: signature, gain: gain, used: uses)
        dropLeastRecent()
        save()
    }

    /// Keeps the cache to its limit, the least recently played going first.
    private func dropLeastRecent() {
        guard entries.count > limit else { return }
        let excess = entries.count - limit
        for entry in entries.values.sorted(by: { $0.used < $1.used }).prefix(excess) {
            entries[entry.signature.path] = nil
        }
    }

    /// Writes the file in the background, once the file's own measurements are in.
    private func save() {
        guard let folder, adopted else { return }
        let data = Self.encode(entries.values.sorted { $0.used < $1.used }.map { ($0.signature, $0.gain) })
        let logger = self.logger
        writer.async {
            do {
                try folder.replace(Self.fileName, with: data, sync: false)
            } catch {
                if !PrivateFolder.reportOnce(error, logger: logger, "measured gains are not kept") {
                    logger.warning("cannot write the loudness cache: \(error)")
                }
            }
        }
    }

    /// Calls `done` on the main actor once the file is read and taken, and the writes
    /// started so far (one of measurements stored before it was read among them) are on
    /// disk: before exit. The main actor does not wait meanwhile.
    public func flush(then done: @escaping @MainActor @Sendable () -> Void) {
        afterWrites { [weak self] in
            guard let self else { return done() }
            adopt()
            afterWrites(done)
        }
    }

    /// Returns once the file is read and taken, and the writes started so far are on disk.
    public func flush() async {
        await withCheckedContinuation { finished in flush { finished.resume() } }
    }

    /// Returns once the file is read and its measurements taken.
    public func waitUntilRead() async {
        await withCheckedContinuation { finished in
            afterWrites { [weak self] in
                self?.adopt()
                finished.resume()
            }
        }
    }

    /// Calls `body` on the main actor after what is on the writer queue now (the read first).
    private func afterWrites(_ body: @escaping @MainActor @Sendable () -> Void) {
        writer.async { DispatchQueue.main.async { MainActor.assumeIsolated { body() } } }
    }

    // MARK: - Format

    /// Why a cache file was not taken.
    public struct FormatError: Error, CustomStringConvertible {
        /// What is wrong, and where.
        public var description: String
    }

    /// The file: the header line, then one line per measurement, least recently used first:
    /// gain, peak, size, modification time and path, separated by tabs. The path comes last,
    /// with `%`, tab, line feed and carriage return written as `%25`, `%09`, `%0A`, `%0D`.
    public nonisolated static func encode(_ items: [(TrackSignature, MeasuredGain)]) -> Data {
        var text = header + "\n"
        for (signature, gain) in items {
            text += "\(gain.gain)\t\(gain.peak)\t\(signature.size)\t\(signature.modified)\t\(escape(signature.path))\n"
        }
        return Data(text.utf8)
    }

    /// The measurements in a file written by ``encode(_:)``; throws on anything else.
    public nonisolated static func decode(_ data: Data) throws(FormatError) -> [(
        signature: TrackSignature, gain: MeasuredGain
    )] {
        guard let text = String(data: data, encoding: .utf8) else {
            throw FormatError(description: "it is not UTF-8 text")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first.map(String.init) == header else {
            throw FormatError(description: "its first line is not \"\(header)\"")
        }
        if lines.last == "" { lines.removeLast() }
        var items: [(signature: TrackSignature, gain: MeasuredGain)] = []
        for (offset, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            guard fields.count == 5, let gain = Double(fields[0]), gain.isFinite, abs(gain) <= 100,
                let peak = Double(fields[1]), peak.isFinite, peak >= 0, peak <= 100,
                let size = Int64(fields[2]), size >= 0, let modified = Int64(fields[3]),
                let path = unescape(fields[4]), path.hasPrefix("/")
            else {
                throw FormatError(
                    description: "line \(offset + 1) is not \"gain<TAB>peak<TAB>size<TAB>mtime<TAB>path\"")
            }
            items.append(
                (TrackSignature(path: path, size: size, modified: modified), MeasuredGain(gain: gain, peak: peak)))
        }
        return items
    }

    nonisolated static func escape(_ path: String) -> String {
        var result = ""
        for character in path {
            switch character {
            case "%": result += "%25"
            case "\t": result += "%09"
            case "\n": result += "%0A"
            case "\r": result += "%0D"
            case "\r\n": result += "%0D%0A"
            default: result.append(character)
            }
        }
        return result
    }

    nonisolated static func unescape(_ field: Substring) -> String? {
        var result = ""
        var rest = field[...]
        while let percent = rest.firstIndex(of: "%") {
            result += rest[..<percent]
            let code = rest[rest.index(after: percent)...].prefix(2)
            switch code {
            case "25": result += "%"
            case "09": result += "\t"
            case "0A": result += "\n"
            case "0D": result += "\r"
            default: return nil
            }
            rest = rest[rest.index(percent, offsetBy: 3)...]
        }
        return result + rest
    }
}
