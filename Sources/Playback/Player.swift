import Foundation
public import Logging

/// A play queue and its transport over a GStreamer pipeline.
///
/// Commands state an intent (`desired`); `status` is the settled truth, changed only when
/// the pipeline confirms it (or at once for stop, errors and the end of the queue). The
/// observer is told after each settled change, never about transient pipeline states
/// (a seek's flush, a gapless switch, buffering).
@MainActor
public final class Player {
    public struct Entry: Sendable, Equatable, Identifiable {
        /// Unique in this process, never reused: the same file queued twice has two ids.
        public let id: UInt64
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

    public enum Status: String, Sendable { case stopped, paused, playing }

    public enum RepeatMode: String, Sendable, CaseIterable { case off, one, all }

    /// What kind of change the observer is told about.
    public enum Change: Sendable, Equatable {
        /// Status, current entry, position or rate changed (a moment to republish the timing).
        case transport
        /// The current entry's metadata changed.
        case metadata
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
    public var count: Int { queue.count }
    private var queue = PlayQueue()
    public private(set) var status: Status = .stopped
    /// The entry the pipeline plays (or, when stopped, the one Play would start).
    public private(set) var current: Entry?
    public private(set) var rate: Double = 1
    public private(set) var volume: Double = 1
    public private(set) var repeatMode: RepeatMode = .off
    public private(set) var shuffle = false
    public let supportedRates: ClosedRange<Double>
    public var onChange: (@MainActor (Change) -> Void)?

    private var pipeline: Pipeline
    private let audioSink: String?
    private let discoverer: Discoverer
    /// Where the cover images of the tracks read go (nil: none are looked for).
    public let artwork: ArtworkCache?
    private let logger: Logger
    private var nextEntryID: UInt64 = 1
    private var selectedIndex: Int?
    private var desired: Status = .stopped { didSet { ranOut = false } }
    private var loadedEntryID: UInt64?
    private var loadGeneration = 0
    /// A flushing seek is in flight; the next ASYNC_DONE completes it.
    private var seekPending = false
    /// Where the seek in flight goes (nil for the seek a gapless switch makes to apply the rate).
    private var seekTarget: Duration?
    /// A load is prerolling; the next ASYNC_DONE completes it. Seeks wait until then, so
    /// that every ASYNC_DONE can be told apart.
    private var isPrerolling = false
    /// A position to seek to once a load has prerolled (also used to apply the rate).
    private var seekAfterPreroll: Duration?
    /// A load asked for while the previous one still prerolled: done once that preroll ends
    /// (the last one asked for wins). GStreamer 1.22's playbin2 can deadlock when a load is
    /// taken down while its first data reaches playbin's stream selector, which is during
    /// preroll: playbin deactivates the group's pads holding a lock the streaming thread
    /// also wants (README, "Known limits").
    private var deferredStart: (entryID: UInt64, position: Duration?)?
    private var deferralGeneration = 0
    /// The pipeline reported an error since it was last taken down: the next teardown goes to
    /// NULL, so that nothing of the failed stream (its elements, their threads) is reused;
    /// reused at READY, they could deadlock playbin2 on the next load (README, "Known limits").
    private var pipelineFailed = false
    /// The entry whose tags are being read so that it can follow the current one.
    private var readingAhead: UInt64?
    /// Playback stopped because the queue ran out (the end, or nothing playable left), not
    /// because someone stopped it: tracks queued now may go on from there.
    public private(set) var ranOut = false
    /// playbin took a next track that is no longer the one to follow, while paused: the
    /// current track is loaded again before it plays.
    private var reloadBeforePlaying = false
    /// When the last gapless switch happened, until the pipeline reports the new stream's
    /// position.
    private var switchedAt: ContinuousClock.Instant?
    /// The next STREAM_START is the loaded entry's own, not a gapless switch (a short file
    /// can have handed over the next URI before its own stream started).
    private var awaitingLoadedStreamStart = false
    /// The decoder bin of a handed-over stream that failed: its later errors are echoes.
    private var ignoredErrorSource: String?
    private var consecutiveFailures = 0
    private var isBuffering = false
    /// The last buffering level reported for the loaded stream (-1: none yet).
    private var bufferingPercent = -1
    /// What the loaded network stream has said about itself so far (ICY titles and the like).
    private var streamTags = StreamTags()
    /// Fires when a network stream has sent nothing for `streamStallTimeout` while it was
    /// awaited (before it first plays, or while buffering): it is then skipped.
    private var stallWatch: (any DispatchSourceTimer)?
    /// How long a network stream may send nothing before it is reported and skipped.
    public var streamStallTimeout: Duration = .seconds(10)
    /// Shuffle: the entries still to play in this cycle (the next one last), and those
    /// played, most recent last, which Previous walks back through.
    private var shuffleUpcoming: [UInt64] = []
    private(set) var shuffleHistory: [UInt64] = []
    /// How far back Previous walks with Shuffle on (the history is cut to this once it is
    /// twice as long: skipping for hours must not grow it for ever).
    static let shuffleHistoryLimit = 1_000
    private var warnedAboutNullSink = false
    /// The entry whose start GStreamer got stuck in, tried once more in a new pipeline.
    private var retriedAfterStuck: UInt64?
    /// How many pipelines GStreamer got stuck in and were replaced.
    public private(set) var pipelinesReplaced = 0
    /// Playback was paused by an interruption (the sound server corked the stream for a call
    /// or an alarm) and nobody has paused, stopped, played or changed track since: when the
    /// interruption ends, playback resumes (the seeds' `shouldResume`). Never otherwise.
    private var resumeAfterInterruption = false
    /// Where the loaded entry was when the audio output failed: Play starts it there again.
    private var outputLostAt: (entryID: UInt64, position: Duration)?

    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    /// - Parameter artwork: where the cover images of tracks go as their tags are read.
    /// - Parameter stuckLimit: how long a call into GStreamer (a state change, a seek, a query) may take before
    ///   the pipeline is taken for stuck and replaced.
    public init(
        audioSink: String?, supportedRates: ClosedRange<Double> = 0.5...2.0, artwork: ArtworkCache? = nil,
        stuckLimit: Duration = .seconds(3), logger: Logger
    ) throws {
        self.logger = logger
        self.supportedRates = supportedRates
        self.artwork = artwork
        self.audioSink = audioSink
        discoverer = Discoverer(artwork: artwork)
        do {
            pipeline = try Pipeline(audioSink: audioSink, stuckLimit: stuckLimit)
        } catch {
            throw MediaError(error.description)
        }
        attach(pipeline)
    }

    /// Has the player hear `pipeline`'s events, and of its getting stuck.
    private func attach(_ pipeline: Pipeline) {
        pipeline.onEvent = { [weak self] event in self?.handle(event) }
        pipeline.onStuck = { [weak self] in self?.pipelineGotStuck() }
    }

    // MARK: - Queue

    /// Queues URIs (already expanded) after the entry at `index` (nil: at the end) and
    /// returns their entries.
    @discardableResult
    public func enqueue(_ uris: [String], after index: Int? = nil) -> [Entry] {
        insert(uris, at: index.map { min($0 + 1, queue.count) } ?? queue.count)
    }

    /// Queues URIs after the entry with id `afterID` (nil: at the start). Nil when no
    /// entry has that id.
    public func insert(_ uris: [String], afterID: UInt64?) -> [Entry]? {
        guard let afterID else { return insert(uris, at: 0) }
        guard let index = queue.index(of: afterID) else { return nil }
        return insert(uris, at: index + 1)
    }

    private func insert(_ uris: [String], at position: Int) -> [Entry] {
        guard !uris.isEmpty else { return [] }
        let new = uris.map { uri -> Entry in
            defer { nextEntryID += 1 }
            return Entry(id: nextEntryID, uri: uri)
        }
        queue.insert(new, at: position)
        if let selected = selectedIndex, selected >= position { selectedIndex = selected + new.count }
        if shuffle {
            shuffleUpcoming += new.map(\.id)
            shuffleUpcoming.shuffle()
        }
        if selectedIndex == nil {
            selectedIndex = firstIndex()
            // A local file becomes `current` once its tags are read, so that clients see
            // one Metadata for it, not a file name followed by the real title.
            if let selectedIndex, !needsDiscovery(queue[selectedIndex]) { current = queue[selectedIndex] }
            discoverCurrentIfNeeded()
        }
        nextMayHaveChanged()
        onChange?(.queue)
        return new
    }

    /// Removes the entry with `id`; removing the current one moves on as Next would, or
    /// stops when nothing follows. False when no entry has that id.
    @discardableResult
    public func remove(id: UInt64) -> Bool {
        guard let index = queue.index(of: id) else { return false }
        guard index == selectedIndex else {
            queue.remove(at: index)
            if let selected = selectedIndex, selected > index { selectedIndex = selected - 1 }
            nextMayHaveChanged()
            onChange?(.queue)
            return true
        }
        resumeAfterInterruption = false  // the track an interruption paused is gone
        let followerID = neighbour(of: index, forward: true, automatic: false).map { queue[$0].id }
        queue.remove(at: index)
        if let followerID, followerID != id, let follower = queue.index(of: followerID) {
            selectedIndex = follower
            recordMove(from: id, to: followerID, forward: true)
            onChange?(.queue)
            go(to: follower)
            return true
        }
        desired = .stopped
        loadGeneration += 1
        unload()
        selectedIndex = queue.isEmpty ? nil : min(index, queue.count - 1)
        current = nil
        if let selectedIndex, !needsDiscovery(queue[selectedIndex]) { current = queue[selectedIndex] }
        discoverCurrentIfNeeded()
        onChange?(.queue)
        settle(.stopped)
        return true
    }

    /// Replaces the whole queue (a playlist activated) and plays it from the start, or
    /// stays stopped when `play` is false.
    public func replaceQueue(with uris: [String], play shouldPlay: Bool) {
        resumeAfterInterruption = false
        desired = .stopped
        loadGeneration += 1
        unload()
        queue.removeAll()
        selectedIndex = nil
        current = nil
        shuffleUpcoming = []
        shuffleHistory = []
        enqueue(uris)
        settle(.stopped)
        if shouldPlay { play() }
    }

    /// The queued entry with `id`, if any.
    public func entry(id: UInt64) -> Entry? {
        queue.index(of: id).map { queue[$0] }
    }

    /// The index of the selected entry in `entries`.
    public var currentIndex: Int? { selectedIndex }

    public var canGoNext: Bool { selectedIndex.flatMap { neighbour(of: $0, forward: true, automatic: false) } != nil }
    public var canGoPrevious: Bool { selectedIndex.flatMap { neighbour(of: $0, forward: false, automatic: false) } != nil }

    /// The live position from the pipeline; zero when stopped, nil while it cannot say.
    public var position: Duration? {
        if status == .paused, loadedEntryID == nil, let lost = outputLostAt { return lost.position }
        guard status != .stopped, loadedEntryID != nil else { return .zero }
        let reported = pipeline.position
        guard let switchedAt else { return reported }
        // Just after a gapless switch the pipeline still reports where the old stream was
        // (the sink has not rendered the new one yet): the new stream's position is then
        // the time since the switch, until the pipeline catches up.
        let since = status == .playing ? (ContinuousClock.now - switchedAt) * rate : .zero
        if let reported, reported <= since + .milliseconds(250) || since > .seconds(2) {
            self.switchedAt = nil
            return reported
        }
        return since
    }

    /// The status the commands received so far lead to (`status` follows once the pipeline
    /// has settled in it).
    public var requestedStatus: Status { desired }

    /// The selected entry: the one playing, being loaded, or that Play would start.
    public var selectedEntry: Entry? { selectedIndex.map { queue[$0] } }

    /// Where in the selected entry the commands received so far lead: a seek still on its
    /// way, or the start of an entry being loaded, else the live position. Zero when stopped.
    public var requestedPosition: Duration {
        guard desired != .stopped, let entry = selectedEntry else { return .zero }
        if let deferred = deferredStart, deferred.entryID == entry.id { return deferred.position ?? .zero }
        if let lost = outputLostAt, lost.entryID == entry.id, loadedEntryID == nil { return lost.position }
        guard loadedEntryID == entry.id else { return .zero }  // still being read before it loads
        if isPrerolling { return seekAfterPreroll ?? .zero }
        if seekPending, let seekTarget { return seekTarget }
        return position ?? .zero
    }

    /// Names of the GStreamer elements in the pipeline now (for tests and diagnostics).
    public var pipelineElementNames: [String] { pipeline.elementFactoryNames }

    // MARK: - Commands

    /// Starts or resumes playback. Returns false when there is nothing to play.
    @discardableResult
    public func play() -> Bool {
        resumeAfterInterruption = false
        guard let index = selectedIndex ?? firstIndex() else { return false }
        desired = .playing
        let id = queue[index].id
        if deferredStart?.entryID == id || loadedEntryID == id && isPrerolling && !reloadBeforePlaying {
            // Being loaded (perhaps to a position a seek asked for): it plays once prerolled.
        } else if loadedEntryID == id, status != .stopped || seekPending {
            if reloadBeforePlaying {
                start(index, seekingTo: seekAfterPreroll ?? pipeline.position ?? .zero)
            } else {
                switch setPipelineState(.playing) {
                case .failure: stateChangeFailed(queue[index], reason: "the audio output refused to start")
                case .stuck: break  // started again in a new pipeline
                default: watchHandedOverStream()
                }
            }
        } else {
            let lost = outputLostAt.flatMap { $0.entryID == queue[index].id ? $0.position : nil }
            load(index, at: lost)
        }
        return true
    }

    /// Loads an entry paused, at `position` when given (the `--paused` start, a restored
    /// session). Without `index`, the selected entry. Returns false when there is none.
    @discardableResult
    public func preroll(index: Int? = nil, at position: Duration? = nil) -> Bool {
        resumeAfterInterruption = false
        guard let index = index.flatMap({ queue.indices.contains($0) ? $0 : nil }) ?? selectedIndex ?? firstIndex() else { return false }
        desired = .paused
        load(index, at: position)
        return true
    }

    /// Starts playing an entry at `position` (a restored session told to play).
    @discardableResult
    public func play(index: Int, at position: Duration?) -> Bool {
        resumeAfterInterruption = false
        guard queue.indices.contains(index) else { return false }
        desired = .playing
        load(index, at: position)
        return true
    }

    public func pause() {
        resumeAfterInterruption = false
        guard desired == .playing || status == .playing else { return }
        desired = .paused
        isBuffering = false  // the pause settles as Paused, buffering or not
        if loadedEntryID != nil { setPipelineState(.paused) }
    }

    public func togglePlayPause() {
        if desired == .playing { pause() } else { play() }
    }

    public func stop() {
        resumeAfterInterruption = false
        desired = .stopped
        loadGeneration += 1
        unload()
        settle(.stopped)
    }

    public func next() {
        resumeAfterInterruption = false
        guard let index = selectedIndex, let target = neighbour(of: index, forward: true, automatic: false) else { return }
        go(to: target)
    }

    /// Restarts the current entry when more than 3 s in, else goes to the previous one.
    /// Both as the commands received so far leave it (a seek or a load may not have landed).
    public func previous() {
        resumeAfterInterruption = false
        if desired != .stopped, requestedPosition > .seconds(3) {
            seek(to: .zero)
            return
        }
        guard let index = selectedIndex, let target = neighbour(of: index, forward: false, automatic: false) else {
            if desired != .stopped { seek(to: .zero) }
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

    @discardableResult
    public func seek(to position: Duration) -> Bool {
        if status == .paused, loadedEntryID == nil, let lost = outputLostAt {
            // Nothing is loaded since the output failed: Play starts from the new position.
            outputLostAt = (lost.entryID, max(position, .zero))
            onChange?(.transport)
            return true
        }
        guard desired != .stopped, loadedEntryID != nil, let index = selectedIndex else { return false }
        if let deferred = deferredStart {
            deferredStart = (deferred.entryID, max(position, .zero))
            return true
        }
        if loadedEntryID != queue[index].id {
            // The selected entry is still being read before it loads: load it there.
            load(index, at: max(position, .zero))
            return true
        }
        if isPrerolling {
            seekAfterPreroll = max(position, .zero)
            return true
        }
        if pipeline.handoff.hasCommitted {
            // playbin already holds the next URI (about-to-finish ran); a seek now would land
            // in the next track. Reload this one and seek while it prerolls.
            start(index, seekingTo: max(position, .zero))
            return true
        }
        switch seekPipeline(to: max(position, .zero)) {
        case .refused:
            logger.warning("seek to \(position) refused by the pipeline")
            return false
        case .stuck:
            return true  // loading there in a new pipeline
        case .started:
            break
        }
        seekPending = true
        seekTarget = max(position, .zero)
        switchedAt = nil
        return true
    }

    public func setRate(_ newRate: Double) {
        guard !newRate.isNaN else { return }
        let clamped = min(max(newRate, supportedRates.lowerBound), supportedRates.upperBound)
        guard clamped != rate else { return }
        rate = clamped
        let loading = desired != .stopped && loadedEntryID != nil && deferredStart == nil
        if loading && isPrerolling {
            // The load in progress applies it: the seek after its preroll sets the rate.
            if seekAfterPreroll == nil { seekAfterPreroll = .zero }
        } else if loading && (seekPending || pipeline.position != nil) {
            seek(to: requestedPosition)
        } else {
            onChange?(.transport)
        }
    }

    /// Sets the volume on the cubic (perceptual) scale of desktop mixers, clamped to 0...1.
    public func setVolume(_ newVolume: Double) {
        let clamped = min(max(newVolume.isFinite ? newVolume : 1, 0), 1)
        guard clamped != volume else { return }
        volume = clamped
        pipeline.volume = clamped
        onChange?(.volume)
    }

    public func setRepeatMode(_ mode: RepeatMode) {
        guard mode != repeatMode else { return }
        repeatMode = mode
        nextMayHaveChanged()
        onChange?(.options)
    }

    /// Shuffle plays every entry once per cycle in a random order; turning it off goes on
    /// in queue order from the current entry.
    public func setShuffle(_ on: Bool) {
        guard on != shuffle else { return }
        shuffle = on
        shuffleHistory = []
        if on {
            let currentID = selectedIndex.map { queue[$0].id }
            shuffleUpcoming = queue.entries.compactMap { $0.id == currentID ? nil : $0.id }
            shuffleUpcoming.shuffle()
        } else {
            shuffleUpcoming = []
        }
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
        desired = .playing
        go(to: index)
        return true
    }

    /// Stops the pipeline for good (before exit).
    public func shutdown() {
        desired = .stopped
        loadGeneration += 1
        unload()
    }

    // MARK: - Loading

    private func firstIndex() -> Int? {
        guard !queue.isEmpty else { return nil }
        guard shuffle, let index = shuffleNext(after: nil) else { return 0 }
        shuffleUpcoming.removeLast()  // it is now the current one
        return index
    }

    private func go(to index: Int, forward: Bool = true) {
        if let selectedIndex, selectedIndex != index {
            recordMove(from: queue[selectedIndex].id, to: queue[index].id, forward: forward)
        }
        selectedIndex = index
        switch desired {
        case .stopped:
            current = queue[index]
            discoverCurrentIfNeeded()
            onChange?(.transport)
        case .playing, .paused:
            load(index, forward: forward)
        }
    }

    private func load(_ index: Int, forward: Bool = true, at position: Duration? = nil) {
        selectedIndex = index
        loadGeneration += 1
        let generation = loadGeneration
        pipeline.handoff.reset()
        let entry = queue[index]
        if entry.info != nil || !isLocal(entry.uri) {
            start(index, seekingTo: position)
            return
        }
        logger.trace("reading the tags of \(MediaSources.displayName(entry.uri)) before loading it")
        // This load replaces a start still waiting for the preroll in progress: run once
        // that preroll ended, it would take the selection back to its entry.
        if deferredStart != nil {
            deferredStart = nil
            deferralGeneration += 1
        }
        discoverer.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            guard generation == self.loadGeneration, let index = self.queue.index(of: entry.id) else {
                self.logger.trace("\(MediaSources.displayName(entry.uri)) was read, but another load came since")
                return
            }
            switch result {
            case .success(let info):
                self.record(info, at: index)
                self.start(index, seekingTo: position)
            case .failure(let error) where error.isTimeout:
                // Slow to read is not broken: let the pipeline try (it reports real errors).
                self.logger.debug("reading the tags of \(MediaSources.displayName(entry.uri)) timed out; playing it anyway")
                self.start(index, seekingTo: position)
            case .failure(let error):
                self.fail(self.queue[index], reason: error.reason, forward: forward)
            }
        }
    }

    /// Loads the entry into the pipeline. When a seek is needed (a start position, or a rate
    /// other than 1) the pipeline prerolls paused, seeks, and only then plays.
    private func start(_ index: Int, seekingTo position: Duration? = nil) {
        let entry = queue[index]
        if isPrerolling && loadedEntryID != nil || deferredStart != nil {
            logger.trace("loading \(MediaSources.displayName(entry.uri)) once the preroll in progress ends")
            selectedIndex = index
            deferStart(entry.id, position)
            return
        }
        logger.trace("loading \(MediaSources.displayName(entry.uri))")
        pipeline.handoff.reset()
        outputLostAt = nil
        tearDown()
        pipeline.discardQueuedMessages()
        pipeline.uri = entry.uri
        loadedEntryID = entry.id
        switchedAt = nil
        reloadBeforePlaying = false
        isBuffering = false
        bufferingPercent = -1
        streamTags = StreamTags()
        if isLocal(entry.uri) { disarmStallWatch() } else { armStallWatch(for: entry.id) }
        // playbin asks for the next URI as soon as it has read this one, which for a short
        // file is during preroll: have the answer ready before starting.
        selectedIndex = index
        prepareNext()
        seekPending = false
        seekTarget = nil
        seekAfterPreroll = position ?? (rate != 1 ? .zero : nil)
        isPrerolling = true
        awaitingLoadedStreamStart = true
        let target: Pipeline.State = desired == .playing && seekAfterPreroll == nil ? .playing : .paused
        switch pipeline.setState(target) {
        case .failure: stateChangeFailed(entry, reason: "the pipeline could not start it")
        case .stuck:
            // Tried once more in a new pipeline, from the main queue (not from here: a
            // pipeline that never starts would make this a loop); stuck twice, it is skipped.
            guard replaceStuckPipeline() else { return }
            guard retriedAfterStuck != entry.id else {
                fail(entry, reason: "GStreamer did not start it within \(pipeline.stuckLimit), twice")
                return
            }
            retriedAfterStuck = entry.id
            let generation = loadGeneration
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated {
                    guard let self, generation == self.loadGeneration, self.loadedEntryID == entry.id,
                        let index = self.queue.index(of: entry.id)
                    else { return }
                    self.isPrerolling = false
                    self.start(index, seekingTo: position)
                }
            }
        default: break
        }
    }

    /// A state change failed at once. The error GStreamer queued with it says whether the
    /// track or the audio output failed, and is handled as such; without one, the track is
    /// skipped.
    private func stateChangeFailed(_ entry: Entry, reason: String) {
        let generation = loadGeneration
        pipeline.drainBus()
        guard generation == loadGeneration, loadedEntryID == entry.id else { return }
        fail(entry, reason: reason)
    }

    /// The audio output failed (the sound server went away, the device was removed): pause
    /// where the track was, rather than skip tracks that are fine or play into nothing. Play
    /// tries the output again from there.
    private func outputFailed(_ message: String) {
        let entryID = loadedEntryID ?? selectedIndex.map { queue[$0].id }
        let position = seekAfterPreroll ?? pipeline.position ?? .zero
        pipelineFailed = true
        unload()
        guard desired != .stopped, let entryID, let index = queue.index(of: entryID) else {
            logger.warning("the audio output failed: \(message)")
            desired = .stopped
            settle(.stopped)
            return
        }
        selectedIndex = index
        outputLostAt = (entryID, position)
        desired = .paused
        logger.warning("the audio output failed (\(message)); paused at \(position.clock) of \(MediaSources.displayName(queue[index].uri)) until Play")
        settle(.paused)
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    private func handleStateRequest(_ state: Pipeline.State) {
        switch state {
        case .paused where desired == .playing:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            pause()
            resumeAfterInterruption = true
        case .playing where resumeAfterInterruption:
            logger.info("the interruption is over; playing again")
            play()
        default:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then equal but for rounding: not a change).
    private func outputVolumeChanged() {
        let heard = pipeline.outputVolume
        guard heard.isFinite, abs(heard - volume) > 0.001 else { return }
        volume = min(max(heard, 0), 1)
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        onChange?(.volume)
    }

    /// Waits for the preroll in progress to end (ASYNC_DONE, an error, the end of the stream;
    /// at most a second) before loading `entryID`; a later load replaces this one.
    private func deferStart(_ entryID: UInt64, _ position: Duration?) {
        let waiting = deferredStart != nil
        deferredStart = (entryID, position)
        guard !waiting else { return }
        deferralGeneration += 1
        let generation = deferralGeneration
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) { [weak self] in
            MainActor.assumeIsolated {
                guard let self, self.deferralGeneration == generation, self.deferredStart != nil else { return }
                self.logger.debug("the previous track did not preroll within a second; loading the next one anyway")
                self.startDeferred()
            }
        }
    }

    private func startDeferred() {
        guard let deferred = deferredStart else { return }
        deferredStart = nil
        deferralGeneration += 1
        isPrerolling = false
        if let index = queue.index(of: deferred.entryID) ?? selectedIndex {
            start(index, seekingTo: deferred.position)
        } else {
            unload()
            settle(.stopped)
        }
    }

    private func unload() {
        deferredStart = nil
        outputLostAt = nil
        pipeline.handoff.reset()
        tearDown()
        loadedEntryID = nil
        switchedAt = nil
        seekPending = false
        seekTarget = nil
        seekAfterPreroll = nil
        isPrerolling = false
        isBuffering = false
        disarmStallWatch()
    }

    /// Skips an entry that cannot play: one log line naming it and why, then the next one
    /// (in the direction of travel), or stop at the end.
    private func fail(_ entry: Entry, reason: String, forward: Bool = true) {
        if let index = queue.index(of: entry.id) {
            recordFailure(reason, at: index)
        }
        consecutiveFailures += 1
        unload()
        guard desired != .stopped, consecutiveFailures <= queue.count,
            let index = queue.index(of: entry.id),
            let target = neighbour(of: index, forward: forward, automatic: true, allowRepeatOne: false)
        else {
            if consecutiveFailures > queue.count { logger.error("nothing in the queue can be played") }
            desired = .stopped
            settle(.stopped)
            ranOut = true
            return
        }
        recordMove(from: entry.id, to: queue[target].id, forward: forward)
        load(target, forward: forward)
    }

    private func settle(_ newStatus: Status) {
        // An entry found unplayable is never shown as the current one.
        if let index = selectedIndex { current = queue[index].failure == nil ? queue[index] : nil }
        if newStatus != .stopped { consecutiveFailures = 0 }
        status = newStatus
        prepareNext()
        onChange?(.transport)
    }

    /// Keeps what was read of an entry; the observer hears of an entry's tags (or of its
    /// failure) once, the first time.
    private func record(_ info: TrackInfo, at index: Int) {
        let isNew = queue[index].info == nil
        queue[index].info = info
        if isNew { onChange?(.entryInfo(queue[index].id)) }
    }

    /// An entry found unplayable: one log line naming it and why, the first time only.
    private func recordFailure(_ reason: String, at index: Int) {
        guard queue[index].failure == nil else { return }
        queue[index].failure = reason
        logger.warning("skipping \(MediaSources.displayName(queue[index].uri)): \(reason)")
        onChange?(.entryInfo(queue[index].id))
    }

    private func needsDiscovery(_ entry: Entry) -> Bool {
        entry.info == nil && entry.failure == nil && isLocal(entry.uri)
    }

    private func discoverCurrentIfNeeded() {
        guard let index = selectedIndex, needsDiscovery(queue[index]) else { return }
        let id = queue[index].id
        discoverer.discover(queue[index].uri) { [weak self] result in
            guard let self, let index = self.queue.index(of: id) else { return }
            switch result {
            case .success(let info): self.record(info, at: index)
            case .failure(let error) where error.isTimeout: break  // busy, not broken
            case .failure(let error): self.recordFailure(error.reason, at: index)
            }
            let stillSelected = self.selectedIndex == index && (self.current == nil || self.current?.id == id)
            if stillSelected, self.queue[index].failure != nil {
                // Unplayable: while stopped, the selection moves on to what Play would start.
                if self.desired == .stopped, let next = self.neighbour(of: index, forward: true, automatic: false) {
                    self.selectedIndex = next
                    self.current = nil
                    self.discoverCurrentIfNeeded()
                }
            } else if stillSelected {
                self.current = self.queue[index]
                self.onChange?(.metadata)
            }
        }
    }

    /// After a change to what follows the current entry (loop, shuffle, an edit of the
    /// queue): prepares the new next entry. When playbin already took another one for a
    /// gapless switch (it asks early, during preroll for a short track), the current entry
    /// is loaded again where it is, so that the change applies to its end.
    private func nextMayHaveChanged() {
        guard let committed = pipeline.handoff.committedEntryID, let index = selectedIndex, loadedEntryID != nil else {
            return prepareNext()
        }
        let wanted = neighbour(of: index, forward: true, automatic: true).map { queue[$0].id }
        guard wanted != committed else { return }
        if desired == .paused {
            // Nothing plays until Play: reload then, once, however many edits come first.
            reloadBeforePlaying = true
            return
        }
        logger.debug("what follows \(MediaSources.displayName(queue[index].uri)) changed after playbin took the next track; reloading it")
        start(index, seekingTo: seekAfterPreroll ?? pipeline.position ?? .zero)
    }

    /// Tells the pipeline which URI follows the current one, for a gapless switch, and
    /// reads that entry's tags ahead of time.
    private func prepareNext() {
        guard desired != .stopped, let index = selectedIndex,
            let next = neighbour(of: index, forward: true, automatic: true)
        else {
            pipeline.handoff.prepare(nil)
            return
        }
        let entry = queue[next]
        guard entry.info == nil, isLocal(entry.uri) else {
            pipeline.handoff.prepare(.init(entryID: entry.id, uri: entry.uri))
            return
        }
        // A local file is handed to playbin only once it has been read: a broken one is
        // then skipped here, never torn out of a pipeline that already switched to it.
        pipeline.handoff.prepare(nil)
        guard readingAhead != entry.id else { return }
        readingAhead = entry.id
        discoverer.discover(entry.uri) { [weak self] result in
            guard let self else { return }
            if self.readingAhead == entry.id { self.readingAhead = nil }
            guard let index = self.queue.index(of: entry.id) else { return }
            switch result {
            case .success(let info):
                self.record(info, at: index)
                if self.current?.id == entry.id {
                    self.current = self.queue[index]
                    self.onChange?(.metadata)
                }
            case .failure(let error) where error.isTimeout:
                // Slow to read is not broken: it is loaded when its turn comes.
                return
            case .failure(let error):
                self.recordFailure(error.reason, at: index)
            }
            self.prepareNext()
        }
    }

    /// The entry after (or before) `index` in play order, skipping entries known to fail.
    /// `automatic` is the end of a track: it repeats the track in repeat-one mode.
    private func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true) -> Int? {
        guard queue.indices.contains(index) else { return nil }
        if automatic && allowRepeatOne && repeatMode == .one && queue[index].failure == nil { return index }
        if shuffle { return forward ? shuffleNext(after: queue[index].id) : shufflePrevious() }
        var candidate = index
        for _ in 0..<queue.count {
            candidate += forward ? 1 : -1
            if candidate >= queue.count || candidate < 0 {
                guard repeatMode == .all else { return nil }
                candidate = forward ? 0 : queue.count - 1
            }
            if candidate == index { return repeatMode == .all && queue[index].failure == nil ? index : nil }
            if queue[candidate].failure == nil { return candidate }
        }
        return nil
    }

    /// Shuffle: the next entry of this cycle, without taking it; with repeat-all a new
    /// cycle begins when this one is over. Entries removed, failed or current are dropped
    /// from the cycle on the way.
    private func shuffleNext(after currentID: UInt64?) -> Int? {
        while let id = shuffleUpcoming.last {
            if id != currentID, let index = queue.index(of: id), queue[index].failure == nil { return index }
            shuffleUpcoming.removeLast()
        }
        guard repeatMode == .all else { return nil }
        shuffleUpcoming = queue.entries.compactMap { $0.failure == nil && $0.id != currentID ? $0.id : nil }
        shuffleUpcoming.shuffle()
        if let id = shuffleUpcoming.last { return queue.index(of: id) }
        // A queue of one: it repeats.
        return currentID.flatMap { queue.index(of: $0) }.flatMap { queue[$0].failure == nil ? $0 : nil }
    }

    /// Shuffle: the entry played before the current one, most recent first.
    private func shufflePrevious() -> Int? {
        while let id = shuffleHistory.last {
            if let index = queue.index(of: id), queue[index].failure == nil { return index }
            shuffleHistory.removeLast()
        }
        return nil
    }

    /// Shuffle bookkeeping for a move from one entry to another: forward takes the target
    /// out of this cycle and remembers where it came from; backward walks the history back
    /// and puts the entry left at the front of what is to come.
    private func recordMove(from oldID: UInt64, to newID: UInt64, forward: Bool) {
        guard shuffle, oldID != newID else { return }
        if forward {
            if shuffleUpcoming.last == newID {
                shuffleUpcoming.removeLast()
            } else if let position = shuffleUpcoming.lastIndex(of: newID) {
                shuffleUpcoming.remove(at: position)
            }
            shuffleHistory.append(oldID)
            if shuffleHistory.count > 2 * Self.shuffleHistoryLimit {
                shuffleHistory.removeFirst(shuffleHistory.count - Self.shuffleHistoryLimit)
            }
        } else {
            if shuffleHistory.last == newID { shuffleHistory.removeLast() }
            shuffleUpcoming.append(oldID)
        }
    }

    // MARK: - Reading tags ahead

    /// Reads the tags of these entries in the background, lowest priority and at most
    /// `backgroundReads` at a time, each entry once; `.entryInfo(id)` tells when one is in.
    /// Only the latest requests are kept when more than `maximumPendingReads` wait.
    public func readInfoAhead(_ ids: some Sequence<UInt64>) {
        for id in ids where !infoRequested.contains(id) {
            guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { continue }
            infoRequested.insert(id)
            pendingReads.append(id)
        }
        if pendingReads.count > Self.maximumPendingReads {
            for id in pendingReads.prefix(pendingReads.count - Self.maximumPendingReads) { infoRequested.remove(id) }
            pendingReads.removeFirst(pendingReads.count - Self.maximumPendingReads)
        }
        startBackgroundReads()
    }

    static let backgroundReads = 2
    /// One serial queue per concurrent read. Not a global queue: using one starts
    /// libdispatch's worker-pool monitor, which then wakes the process every second.
    private static let readQueues = (0..<backgroundReads).map { DispatchQueue(label: "quaver.tags.\($0)", qos: .utility) }
    private var readsStarted = 0
    static let maximumPendingReads = 2_000
    private var infoRequested = Set<UInt64>()
    private var pendingReads: [UInt64] = []
    private var readsInFlight = 0

    private func startBackgroundReads() {
        while readsInFlight < Self.backgroundReads, !pendingReads.isEmpty {
            let id = pendingReads.removeFirst()
            infoRequested.remove(id)
            guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { continue }
            readsInFlight += 1
            readsStarted &+= 1
            let uri = queue[index].uri, artwork = self.artwork
            Self.readQueues[readsStarted % Self.readQueues.count].async { [weak self] in
                let result = Discoverer.discoverNow(uri, artwork: artwork)
                DispatchQueue.main.async {
                    MainActor.assumeIsolated { self?.finishBackgroundRead(id, result) }
                }
            }
        }
    }

    private func finishBackgroundRead(_ id: UInt64, _ result: Result<TrackInfo, MediaError>) {
        readsInFlight -= 1
        defer { startBackgroundReads() }
        guard let index = queue.index(of: id), needsDiscovery(queue[index]) else { return }
        switch result {
        case .success(let info): record(info, at: index)
        case .failure(let error) where error.isTimeout: return  // busy, not broken: read again when played
        case .failure(let error): recordFailure(error.reason, at: index)
        }
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }

    /// Sets the artwork of an entry whose tags were read (found again after its cached image
    /// went, or a picture a stream sent); the observer hears of it when it is the current one.
    public func setArtworkURL(_ url: String?, forEntry id: UInt64) {
        guard let index = queue.index(of: id), var info = queue[index].info else { return }
        info.artworkURL = url
        info.artworkSearched = true
        queue[index].info = info
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }

    private func isLocal(_ uri: String) -> Bool { uri.hasPrefix("file:") }

    /// Whether a warning is decodebin's "No decoder available for type '…'" about a stream
    /// that is never decoded (video, pictures, subtitles). The caps are quoted in the
    /// message whatever its language.
    static func isSkippedStreamNotice(_ message: String) -> Bool {
        ["'video/", "'image/", "'text/", "'subpicture/", "'subtitle/", "'closedcaption/", "'application/x-ssa", "'application/x-ass", "'application/x-subtitle"]
            .contains { message.contains($0) }
    }

    /// `/GstPlayBin:x/GstURIDecodeBin:uridecodebin1` of an element path inside it, or nil.
    static func decoderPath(of source: String) -> String? {
        let parts = source.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = parts.firstIndex(where: { $0.hasPrefix("GstURIDecodeBin:") }) else { return nil }
        return parts[...index].joined(separator: "/")
    }

    // MARK: - Calls into GStreamer

    /// Takes the loaded stream down: to READY, or to NULL after the pipeline reported an error.
    /// READY, not NULL: the file is closed all the same, and GStreamer 1.22's playsink leaks
    /// its audio chain (about 4 KiB) on every NULL → PLAYING. After a failure, NULL: every
    /// element of the failed stream goes, not only its data. A teardown GStreamer does not
    /// return from leaves a new pipeline in place of the stuck one.
    private func tearDown() {
        let target: Pipeline.State = pipelineFailed ? .null : .ready
        pipelineFailed = false
        if pipeline.setState(target) == .stuck { replaceStuckPipeline() }
    }

    /// Changes the loaded stream's state. Should GStreamer not return, the loaded entry is
    /// loaded again in a new pipeline, where it was last known to be.
    @discardableResult
    private func setPipelineState(_ state: Pipeline.State) -> Pipeline.StateChange {
        let result = pipeline.setState(state)
        if result == .stuck { restartAfterStuck(at: pipeline.lastPosition) }
        return result
    }

    /// Seeks the loaded stream, setting the rate too. Should GStreamer not return, the loaded
    /// entry is loaded again in a new pipeline, at `position`.
    private func seekPipeline(to position: Duration) -> Pipeline.SeekResult {
        let result = pipeline.seek(to: position, rate: rate)
        if result == .stuck { restartAfterStuck(at: position) }
        return result
    }

    /// GStreamer did not return from a call into the pipeline within its limit: a deadlock
    /// inside it (README, "Known limits"). A new pipeline takes its place, so that the daemon
    /// goes on answering and playing; the stuck one is freed if GStreamer ever lets go of it.
    /// False (and stopped) when no new pipeline can be made.
    @discardableResult
    private func replaceStuckPipeline() -> Bool {
        let stuck = pipeline
        stuck.onEvent = nil
        stuck.onStuck = nil
        pipelinesReplaced += 1
        let fresh: Pipeline
        do {
            fresh = try Pipeline(audioSink: audioSink, stuckLimit: stuck.stuckLimit)
        } catch {
            logger.error("GStreamer did not return from a call into the pipeline within \(stuck.stuckLimit), and no new one can be made (\(error)); stopped")
            desired = .stopped
            settle(.stopped)
            return false
        }
        logger.error("GStreamer did not return from a call into the pipeline within \(stuck.stuckLimit) (a deadlock inside it); going on in a new pipeline")
        let since = ContinuousClock.now
        stuck.whenLetGo { [logger] in
            let tenths = Int(((ContinuousClock.now - since + stuck.stuckLimit) / .milliseconds(100)).rounded())
            logger.notice("GStreamer let go of the stuck pipeline after \(tenths / 10).\(tenths % 10) s; it is freed")
        }
        fresh.volume = volume
        attach(fresh)
        pipeline = fresh
        return true
    }

    /// A query or a property GStreamer did not return from got the pipeline stuck (state
    /// changes and seeks deal with it as they find it): the loaded entry goes on in a new one.
    private func pipelineGotStuck() {
        guard pipeline.isStuck else { return }
        restartAfterStuck(at: seekAfterPreroll ?? seekTarget ?? pipeline.lastPosition)
    }

    /// Loads the loaded entry again, at `position`, in a new pipeline in place of a stuck one.
    private func restartAfterStuck(at position: Duration?) {
        let entryID = loadedEntryID
        guard replaceStuckPipeline() else { return }
        loadGeneration += 1
        unload()
        guard desired != .stopped, let entryID, let index = queue.index(of: entryID) else {
            desired = .stopped
            settle(.stopped)
            return
        }
        start(index, seekingTo: position)
    }

    // MARK: - Pipeline events

    private func handle(_ event: Pipeline.Event) {
        switch event {
        case .requestState(let state): return handleStateRequest(state)
        case .outputVolumeChanged: return outputVolumeChanged()
        case .error(let message, _, _, inOutput: true): return outputFailed(message)
        default: break
        }
        if deferredStart != nil {
            // What the track being left does no longer matters, only that its preroll ended.
            switch event {
            case .error:
                pipelineFailed = true
                startDeferred()
            case .asyncDone, .endOfStream:
                startDeferred()
            default:
                break
            }
            return
        }
        switch event {
        case .stateChanged(_, let new, let pending):
            guard pending == .voidPending, !seekPending, !isBuffering, loadedEntryID != nil else { return }
            if isPrerolling && seekAfterPreroll != nil { return }  // the seek after preroll comes first
            if new == .playing && desired == .playing || new == .paused && desired == .paused {
                let newStatus: Status = new == .playing ? .playing : .paused
                if status != newStatus || current?.id != loadedEntryID { settleLoaded(newStatus) }
            }
        case .asyncDone:
            if isPrerolling && isOnItsWayOut {
                // Prerolled, and stays paused: the selected entry loads once its tags are in.
                isPrerolling = false
                return
            }
            if isPrerolling {
                isPrerolling = false
                if let target = seekAfterPreroll {
                    seekAfterPreroll = nil
                    switch seekPipeline(to: target) {
                    case .started:
                        seekPending = true
                        seekTarget = target
                        return
                    case .stuck: return  // loading there in a new pipeline
                    case .refused: break
                    }
                    logger.warning("could not seek to \(target) in \(current.map { MediaSources.displayName($0.uri) } ?? "the track")")
                }
                settleIfReached()
            } else if seekPending {
                seekPending = false
                seekTarget = nil
                prepareNext()
                if status == desired && current?.id == loadedEntryID {
                    onChange?(.transport)  // a seek or rate change: republish the timing
                }
                settleIfReached()
            }
        case .streamStart:
            if awaitingLoadedStreamStart {
                awaitingLoadedStreamStart = false
                return
            }
            guard let switched = pipeline.handoff.takeCommitted(),
                let index = queue.index(of: switched.entryID)
            else { return }
            // A gapless switch: the new entry is now what is heard.
            if let previous = loadedEntryID {
                reportEndIfStream(previous)
                recordMove(from: previous, to: switched.entryID, forward: true)
            }
            selectedIndex = index
            loadedEntryID = switched.entryID
            current = queue[index]
            switchedAt = ContinuousClock.now
            streamTags = StreamTags()
            bufferingPercent = -1
            disarmStallWatch()  // a stream handed over has started
            if rate != 1 {  // a new stream starts at rate 1
                switch seekPipeline(to: .zero) {
                case .started:
                    seekPending = true
                    seekTarget = nil
                case .stuck: return  // loading it in a new pipeline
                case .refused: break
                }
            }
            prepareNext()
            onChange?(.transport)
        case .endOfStream:
            if let ended = loadedEntryID { reportEndIfStream(ended) }
            if desired == .playing, let index = selectedIndex,
                let next = neighbour(of: index, forward: true, automatic: true)
            {
                // playbin asked for the next track before there was one (a short first
                // track while the rest of a folder was still being read): play it now.
                recordMove(from: queue[index].id, to: queue[next].id, forward: true)
                load(next)
                return
            }
            logger.debug("end of the queue")
            desired = .stopped
            unload()
            settle(.stopped)
            ranOut = true
        case .error(let message, let debug, let source, _):
            pipelineFailed = true
            logger.debug("pipeline error from \(source): \(debug ?? "-")")
            if let ignored = ignoredErrorSource, source.hasPrefix(ignored) {
                logger.debug("ignoring a further error of a skipped stream: \(message)")
                return
            }
            if pipeline.handoff.hasCommitted, let handedOver = pipeline.handoff.takeCommitted(),
                let next = queue.index(of: handedOver.entryID),
                queue[next].info == nil || !isLocal(queue[next].uri),
                let playing = loadedEntryID.flatMap({ id in queue.index(of: id) })
            {
                // The URI handed over for gapless playback failed while the current one was
                // still playing: skip that one, and go on with the current one where it was.
                recordFailure(message, at: next)
                ignoredErrorSource = Self.decoderPath(of: source)
                let position = pipeline.position ?? .zero
                tearDown()  // NULL: the failed stream's decoder goes too
                start(playing, seekingTo: position)
                return
            }
            let failed = loadedEntryID.flatMap { id in queue.index(of: id).map { queue[$0] } }
            if let failed, isOnItsWayOut, let index = queue.index(of: failed.id) {
                // The selection moved on: mark the entry that failed, and let the load of
                // the selected one go on.
                recordFailure(message, at: index)
                unload()
            } else if let failed {
                fail(failed, reason: message)
            } else if desired != .stopped, selectedIndex != nil {
                // Nothing is loaded: the error was queued by a track already taken down (a
                // failing stream posts more than one), while the selected one is being read.
                logger.debug("ignoring an error of a track already taken down: \(message)")
            } else {
                logger.error("playback error: \(message)")
                desired = .stopped
                unload()
                settle(.stopped)
            }
        case .warning(let message, let source):
            if source.contains("audio-sink") || source.contains("autoaudiosink") {
                guard !warnedAboutNullSink else { return }
                warnedAboutNullSink = true
                logger.warning("no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
            } else if Self.isSkippedStreamNotice(message) {
                // decodebin's note on a video, picture or subtitle stream whose decoder is
                // skipped on purpose: nothing is wrong.
                logger.debug("not decoded, as intended: \(message)")
            } else {
                logger.warning("GStreamer warning from \(source): \(message)")
            }
        case .buffering(let percent):
            // Only a network stream buffers: not a file, nor the stream that follows it before
            // it starts (playing on is right while it fills).
            guard desired == .playing, let id = loadedEntryID, let loaded = entry(id: id), !isLocal(loaded.uri) else { return }
            watchStall(id, buffering: percent)
            // Paused while the buffer fills, without telling anyone: PlaybackStatus stays what
            // it was, and a stream that has not played yet settles once it plays.
            if percent < 100 && !isBuffering {
                isBuffering = true
                logger.debug("buffering \(MediaSources.displayName(loaded.uri)) (\(percent)%); paused until it is full")
                setPipelineState(.paused)
            } else if percent >= 100 && isBuffering {
                isBuffering = false
                logger.debug("buffered \(MediaSources.displayName(loaded.uri)); playing on")
                setPipelineState(.playing)
            }
        case .tags(var tags):
            guard let id = loadedEntryID, let index = queue.index(of: id), !isLocal(queue[index].uri) else {
                return  // a file's tags were read before it played: one Metadata per file
            }
            if let image = tags.image {
                tags.image = nil
                keepStreamArtwork(image, of: id)
            }
            streamTags.merge(tags)
            // Before the stream first plays, settling it applies them (in its first Metadata).
            if isSettled(id) { updateStreamInfo(at: index) }
        case .clockLost:
            if desired == .playing, setPipelineState(.paused) != .stuck {
                setPipelineState(.playing)
            }
        case .durationChanged:
            streamDurationChanged()
        case .nextURITaken:
            watchHandedOverStream()
        case .requestState, .outputVolumeChanged:
            break  // handled above, whatever else is going on
        }
    }

    /// The loaded entry is no longer the selected one, which is being read before it loads
    /// (Next to an entry whose tags are not in yet).
    private var isOnItsWayOut: Bool {
        guard desired != .stopped, let id = loadedEntryID, let loaded = queue.index(of: id), let selectedIndex else { return false }
        return loaded != selectedIndex
    }

    /// After a preroll or a seek: go on to PLAYING if that is wanted, and settle the state
    /// the pipeline is in if it is the wanted one (its state-change message may have come
    /// before the ASYNC_DONE, while a seek was pending).
    private func settleIfReached() {
        guard !isBuffering else { return }  // it plays, and settles, once the buffer is full
        let reached = pipeline.currentState
        if desired == .playing && reached.current != .playing && reached.pending != .playing {
            setPipelineState(.playing)
            return
        }
        let newStatus: Status? = reached.current == .playing && desired == .playing ? .playing
            : reached.current == .paused && desired == .paused ? .paused : nil
        if let newStatus, reached.pending == .voidPending, status != newStatus || current?.id != loadedEntryID {
            settleLoaded(newStatus)
        }
    }

    /// Settles a state the pipeline confirmed for the loaded entry, filling in what the
    /// pipeline knows when the entry was never read ahead (a stream).
    private func settleLoaded(_ newStatus: Status) {
        retriedAfterStuck = nil
        if let id = loadedEntryID, let index = queue.index(of: id) {
            // The selection stays; the selected entry settles when it plays.
            if isOnItsWayOut { return }
            selectedIndex = index
            if !isLocal(queue[index].uri) {
                disarmStallWatch()  // it played: the server sent what was awaited
                let info = streamInfo(at: index)
                if info != queue[index].info {
                    queue[index].info = info
                    onChange?(.entryInfo(id))
                }
            } else if queue[index].info == nil {
                var info = TrackInfo()
                info.duration = pipeline.duration
                info.isSeekable = pipeline.isSeekable
                info.isLive = info.duration == nil
                info.audioStreams = 1
                record(info, at: index)
            }
        }
        settle(newStatus)
    }
}

// MARK: - Network streams

extension Player {
    /// The loaded entry has settled (Playing or Paused) and is the one shown.
    private func isSettled(_ id: UInt64) -> Bool {
        current?.id == id && status != .stopped
    }

    /// What the pipeline and the stream's tags say of the stream at `index`: what the
    /// pipeline told when it first played (duration, seekability), with the tags heard since.
    private func streamInfo(at index: Int) -> TrackInfo {
        var info: TrackInfo
        if let known = queue[index].info {
            info = known
            info.title = nil
            info.artists = []
            info.album = nil
            info.genres = []
        } else {
            info = TrackInfo()
            info.duration = pipeline.duration
            info.isSeekable = pipeline.isSeekable
            info.isLive = info.duration == nil
            info.audioStreams = 1
        }
        return streamTags.applied(to: info)
    }

    /// A new stream title (or other tag) was heard: the entry's metadata changes once per
    /// actual change, never for a repeat of what it already says.
    /// `facts`: new facts from the pipeline (a duration), tags aside.
    private func updateStreamInfo(at index: Int, facts: TrackInfo? = nil) {
        let before = queue[index].info
        if let facts { queue[index].info = facts }
        let info = streamInfo(at: index)
        guard info != before else { return }
        let id = queue[index].id
        queue[index].info = info
        onChange?(.entryInfo(id))
        if current?.id == id {
            current = queue[index]
            onChange?(.metadata)
        }
    }

    /// A picture a stream carries is kept in the artwork cache off the main queue, then shown
    /// with the stream: in its first Metadata when kept before the stream settles, else in one
    /// update (none when it is the picture already shown). Dropped when another entry is
    /// loaded by then.
    private func keepStreamArtwork(_ image: Data, of id: UInt64) {
        guard let artwork else { return }
        Self.readQueues[0].async { [weak self] in
            let url = artwork.store(image)
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self, let url, self.loadedEntryID == id, self.streamTags.artworkURL != url,
                        let index = self.queue.index(of: id)
                    else { return }
                    self.streamTags.artworkURL = url
                    if self.isSettled(id) { self.updateStreamInfo(at: index) }
                }
            }
        }
    }

    /// A stream's duration became known after it started playing (an MP3 served over HTTP is
    /// measured as it plays): its length and seekability are published then, once. Later
    /// refinements of an estimate are not republished.
    private func streamDurationChanged() {
        guard let id = loadedEntryID, isSettled(id), let index = queue.index(of: id), !isLocal(queue[index].uri),
            var info = queue[index].info, info.duration == nil, let duration = pipeline.duration
        else { return }
        info.duration = duration
        info.isLive = false
        info.isSeekable = pipeline.isSeekable
        updateStreamInfo(at: index, facts: info)
    }

    /// An endless stream (no duration) ended: its server closed the connection. Playback
    /// goes on with what follows, as at the end of a track; the log says why.
    private func reportEndIfStream(_ id: UInt64) {
        guard let entry = entry(id: id), !isLocal(entry.uri), entry.info?.duration == nil else { return }
        logger.warning("the stream \(MediaSources.displayName(entry.uri)) ended: the server closed the connection")
    }

    /// Buffering of the loaded stream while it should play: the watch starts when the level
    /// first drops, and starts again whenever the level rises (data came).
    private func watchStall(_ id: UInt64, buffering percent: Int) {
        defer { bufferingPercent = percent }
        if percent >= 100 {
            if isSettled(id) { disarmStallWatch() }  // before it first plays, settling ends the watch
        } else if stallWatch == nil || percent > bufferingPercent {
            armStallWatch(for: id)
        }
    }

    /// When playbin holds a stream to follow the current track: it has until the stall limit
    /// to start once this track ends.
    private func watchHandedOverStream() {
        guard let id = pipeline.handoff.committedEntryID, let next = entry(id: id), !isLocal(next.uri) else { return }
        armStallWatch(for: id)
    }

    /// (Re)starts the countdown after which the stream `id` counts as stalled.
    private func armStallWatch(for id: UInt64) {
        let timer = stallWatch ?? {
            let timer = DispatchSource.makeTimerSource(queue: .main)
            timer.resume()
            return timer
        }()
        stallWatch = timer
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.streamStalled(id) }
        }
        let timeout = streamStallTimeout
        timer.schedule(deadline: .now() + timeout.dispatchInterval, leeway: .milliseconds(100))
    }

    private func disarmStallWatch() {
        stallWatch?.cancel()
        stallWatch = nil
    }

    /// Nothing came from the server in time: the stream is skipped (one log line naming it
    /// and why) rather than shown Playing, or stuck loading, for ever.
    private func streamStalled(_ id: UInt64) {
        disarmStallWatch()
        guard deferredStart == nil, let entry = entry(id: id) else { return }
        if loadedEntryID == id {
            // Paused by hand while it buffered: left be; Play fills the buffer, and watches, again.
            guard desired == .playing || !isSettled(id) else { return }
        } else {
            // A stream handed over for a gapless switch, which has not started.
            guard pipeline.handoff.committedEntryID == id, let playing = loadedEntryID.flatMap({ self.entry(id: $0) }) else { return }
            guard desired == .playing else { return }  // paused: the watch starts again with Play
            if let duration = playing.info?.duration, let position = pipeline.position, position < duration - .milliseconds(500) {
                return armStallWatch(for: id)  // the track before it still plays: the wait starts at its end
            }
        }
        let seconds = Double(streamStallTimeout.nanoseconds) / 1e9
        let time = seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
        let reason = isSettled(id)
            ? "the stream stalled: nothing from the server for \(time)"
            : "no audio from the server within \(time)"
        pipelineFailed = true  // its source may still wait on the socket: take it all down
        fail(entry, reason: reason)
    }
}

