import Foundation
public import Logging

/// A play queue and its transport over a GStreamer pipeline.
///
/// The façade wires the parts together: the queue, the play order (``PlayOrder``), the
/// transport state machine (``Transport``), the pipeline that alone touches GStreamer, and a
/// position clock. Commands return at once; `status` is the settled truth, changed only when
/// the pipeline confirms it (or at once for stop, errors and the end of the queue). The
/// observer is told after each settled change, never about transient pipeline states (a
/// seek's flush, a gapless switch, buffering).
@MainActor
public final class Player {
    /// One entry of the queue.
    public struct Entry: Sendable, Equatable, Identifiable {
        /// Unique in this process, never reused: the same file queued twice has two ids.
        public let id: UInt64
        /// What plays: a `file:` URI or a network stream's URL.
        public let uri: String
        /// The tags, once read (boxed, so that an entry of a long queue stays small).
        public internal(set) var info: TrackInfo? {
            get { infoBox?.info }
            set { infoBox = newValue.map(InfoBox.init) }
        }
        /// Why the entry cannot be played, once that is known.
        public internal(set) var failure: String?
        private var infoBox: InfoBox?

        init(id: UInt64, uri: String) {
            self.id = id
            self.uri = uri
        }

        public static func == (a: Entry, b: Entry) -> Bool {
            a.id == b.id && a.uri == b.uri && a.failure == b.failure && a.info == b.info
        }
    }

    private final class InfoBox: Sendable {
        let info: TrackInfo
        init(_ info: TrackInfo) { self.info = info }
    }

    /// What clients are told of the transport.
    public enum Status: String, Sendable { case stopped, paused, playing }

    /// What follows the last entry, or the current one at its end.
    public enum RepeatMode: String, Sendable, CaseIterable { case off, one, all }

    /// What kind of change the observer is told about.
    public enum Change: Sendable, Equatable {
        /// Status, current entry, position or rate changed (a moment to republish the timing).
        case transport
        /// The current entry's metadata changed.
        case metadata
        /// The volume changed.
        case volume
        /// Repeat or shuffle changed.
        case options
        /// Entries were added, removed or replaced (`queueRevision` changed).
        case queue
        /// The tags of an entry were read, or it was found unplayable.
        case entryInfo(UInt64)
    }

    /// The queue in order.
    public var entries: [Entry] { queue.entries }
    /// Changes whenever entries are added, removed or replaced.
    public var queueRevision: Int { queue.revision }
    /// How many entries are queued.
    public var count: Int { queue.count }
    var queue = PlayQueue()
    /// What clients are told: changes only once the pipeline confirms it.
    public var status: Status { transport.status }
    /// The entry the pipeline plays (or, when stopped, the one Play would start).
    public internal(set) var current: Entry? {
        didSet {
            if let left = oldValue, left.id != current?.id, left.info?.oversizedPictureBytes != nil { trimHeapSoon() }
        }
    }
    /// The playback rate (1: normal speed).
    public var rate: Double { transport.rate }
    /// The volume, on the cubic scale of desktop mixers (0...1).
    public internal(set) var volume: Double = 1
    /// What follows the last entry, or the current one at its end.
    public var repeatMode: RepeatMode { order.repeatMode }
    /// Whether entries play in a random order.
    public var shuffle: Bool { order.shuffle }
    /// The rates ``setRate(_:)`` accepts; others are clamped into it.
    public let supportedRates: ClosedRange<Double>
    /// Told after each settled change.
    public var onChange: (@MainActor (Change) -> Void)?
    /// How loudness is levelled: a change applies from the next track on.
    public var loudness = LoudnessSettings() {
        didSet {
            // The track handed over already keeps the gain it was given.
            if loudness != oldValue, !pipeline.handoff.hasCommitted { prepareNext() }
        }
    }
    /// The gains measured for tracks without tags (nil: none are kept).
    public var gainCache: GainCache?

    var transport = Transport()
    var order = PlayOrder()
    var random = SystemRandomNumberGenerator()
    var clock = PositionClock()
    var pipeline: Pipeline!
    /// Which pipeline's events are heard: a replaced one's are not.
    var pipelineNumber = 0
    /// Which load's events are heard: those of a stream taken down are not.
    var loadNumber = 0
    let audioSink: String?
    let stuckLimit: Duration
    let discoverer: Discoverer
    /// Where the cover images of the tracks read go (nil: none are looked for).
    public let artwork: ArtworkCache?
    let logger: Logger
    var nextEntryID: UInt64 = 1
    var selectedIndex: Int?
    /// The direction the selection last moved in: a failed entry is skipped the same way.
    var travelsForward = true
    /// A load waiting for its entry's tags (read first, so that clients see one Metadata for
    /// a file, and a broken file is skipped before it reaches the pipeline).
    var pendingRead: PendingRead?
    var readGeneration = 0
    /// Playback stopped because the queue ran out (the end, or nothing playable left), not
    /// because someone stopped it: tracks queued now may go on from there.
    public internal(set) var ranOut = false
    var consecutiveFailures = 0
    /// What the pipeline last said of the loaded stream (its duration, whether it seeks).
    var facts = Pipeline.Facts()
    /// The factory names of the elements the loaded stream plays through.
    public internal(set) var pipelineElementNames: [String] = []
    /// The next STREAM_START of this load is its own stream's, not a gapless switch.
    var awaitingOwnStreamStart = false
    /// When the last gapless switch happened: the pipeline reports the old stream's position
    /// for a moment after it, so its answers are not taken until then.
    var switchedAt: ContinuousClock.Instant?
    var lastPositionQuery: ContinuousClock.Instant?
    var prerollWaitGeneration = 0
    /// The decoder bin of a handed-over stream that failed: its later errors are echoes.
    var ignoredErrorSource: String?
    var warnedAboutNullSink = false
    /// How many pipelines GStreamer got stuck in and were replaced.
    public internal(set) var pipelinesReplaced = 0
    /// Playback was paused by an interruption (the sound server corked the stream for a call
    /// or an alarm) and nobody has paused, stopped, played or changed track since: when the
    /// interruption ends, playback resumes (Apple's `shouldResume`). Never otherwise.
    var resumeAfterInterruption = false

    // Network streams.
    var bufferingPercent = -1
    var streamTags = StreamTags()
    var stallWatch: (any DispatchSourceTimer)?
    /// How long a network stream may send nothing before it is reported and skipped.
    public var streamStallTimeout: Duration = .seconds(10)
    var readingAhead: UInt64?

    // Background tag reads.
    var readsStarted = 0
    var infoRequested = Set<UInt64>()
    var pendingReads: [UInt64] = []
    var readsInFlight = 0

    /// Cancelled once a load prerolls (or by the next load); see `watchPreroll(of:)`.
    var prerollWatch: (any DispatchSourceTimer)?
    /// The entry loaded again because it did not preroll in time.
    var prerollRetried: UInt64?
    /// The next load is the current track's, again, after the stream handed over failed.
    var reloadingAfterHandOver = false

    /// Volumes set lately: the output reports each back, possibly after a later one was set,
    /// and such an echo is no change by a mixer.
    var volumeRequests: [(volume: Double, at: ContinuousClock.Instant)] = []

    /// The furthest position a read of the loaded stream returned: where its output failed is
    /// never before what clients were shown.
    var furthestShown: (load: Int, position: Duration)?

    /// Flushing seeks sent since the last one completed: an ASYNC_DONE that lands far from
    /// the newest target belongs to an earlier one.
    var seeksInFlight = 0

    /// A load that waits for its entry's tags.
    struct PendingRead {
        var entry: UInt64
        var position: Duration?
        var intent: Status
        var generation: Int
    }

    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    /// - Parameter artwork: where the cover images of tracks go as their tags are read.
    /// - Parameter stuckLimit: how long a call into GStreamer (a state change, a seek, a
    ///   query) may take before the pipeline is taken for stuck and replaced.
    public init(
        audioSink: String?, supportedRates: ClosedRange<Double> = 0.5...2.0, artwork: ArtworkCache? = nil,
        stuckLimit: Duration = .seconds(3), logger: Logger
    ) throws {
        self.logger = logger
        self.supportedRates = supportedRates
        self.artwork = artwork
        self.audioSink = audioSink
        self.stuckLimit = stuckLimit
        discoverer = Discoverer(artwork: artwork)
        do {
            try Pipeline.validate(audioSink: audioSink)
        } catch {
            throw MediaError(error.description)
        }
        pipeline = makePipeline()
    }

    isolated deinit {
        pipeline?.release()  // nil when init threw
        stallWatch?.cancel()
    }

    func makePipeline() -> Pipeline {
        pipelineNumber += 1
        let number = pipelineNumber
        return Pipeline(audioSink: audioSink, volume: volume, stuckLimit: stuckLimit) { [weak self] delivery in
            self?.receive(delivery, fromPipeline: number)
        }
    }

    /// The index of the selected entry in `entries`.
    public var currentIndex: Int? { selectedIndex }

    /// Whether Next would change the current entry (a queue of one on repeat-all restarts
    /// it instead, which is no change of track).
    public var canGoNext: Bool { canMove(forward: true) }
    /// Whether Previous could change the current entry (see ``canGoNext``).
    public var canGoPrevious: Bool { canMove(forward: false) }

    private func canMove(forward: Bool) -> Bool {
        guard let selectedIndex else { return false }
        var order = self.order
        var random = self.random
        guard let target = order.neighbour(of: selectedIndex, in: QueueView(queue), forward: forward, automatic: false, using: &random)
        else { return false }
        return target != selectedIndex
    }

    /// The position, extrapolated from the pipeline's last report: zero when stopped. Reads
    /// never wait on GStreamer; while playing, one read a second asks the pipeline in the
    /// background, so that a drift (an output slower than real time) is corrected.
    public var position: Duration? {
        if case .outputLost(_, let at) = transport.phase { return at }
        guard status != .stopped, transport.loadedEntry != nil else { return .zero }
        refreshPositionIfDue()
        let position = clock.position()
        furthestShown = furthestShown.map { $0.load == loadNumber ? ($0.load, max($0.position, position)) : (loadNumber, position) }
            ?? (loadNumber, position)
        return position
    }

    /// The status the commands received so far lead to (`status` follows once the pipeline
    /// has settled in it).
    public var requestedStatus: Status { pendingRead?.intent ?? transport.intent }

    /// The selected entry: the one playing, being loaded, or that Play would start.
    public var selectedEntry: Entry? { selectedIndex.map { queue[$0] } }

    /// Where in the selected entry the commands received so far lead: a seek still on its
    /// way, or the start of an entry being loaded, else the live position. Zero when stopped.
    public var requestedPosition: Duration {
        guard requestedStatus != .stopped, let entry = selectedEntry else { return .zero }
        if let read = pendingRead, read.entry == entry.id { return read.position ?? .zero }
        guard transport.upcomingEntry == entry.id else { return .zero }
        if let pending = transport.pendingPosition { return pending }
        return position ?? .zero
    }

    /// Whether the commands received so far lead somewhere ``current`` and ``position`` do
    /// not show yet: another entry selected or being loaded, a seek or start position on its
    /// way, tags read before a load. ``selectedEntry`` and ``requestedPosition`` say where.
    public var isSettling: Bool {
        guard requestedStatus != .stopped else { return false }
        return pendingRead != nil || selectedEntry?.id != current?.id || transport.upcomingEntry != current?.id
            || transport.pendingPosition != nil
    }

    // MARK: - Commands

    /// Starts or resumes playback. Returns false when there is nothing to play.
    @discardableResult
    public func play() -> Bool {
        resumeAfterInterruption = false
        guard let index = selectedIndex ?? firstIndex() else { return false }
        selectedIndex = index
        let id = queue[index].id
        if pendingRead?.entry == id {
            pendingRead?.intent = .playing
        } else if transport.upcomingEntry == id, case let (true, actions) = transport.play() {
            run(actions)
        } else {
            load(index, intent: .playing)
        }
        return true
    }

    /// Loads an entry paused, at `position` when given (the `--paused` start, a restored
    /// session). Without `index`, the selected entry. Returns false when there is none.
    @discardableResult
    public func preroll(index: Int? = nil, at position: Duration? = nil) -> Bool {
        resumeAfterInterruption = false
        guard let index = index.flatMap({ queue.indices.contains($0) ? $0 : nil }) ?? selectedIndex ?? firstIndex() else { return false }
        load(index, at: position, intent: .paused)
        return true
    }

    /// Starts playing an entry at `position` (a restored session told to play).
    @discardableResult
    public func play(index: Int, at position: Duration?) -> Bool {
        resumeAfterInterruption = false
        guard queue.indices.contains(index) else { return false }
        load(index, at: position, intent: .playing)
        return true
    }

    /// Pauses; nothing to do when not playing nor about to.
    public func pause() {
        resumeAfterInterruption = false
        if pendingRead != nil, pendingRead?.intent == .playing { pendingRead?.intent = .paused }
        guard transport.intent == .playing || status == .playing else { return }
        run(transport.pause())
    }

    /// Pauses when playing or about to, else plays.
    public func togglePlayPause() {
        if requestedStatus == .playing { pause() } else { play() }
    }

    /// Stops: nothing stays loaded, and the position goes back to zero.
    public func stop() {
        resumeAfterInterruption = false
        pendingRead = nil
        run(transport.stop())
    }

    /// Goes to the next entry in play order; nothing happens when there is none.
    public func next() {
        resumeAfterInterruption = false
        guard let index = selectedIndex, let target = neighbour(of: index, forward: true, automatic: false), target != index else {
            return
        }
        go(to: target)
    }

    /// Restarts the current entry when more than 3 s in, else goes to the previous one.
    /// Both as the commands received so far leave it (a seek or a load may not have landed).
    public func previous() {
        resumeAfterInterruption = false
        if requestedStatus != .stopped, requestedPosition > .seconds(3) {
            seek(to: .zero)
            return
        }
        guard let index = selectedIndex, let target = neighbour(of: index, forward: false, automatic: false), target != index else {
            if requestedStatus != .stopped { seek(to: .zero) }
            return
        }
        go(to: target, forward: false)
    }

    /// Makes the entry with `id` current, keeping the play/pause/stop state.
    @discardableResult
    public func goTo(id: UInt64) -> Bool {
        resumeAfterInterruption = false
        guard let index = queue.index(of: id) else { return false }
        go(to: index)
        return true
    }

    /// Seeks within the selected entry. False when nothing is loaded to seek in.
    @discardableResult
    public func seek(to position: Duration) -> Bool {
        let target = max(position, .zero)
        if let read = pendingRead, read.entry == selectedEntry?.id {
            pendingRead?.position = target  // loads there once its tags are in
            return true
        }
        guard requestedStatus != .stopped || transport.phase != .idle, transport.upcomingEntry == selectedEntry?.id else { return false }
        let (accepted, actions) = transport.seek(to: target, nextTaken: pipeline.handoff.hasCommitted)
        guard accepted else { return false }
        switchedAt = nil
        clock.set(target, rate: 0)
        run(actions)
        if actions.isEmpty { onChange?(.transport) }  // a position asked for while loading
        return true
    }

    /// Sets the rate, clamped to `supportedRates`; NaN is ignored.
    public func setRate(_ newRate: Double) {
        guard !newRate.isNaN else { return }
        let clamped = min(max(newRate, supportedRates.lowerBound), supportedRates.upperBound)
        guard clamped != rate else { return }
        let position = requestedPosition
        let actions = transport.setRate(clamped, position: position)
        if actions.contains(where: { if case .seek = $0 { true } else { false } }) { clock.set(position, rate: 0) }
        run(actions)
        // Clients see the rate asked for at once; the seek that applies it follows.
        if !actions.contains(.publish) { onChange?(.transport) }
    }

    /// Sets the volume on the cubic (perceptual) scale of desktop mixers, clamped to 0...1.
    public func setVolume(_ newVolume: Double) {
        let clamped = min(max(newVolume.isFinite ? newVolume : 1, 0), 1)
        guard clamped != volume else { return }
        volume = clamped
        let now = ContinuousClock.now
        volumeRequests = volumeRequests.filter { now - $0.at < .seconds(2) }.suffix(7) + [(clamped, now)]
        pipeline.setVolume(clamped)
        onChange?(.volume)
    }

    /// Sets what follows the last entry, or the current one at its end.
    public func setRepeatMode(_ mode: RepeatMode) {
        guard mode != repeatMode else { return }
        order.repeatMode = mode
        nextMayHaveChanged()
        onChange?(.options)
    }

    /// Shuffle plays every entry once per cycle in a random order; turning it off goes on
    /// in queue order from the current entry.
    public func setShuffle(_ on: Bool) {
        guard on != shuffle else { return }
        order.setShuffle(on, current: selectedIndex.map { queue[$0].id }, ids: queue.entries.lazy.map(\.id), using: &random)
        nextMayHaveChanged()
        onChange?(.options)
    }

    /// Queues `uris` after the current entry and plays the first of them.
    @discardableResult
    public func open(_ uris: [String]) -> Bool {
        guard !uris.isEmpty else { return false }
        resumeAfterInterruption = false
        let added = enqueue(uris, after: selectedIndex)
        guard let first = added.first, let index = queue.index(of: first.id) else { return false }
        if let selectedIndex, selectedIndex != index { order.recordMove(from: queue[selectedIndex].id, to: first.id, forward: true) }
        load(index, intent: .playing)
        return true
    }

    /// Stops the pipeline for good (before exit); `done` is called on the main actor once
    /// GStreamer has let go of it, so that the process does not exit under its threads.
    public func shutdown(done: (@MainActor @Sendable () -> Void)? = nil) {
        pendingRead = nil
        prerollWatch?.cancel()
        _ = transport.stop()
        pipeline.release(freed: done)
    }

    // MARK: - Play order

    /// The shuffle history, most recent last (for tests).
    var shuffleHistory: [UInt64] { order.history }
    /// How far back Previous walks with Shuffle on.
    static var shuffleHistoryLimit: Int { PlayOrder.historyLimit }

    func firstIndex() -> Int? {
        order.first(in: QueueView(queue), using: &random)
    }

    func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true) -> Int? {
        order.neighbour(
            of: index, in: QueueView(queue), forward: forward, automatic: automatic, allowRepeatOne: allowRepeatOne, using: &random)
    }

    func isLocal(_ uri: String) -> Bool { uri.hasPrefix("file:") }
}

/// The queue as the play order reads it.
struct QueueView: PlayOrder.Queue {
    let queue: PlayQueue
    init(_ queue: PlayQueue) { self.queue = queue }
    var count: Int { queue.count }
    func id(at index: Int) -> UInt64 { queue[index].id }
    func index(of id: UInt64) -> Int? { queue.index(of: id) }
    func isPlayable(at index: Int) -> Bool { queue[index].failure == nil }
}
