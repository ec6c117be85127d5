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
        public internal(set) var info: TrackInfo?
        /// Why the entry cannot be played, once that is known.
        public internal(set) var failure: String?
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
        /// Repeat or shuffle changed, or the queue did.
        case options
    }

    public private(set) var entries: [Entry] = []
    public private(set) var status: Status = .stopped
    /// The entry the pipeline plays (or, when stopped, the one Play would start).
    public private(set) var current: Entry?
    public private(set) var rate: Double = 1
    public private(set) var volume: Double = 1
    public private(set) var repeatMode: RepeatMode = .off
    public private(set) var shuffle = false
    public let supportedRates: ClosedRange<Double>
    public var onChange: (@MainActor (Change) -> Void)?

    private let pipeline: Pipeline
    private let discoverer = Discoverer()
    private let logger: Logger
    private var nextEntryID: UInt64 = 1
    private var selectedIndex: Int?
    private var desired: Status = .stopped
    private var loadedEntryID: UInt64?
    private var loadGeneration = 0
    /// A flushing seek is in flight; the next ASYNC_DONE completes it.
    private var seekPending = false
    /// A load is prerolling; the next ASYNC_DONE completes it. Seeks wait until then, so
    /// that every ASYNC_DONE can be told apart.
    private var isPrerolling = false
    /// A position to seek to once a load has prerolled (also used to apply the rate).
    private var seekAfterPreroll: Duration?
    /// The next STREAM_START is the loaded entry's own, not a gapless switch (a short file
    /// can have handed over the next URI before its own stream started).
    private var awaitingLoadedStreamStart = false
    /// The decoder bin of a handed-over stream that failed: its later errors are echoes.
    private var ignoredErrorSource: String?
    private var consecutiveFailures = 0
    private var isBuffering = false
    private var shuffleOrder: [UInt64] = []
    private var warnedAboutNullSink = false

    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    public init(audioSink: String?, supportedRates: ClosedRange<Double> = 0.5...2.0, logger: Logger) throws {
        self.logger = logger
        self.supportedRates = supportedRates
        do {
            pipeline = try Pipeline(audioSink: audioSink)
        } catch {
            throw MediaError(error.description)
        }
        pipeline.onEvent = { [weak self] event in self?.handle(event) }
    }

    // MARK: - Queue

    /// Appends URIs (already expanded) and returns their entries.
    @discardableResult
    public func enqueue(_ uris: [String], after index: Int? = nil) -> [Entry] {
        let new = uris.map { uri -> Entry in
            defer { nextEntryID += 1 }
            return Entry(id: nextEntryID, uri: uri)
        }
        let position = index.map { min($0 + 1, entries.count) } ?? entries.count
        entries.insert(contentsOf: new, at: position)
        if let selected = selectedIndex, selected >= position { selectedIndex = selected + new.count }
        if shuffle { shuffleOrder += new.map(\.id).shuffled() }
        if selectedIndex == nil, !entries.isEmpty {
            selectedIndex = firstIndex()
            // A local file becomes `current` once its tags are read, so that clients see
            // one Metadata for it, not a file name followed by the real title.
            if let selectedIndex, !needsDiscovery(entries[selectedIndex]) { current = entries[selectedIndex] }
            discoverCurrentIfNeeded()
        }
        prepareNext()
        onChange?(.options)
        return new
    }

    /// The index of the selected entry in `entries`.
    public var currentIndex: Int? { selectedIndex }

    public var canGoNext: Bool { selectedIndex.flatMap { neighbour(of: $0, forward: true, automatic: false) } != nil }
    public var canGoPrevious: Bool { selectedIndex.flatMap { neighbour(of: $0, forward: false, automatic: false) } != nil }

    /// The live position from the pipeline; zero when stopped, nil while it cannot say.
    public var position: Duration? {
        guard status != .stopped, loadedEntryID != nil else { return .zero }
        return pipeline.position
    }

    /// Names of the GStreamer elements in the pipeline now (for tests and diagnostics).
    public var pipelineElementNames: [String] { pipeline.elementFactoryNames }

    // MARK: - Commands

    /// Starts or resumes playback. Returns false when there is nothing to play.
    @discardableResult
    public func play() -> Bool {
        guard let index = selectedIndex ?? firstIndex() else { return false }
        desired = .playing
        if loadedEntryID == entries[index].id, status != .stopped {
            if pipeline.setState(.playing) == .failure { fail(entries[index], reason: "the audio output refused to start") }
        } else {
            load(index)
        }
        return true
    }

    /// Loads an entry paused, at `position` when given (the `--paused` start, a restored
    /// session). Without `index`, the selected entry. Returns false when there is none.
    @discardableResult
    public func preroll(index: Int? = nil, at position: Duration? = nil) -> Bool {
        guard let index = index.flatMap({ entries.indices.contains($0) ? $0 : nil }) ?? selectedIndex ?? firstIndex() else { return false }
        desired = .paused
        load(index, at: position)
        return true
    }

    /// Starts playing an entry at `position` (a restored session told to play).
    @discardableResult
    public func play(index: Int, at position: Duration?) -> Bool {
        guard entries.indices.contains(index) else { return false }
        desired = .playing
        load(index, at: position)
        return true
    }

    public func pause() {
        guard desired == .playing || status == .playing else { return }
        desired = .paused
        if loadedEntryID != nil { pipeline.setState(.paused) }
    }

    public func togglePlayPause() {
        if desired == .playing { pause() } else { play() }
    }

    public func stop() {
        desired = .stopped
        loadGeneration += 1
        unload()
        settle(.stopped)
    }

    public func next() {
        guard let index = selectedIndex, let target = neighbour(of: index, forward: true, automatic: false) else { return }
        go(to: target)
    }

    /// Restarts the current entry when more than 3 s in, else goes to the previous one.
    public func previous() {
        if status != .stopped, let position, position > .seconds(3) {
            seek(to: .zero)
            return
        }
        guard let index = selectedIndex, let target = neighbour(of: index, forward: false, automatic: false) else {
            if status != .stopped { seek(to: .zero) }
            return
        }
        go(to: target, forward: false)
    }

    /// Makes the entry with `id` current, keeping the play/pause/stop state.
    public func goTo(id: UInt64) -> Bool {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        go(to: index)
        return true
    }

    @discardableResult
    public func seek(to position: Duration) -> Bool {
        guard status != .stopped, loadedEntryID != nil, let index = selectedIndex else { return false }
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
        guard pipeline.seek(to: max(position, .zero), rate: rate) else {
            logger.warning("seek to \(position) refused by the pipeline")
            return false
        }
        seekPending = true
        return true
    }

    public func setRate(_ newRate: Double) {
        guard !newRate.isNaN else { return }
        let clamped = min(max(newRate, supportedRates.lowerBound), supportedRates.upperBound)
        guard clamped != rate else { return }
        rate = clamped
        if status != .stopped, loadedEntryID != nil, let position = pipeline.position {
            seek(to: position)
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
        prepareNext()
        onChange?(.options)
    }

    public func setShuffle(_ on: Bool) {
        guard on != shuffle else { return }
        shuffle = on
        if on {
            let currentID = selectedIndex.map { entries[$0].id }
            shuffleOrder = entries.map(\.id).filter { $0 != currentID }.shuffled()
            if let currentID { shuffleOrder.insert(currentID, at: 0) }
        } else {
            shuffleOrder = []
        }
        prepareNext()
        onChange?(.options)
    }

    /// Queues `uris` after the current entry and plays the first of them.
    @discardableResult
    public func open(_ uris: [String]) -> Bool {
        guard !uris.isEmpty else { return false }
        let added = enqueue(uris, after: selectedIndex)
        guard let first = added.first, let index = entries.firstIndex(where: { $0.id == first.id }) else { return false }
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
        if shuffle, let id = shuffleOrder.first { return entries.firstIndex { $0.id == id } }
        return entries.isEmpty ? nil : 0
    }

    private func go(to index: Int, forward: Bool = true) {
        selectedIndex = index
        switch desired {
        case .stopped:
            current = entries[index]
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
        let entry = entries[index]
        if entry.info != nil || !isLocal(entry.uri) {
            start(index, seekingTo: position)
            return
        }
        discoverer.discover(entry.uri) { [weak self] result in
            guard let self, generation == self.loadGeneration,
                let index = self.entries.firstIndex(where: { $0.id == entry.id })
            else { return }
            switch result {
            case .success(let info):
                self.entries[index].info = info
                self.start(index, seekingTo: position)
            case .failure(let error) where error.isTimeout:
                // Slow to read is not broken: let the pipeline try (it reports real errors).
                self.logger.debug("reading the tags of \(MediaSources.displayName(entry.uri)) timed out; playing it anyway")
                self.start(index, seekingTo: position)
            case .failure(let error):
                self.entries[index].failure = error.reason
                self.fail(self.entries[index], reason: error.reason, forward: forward)
            }
        }
    }

    /// Loads the entry into the pipeline. When a seek is needed (a start position, or a rate
    /// other than 1) the pipeline prerolls paused, seeks, and only then plays.
    private func start(_ index: Int, seekingTo position: Duration? = nil) {
        let entry = entries[index]
        pipeline.handoff.reset()
        pipeline.setState(.ready)
        pipeline.discardQueuedMessages()
        pipeline.uri = entry.uri
        loadedEntryID = entry.id
        // playbin asks for the next URI as soon as it has read this one, which for a short
        // file is during preroll: have the answer ready before starting.
        selectedIndex = index
        prepareNext()
        seekPending = false
        seekAfterPreroll = position ?? (rate != 1 ? .zero : nil)
        isPrerolling = true
        awaitingLoadedStreamStart = true
        let target: Pipeline.State = desired == .playing && seekAfterPreroll == nil ? .playing : .paused
        if pipeline.setState(target) == .failure {
            fail(entry, reason: "the pipeline could not start it (is the audio output available?)")
        }
    }

    private func unload() {
        pipeline.handoff.reset()
        pipeline.setState(.null)
        loadedEntryID = nil
        seekPending = false
        seekAfterPreroll = nil
        isPrerolling = false
        isBuffering = false
    }

    /// Skips an entry that cannot play: one log line naming it and why, then the next one
    /// (in the direction of travel), or stop at the end.
    private func fail(_ entry: Entry, reason: String, forward: Bool = true) {
        logger.warning("skipping \(MediaSources.displayName(entry.uri)): \(reason)")
        if let index = entries.firstIndex(where: { $0.id == entry.id }) { entries[index].failure = reason }
        consecutiveFailures += 1
        unload()
        guard desired != .stopped, consecutiveFailures <= entries.count,
            let index = entries.firstIndex(where: { $0.id == entry.id }),
            let target = neighbour(of: index, forward: forward, automatic: true, allowRepeatOne: false)
        else {
            if consecutiveFailures > entries.count { logger.error("nothing in the queue can be played") }
            desired = .stopped
            settle(.stopped)
            return
        }
        load(target, forward: forward)
    }

    private func settle(_ newStatus: Status) {
        if let index = selectedIndex { current = entries[index] }
        if newStatus != .stopped { consecutiveFailures = 0 }
        status = newStatus
        prepareNext()
        onChange?(.transport)
    }

    private func needsDiscovery(_ entry: Entry) -> Bool {
        entry.info == nil && entry.failure == nil && isLocal(entry.uri)
    }

    private func discoverCurrentIfNeeded() {
        guard let index = selectedIndex, needsDiscovery(entries[index]) else { return }
        let id = entries[index].id
        discoverer.discover(entries[index].uri) { [weak self] result in
            guard let self, let index = self.entries.firstIndex(where: { $0.id == id }) else { return }
            switch result {
            case .success(let info): self.entries[index].info = info
            case .failure(let error): self.entries[index].failure = error.reason
            }
            let stillSelected = self.selectedIndex == index && (self.current == nil || self.current?.id == id)
            if stillSelected {
                self.current = self.entries[index]
                self.onChange?(.metadata)
            }
        }
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
        let entry = entries[next]
        pipeline.handoff.prepare(.init(entryID: entry.id, uri: entry.uri))
        if entry.info == nil, entry.failure == nil, isLocal(entry.uri) {
            discoverer.discover(entry.uri) { [weak self] result in
                guard let self, let index = self.entries.firstIndex(where: { $0.id == entry.id }) else { return }
                switch result {
                case .success(let info):
                    self.entries[index].info = info
                    if self.current?.id == entry.id {
                        self.current = self.entries[index]
                        self.onChange?(.metadata)
                    }
                case .failure(let error):
                    self.entries[index].failure = error.reason
                    self.logger.warning("skipping \(MediaSources.displayName(entry.uri)): \(error.reason)")
                    self.prepareNext()
                }
            }
        }
    }

    /// The entry after (or before) `index` in play order, skipping entries known to fail.
    /// `automatic` is the end of a track: it repeats the track in repeat-one mode.
    private func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true) -> Int? {
        guard entries.indices.contains(index) else { return nil }
        if automatic && allowRepeatOne && repeatMode == .one && entries[index].failure == nil { return index }
        let order: [Int] = shuffle
            ? shuffleOrder.compactMap { id in entries.firstIndex { $0.id == id } }
            : Array(entries.indices)
        guard var position = order.firstIndex(of: index) else { return nil }
        for _ in 0..<order.count {
            position += forward ? 1 : -1
            if position >= order.count || position < 0 {
                guard repeatMode == .all else { return nil }
                position = forward ? 0 : order.count - 1
            }
            let candidate = order[position]
            if candidate == index && !(repeatMode == .all) { return nil }
            if entries[candidate].failure == nil { return candidate }
        }
        return nil
    }

    private func isLocal(_ uri: String) -> Bool { uri.hasPrefix("file:") }

    /// `/GstPlayBin:x/GstURIDecodeBin:uridecodebin1` of an element path inside it, or nil.
    static func decoderPath(of source: String) -> String? {
        let parts = source.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = parts.firstIndex(where: { $0.hasPrefix("GstURIDecodeBin:") }) else { return nil }
        return parts[...index].joined(separator: "/")
    }

    // MARK: - Pipeline events

    private func handle(_ event: Pipeline.Event) {
        switch event {
        case .stateChanged(_, let new, let pending):
            guard pending == .voidPending, !seekPending, !isBuffering, loadedEntryID != nil else { return }
            if isPrerolling && seekAfterPreroll != nil { return }  // the seek after preroll comes first
            if new == .playing && desired == .playing || new == .paused && desired == .paused {
                let newStatus: Status = new == .playing ? .playing : .paused
                if status != newStatus || current?.id != loadedEntryID { settleLoaded(newStatus) }
            }
        case .asyncDone:
            if isPrerolling {
                isPrerolling = false
                if let target = seekAfterPreroll {
                    seekAfterPreroll = nil
                    if pipeline.seek(to: target, rate: rate) {
                        seekPending = true
                        return
                    }
                    logger.warning("could not seek to \(target) in \(current.map { MediaSources.displayName($0.uri) } ?? "the track")")
                }
                settleIfReached()
            } else if seekPending {
                seekPending = false
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
                let index = entries.firstIndex(where: { $0.id == switched.entryID })
            else { return }
            // A gapless switch: the new entry is now what is heard.
            selectedIndex = index
            loadedEntryID = switched.entryID
            current = entries[index]
            if rate != 1, pipeline.seek(to: .zero, rate: rate) { seekPending = true }  // a new stream starts at rate 1
            prepareNext()
            onChange?(.transport)
        case .endOfStream:
            logger.debug("end of the queue")
            desired = .stopped
            unload()
            settle(.stopped)
        case .error(let message, let debug, let source):
            logger.debug("pipeline error from \(source): \(debug ?? "-")")
            if let ignored = ignoredErrorSource, source.hasPrefix(ignored) {
                logger.debug("ignoring a further error of a skipped stream: \(message)")
                return
            }
            if pipeline.handoff.hasCommitted, let handedOver = pipeline.handoff.takeCommitted(),
                let next = entries.firstIndex(where: { $0.id == handedOver.entryID }),
                entries[next].info == nil || !isLocal(entries[next].uri),
                let playing = loadedEntryID.flatMap({ id in entries.firstIndex { $0.id == id } })
            {
                // The URI handed over for gapless playback failed while the current one was
                // still playing: skip that one, and go on with the current one where it was.
                entries[next].failure = message
                ignoredErrorSource = Self.decoderPath(of: source)
                logger.warning("skipping \(MediaSources.displayName(entries[next].uri)): \(message)")
                let position = pipeline.position ?? .zero
                pipeline.setState(.null)  // tears down the failed stream's decoder too
                start(playing, seekingTo: position)
                return
            }
            let failed = loadedEntryID.flatMap { id in entries.first { $0.id == id } }
            if let failed {
                fail(failed, reason: message)
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
            } else {
                logger.warning("GStreamer warning from \(source): \(message)")
            }
        case .buffering(let percent):
            guard desired == .playing else { return }
            if percent < 100 && !isBuffering {
                isBuffering = true
                pipeline.setState(.paused)
            } else if percent >= 100 && isBuffering {
                isBuffering = false
                pipeline.setState(.playing)
            }
        case .clockLost:
            if desired == .playing {
                pipeline.setState(.paused)
                pipeline.setState(.playing)
            }
        case .durationChanged:
            break
        }
    }

    /// After a preroll or a seek: go on to PLAYING if that is wanted, and settle the state
    /// the pipeline is in if it is the wanted one (its state-change message may have come
    /// before the ASYNC_DONE, while a seek was pending).
    private func settleIfReached() {
        let reached = pipeline.currentState
        if desired == .playing && reached.current != .playing && reached.pending != .playing {
            pipeline.setState(.playing)
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
        if let id = loadedEntryID, let index = entries.firstIndex(where: { $0.id == id }) {
            selectedIndex = index
            if entries[index].info == nil {
                var info = TrackInfo()
                info.duration = pipeline.duration
                info.isSeekable = pipeline.isSeekable
                info.isLive = info.duration == nil
                info.audioStreams = 1
                entries[index].info = info
            }
        }
        settle(newStatus)
    }
}
