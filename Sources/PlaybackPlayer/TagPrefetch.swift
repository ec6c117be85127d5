import Dispatch
import Media
import PlaybackEngine
import PlaybackVocabulary

/// Which queued entries' tags are read in the background, and when.
///
/// Pure: whether an entry still needs reading is asked of the caller. Each entry is asked
/// for once while it waits; when more than ``maximumPending`` wait, only the latest requests
/// are kept; at most ``concurrent`` reads run at a time, each entry checked again when its
/// turn comes (it may have been read, or removed, meanwhile).
struct ReadSchedule: Sendable, Equatable {
    let concurrent: Int
    let maximumPending: Int
    /// The entries waiting to be read, oldest request first.
    private(set) var pending: [UInt64] = []
    private var requested = Set<UInt64>()
    /// How many reads run.
    private(set) var inFlight = 0

    init(concurrent: Int = 2, maximumPending: Int = 2_000) {
        self.concurrent = concurrent
        self.maximumPending = maximumPending
    }

    /// Asks for the tags of `ids`, those of them that are `needed` and not waiting already.
    mutating func request(_ ids: some Sequence<UInt64>, needed: (UInt64) -> Bool) {
        for id in ids where !requested.contains(id) && needed(id) {
            requested.insert(id)
            pending.append(id)
        }
        let excess = pending.count - maximumPending
        if excess > 0 {
            for id in pending.prefix(excess) { requested.remove(id) }
            pending.removeFirst(excess)
        }
    }

    /// The next entry to read now, if a read may start (it is then counted as running).
    mutating func next(needed: (UInt64) -> Bool) -> UInt64? {
        while inFlight < concurrent, !pending.isEmpty {
            let id = pending.removeFirst()
            requested.remove(id)
            guard needed(id) else { continue }
            inFlight += 1
            return id
        }
        return nil
    }

    /// A read ended.
    mutating func finished() {
        inFlight -= 1
    }
}

/// Tag prefetch and discovery: reads the tags of queued entries off the main actor, ahead of
/// their turn, and hands each result back on the main actor.
///
/// Three kinds of reads: the queue's entries in the background (lowest priority, see
/// ``ReadSchedule``), the entry that follows the current one (so that playbin gets it only
/// once it is known to be playable), and a patient second read of a file whose read before
/// loading timed out. What a result means for the queue is the owner's business.
@MainActor
final class TagPrefetch {
    /// What a finished read was for.
    enum Kind: Sendable { case background, patient }

    /// One serial queue per concurrent read. Not a global queue: using one starts
    /// libdispatch's worker-pool monitor, which then wakes the process every second.
    nonisolated static let queues = (0..<2).map { DispatchQueue(label: "quaver.tags.\($0)", qos: .utility) }
    /// How long a second read of a file whose first read timed out may take: it runs in the
    /// background while the file plays, so it can wait for a busy machine.
    nonisolated static let patientReadTimeout = Duration.seconds(60)

    /// Reads one file at a time, for the reads a load or the read-ahead waits on.
    let discoverer: Discoverer
    /// Where the cover images of the tracks read go (nil: none are looked for).
    let artwork: ArtworkCache?
    /// The URI of an entry whose tags are still needed, else nil.
    var uriToRead: @MainActor (UInt64) -> String? = { _ in nil }
    /// Told what a background or patient read found.
    var finished: @MainActor (UInt64, Result<TrackInfo, MediaError>, Kind) -> Void = { _, _, _ in }

    private var schedule = ReadSchedule(concurrent: TagPrefetch.queues.count)
    private var started = 0
    /// The entry whose tags are read ahead of its turn, if any.
    private var readingAhead: UInt64?

    init(artwork: ArtworkCache?) {
        self.artwork = artwork
        discoverer = Discoverer(artwork: artwork)
    }

    /// Reads the tags of these entries in the background, each entry once.
    func request(_ ids: some Sequence<UInt64>) {
        schedule.request(ids) { uriToRead($0) != nil }
        startReads()
    }

    /// Reads the entry that follows the current one, unless that read runs already;
    /// `completion` gets the result on the main actor.
    func readAhead(_ id: UInt64, uri: String, completion: @escaping @MainActor (Result<TrackInfo, MediaError>) -> Void)
    {
        guard readingAhead != id else { return }
        readingAhead = id
        discoverer.discover(uri) { [weak self] result in
            guard let self else { return }
            if readingAhead == id { readingAhead = nil }
            completion(result)
        }
    }

    /// Reads an entry again, with ``patientReadTimeout``, after its read before loading timed out.
    func readAgain(_ id: UInt64, uri: String) {
        run(id, uri: uri, timeout: Self.patientReadTimeout, kind: .patient)
    }

    private func startReads() {
        while let id = schedule.next(needed: { uriToRead($0) != nil }), let uri = uriToRead(id) {
            run(id, uri: uri, timeout: .seconds(5), kind: .background)
        }
    }

    private func run(_ id: UInt64, uri: String, timeout: Duration, kind: Kind) {
        let artwork = self.artwork
        started &+= 1
        Self.queues[started % Self.queues.count].async { [weak self] in
            // A file another reader reads now is not read again: its result comes when that
            // reading ends, and this queue goes on meanwhile.
            Discoverer.discover(uri, timeout: timeout, artwork: artwork) { result in
                DispatchQueue.main.async {
                    MainActor.assumeIsolated { self?.deliver(id, result, kind) }
                }
            }
        }
    }

    private func deliver(_ id: UInt64, _ result: Result<TrackInfo, MediaError>, _ kind: Kind) {
        if kind == .background { schedule.finished() }
        finished(id, result, kind)
        if kind == .background { startReads() }
    }
}
