import Dispatch
import PlaybackVocabulary

/// Reads tags and durations with GStreamer's discoverer on a background queue, one file
/// at a time, and delivers results on the main actor.
///
/// Each instance has one owner: the player's tag prefetch keeps the one that reads before
/// loads and ahead of the current entry, and the daemon keeps one that reads for artwork.
/// The readings themselves are shared by every reader in the process (`SharedReadings`):
/// a file being read is not read again alongside.
public final class Discoverer: Sendable {
    /// The queue the readings run on, one at a time (tests hold it to queue requests).
    let queue = DispatchQueue(label: "quaver.discoverer", qos: .userInitiated)
    private let timeout: Duration
    /// Where cover images found while reading go; nil: artwork is not looked for.
    public let artwork: ArtworkCache?

    /// A reader that gives up on a file after `timeout`, and stores the cover images it
    /// finds in `artwork` (nil: none are looked for).
    public init(timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil) {
        GStreamer.initialize()
        self.timeout = timeout
        self.artwork = artwork
    }

    /// Reads `uri` in the background and calls `completion` on the main actor. A request for
    /// a file this discoverer is reading, or has queued, gets that reading's result; so does
    /// one for a file another reader began reading after the request (see
    /// `SharedReadings`), and the queue goes on with the next file meanwhile.
    public func discover(
        _ uri: String, completion: @escaping @MainActor @Sendable (Result<TrackInfo, MediaError>) -> Void
    ) {
        let isNew = requests.withLock { requests in
            requests[uri, default: []].append(completion)
            return requests[uri]!.count == 1
        }
        guard isNew else { return }
        let timeout = self.timeout
        let artwork = self.artwork
        let requests = self.requests
        let asked = ContinuousClock.now
        queue.async {
            SharedReadings.read(uri, timeout: timeout, artwork: artwork, askedAt: asked) { result in
                let completions = requests.withLock { $0.removeValue(forKey: uri) ?? [] }
                DispatchQueue.main.async { MainActor.assumeIsolated { completions.forEach { $0(result) } } }
            }
        }
    }

    /// What each file queued or being read is to be handed to, in the order asked.
    private let requests = Locked<[String: [@MainActor @Sendable (Result<TrackInfo, MediaError>) -> Void]]>([:])

    /// Reads `uri` on the calling thread (blocking up to the timeout). With `artwork`, the
    /// cover image (embedded, else beside the file) is stored there and named in the result.
    /// Never call it on the main actor: it waits for GStreamer.
    ///
    /// A local file is handed to GStreamer only when it is a regular file outside `/proc` and
    /// `/sys` (checked with `stat`): a FIFO, a socket or a device fails at once, naming what
    /// it is. A file already being read with the same timeout and cache is not read again
    /// alongside: the call waits for that reading and gives its result.
    public static func discoverNow(
        _ uri: String, timeout: Duration = .seconds(5), artwork: ArtworkCache? = nil
    ) -> Result<TrackInfo, MediaError> {
        SharedReadings.readNow(uri, timeout: timeout, artwork: artwork, askedAt: nil)
    }

    /// `discoverNow`, for a request made at `askedAt` and run later (see ``SharedReadings``).
    static func discoverNow(
        _ uri: String, timeout: Duration, artwork: ArtworkCache?, askedAt: ContinuousClock.Instant?
    ) -> Result<TrackInfo, MediaError> {
        SharedReadings.readNow(uri, timeout: timeout, artwork: artwork, askedAt: askedAt)
    }

    /// Reads `uri` on the calling thread, or, when another reader reads it now, hands
    /// `completion` that reading's result once it ends (on the thread that read it) and
    /// returns at once: a background queue is never held waiting for another's reading.
    package static func discover(
        _ uri: String, timeout: Duration, artwork: ArtworkCache?,
        completion: @escaping @Sendable (Result<TrackInfo, MediaError>) -> Void
    ) {
        SharedReadings.read(uri, timeout: timeout, artwork: artwork, askedAt: nil, completion: completion)
    }
}
