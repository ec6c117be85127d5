import Dispatch
import PlaybackVocabulary

/// The readings of files by the discoverer, running now and done lately, shared by every
/// reader in the process: one reading of a file at a time.
///
/// The process owns them, not a reader: GStreamer's parsing of a file with a huge embedded
/// picture takes many times the picture's size in memory, and the player, the readers ahead
/// and the artwork reader asking for the same file at once, or queuing requests for it while
/// it is read, would each take that much. A request joins the reading of its file that runs
/// (same timeout and artwork cache), or one done lately that began after the request was
/// made (it saw the file, and the artwork cache, as they were when asked or later).
/// Joining never waits: the result is handed over when the reading ends.
enum SharedReadings {
    /// Reads `uri`, on the calling thread, and gives `completion` the result there; or joins
    /// a reading of it (see above) and returns at once, `completion` then called with that
    /// reading's result on the thread that read it.
    ///
    /// A local file is handed to GStreamer only when it is a regular file outside `/proc` and
    /// `/sys` (checked with `stat`): a FIFO, a socket or a device fails at once, naming what
    /// it is.
    static func read(
        _ uri: String, timeout: Duration, artwork: ArtworkCache?, askedAt: ContinuousClock.Instant?,
        completion: @escaping @Sendable (Result<TrackInfo, MediaError>) -> Void
    ) {
        if let path = MediaSources.filePath(ofURI: uri), let problem = LocalFiles.problem(playing: path) {
            return completion(.failure(MediaError(problem)))
        }
        let key = Reading.Key(uri: uri, timeout: timeout, artwork: artwork.map(ObjectIdentifier.init))
        let (reading, isFirst) = readings.withLock { readings -> (Reading, Bool) in
            let now = ContinuousClock.now
            readings.recent = readings.recent.filter { now - $0.value.finished < recentLimit }
            if let askedAt, let recent = readings.recent[key], recent.started >= askedAt { return (recent, false) }
            if let reading = readings.running[key] { return (reading, false) }
            let reading = Reading(started: now)
            readings.running[key] = reading
            return (reading, true)
        }
        guard isFirst else { return reading.join(completion) }
        let result = DiscovererReading.read(uri, timeout: timeout, artwork: artwork)
        readings.withLock { readings in
            if readings.running[key] === reading { readings.running[key] = nil }
            reading.finished = ContinuousClock.now
            guard case .success = result else { return }
            if readings.recent.count >= 256 { readings.recent.removeAll() }  // a queue read ahead in bulk
            readings.recent[key] = reading
        }
        reading.finish(result)
        completion(result)
    }

    /// ``read(_:timeout:artwork:askedAt:completion:)`` for a caller that wants the result
    /// on its own thread: it waits for a reading it joins. Only tests and tools call it, off
    /// the main queue, which the precondition holds to: the daemon reads with `read`.
    static func readNow(
        _ uri: String, timeout: Duration, artwork: ArtworkCache?, askedAt: ContinuousClock.Instant?
    ) -> Result<TrackInfo, MediaError> {
        dispatchPrecondition(condition: .notOnQueue(.main))
        let outcome = Locked<Result<TrackInfo, MediaError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        read(uri, timeout: timeout, artwork: artwork, askedAt: askedAt) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 } ?? .failure(MediaError("unreadable"))
    }

    /// Whether a reading of `uri` runs now (for tests).
    static func isReading(_ uri: String) -> Bool {
        readings.withLock { readings in readings.running.keys.contains { $0.uri == uri } }
    }

    /// How long a finished reading is kept for requests made before it began.
    private static let recentLimit = Duration.seconds(30)

    /// The readings running, and those done lately.
    private static let readings = Locked(Readings())

    private struct Readings: Sendable {
        var running: [Reading.Key: Reading] = [:]
        var recent: [Reading.Key: Reading] = [:]
    }

    /// One reading of a file, whose result others join.
    private final class Reading: @unchecked Sendable {
        struct Key: Hashable, Sendable {
            var uri: String
            var timeout: Duration
            var artwork: ObjectIdentifier?
        }

        /// The result once known, else who waits for it.
        private struct Outcome: Sendable {
            var result: Result<TrackInfo, MediaError>?
            var waiting: [@Sendable (Result<TrackInfo, MediaError>) -> Void] = []
        }

        let started: ContinuousClock.Instant
        /// When it ended; set under the lock of `readings`, and read only there.
        var finished: ContinuousClock.Instant
        private let outcome = Locked(Outcome())

        init(started: ContinuousClock.Instant) {
            self.started = started
            finished = started
        }

        /// Hands the result to `completion`: at once when the reading has ended, else when
        /// it ends.
        func join(_ completion: @escaping @Sendable (Result<TrackInfo, MediaError>) -> Void) {
            let known = outcome.withLock { outcome in
                if outcome.result == nil { outcome.waiting.append(completion) }
                return outcome.result
            }
            if let known { completion(known) }
        }

        /// Hands `result` to every caller that joined, and to any still to come.
        func finish(_ result: Result<TrackInfo, MediaError>) {
            let waiting = outcome.withLock { outcome in
                outcome.result = result
                defer { outcome.waiting = [] }
                return outcome.waiting
            }
            waiting.forEach { $0(result) }
        }
    }
}
