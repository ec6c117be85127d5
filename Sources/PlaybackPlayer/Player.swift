import Dispatch
import FoundationEssentials
public import Logging
public import Media
import PlaybackEngine
package import PlaybackPipeline
public import PlaybackVocabulary

/// A play queue and its transport over a GStreamer pipeline.
///
/// The player's state is one value (`PlayerState`): the queue, what is selected in it
/// (`Selection`, over `PlayOrder`), the entry clients are shown, a load waiting for tags,
/// and what follows from the engine's reports (the end of the queue, failures in a row, the
/// sound server's interruptions). Each input (a command, a queue edit, a tag read that
/// ended, an `EngineReport`) goes through one of its steps, which returns the actions the
/// player carries out in one switch (`perform(_:)`). The player alone owns the engine,
/// which plays one entry at a time and alone owns the pipeline (`Engine`, over the
/// `Transport` state machine), and the tag reads (`TagPrefetch`). Commands return at once;
/// `status` is the settled truth, changed only when the pipeline confirms it (or at once for
/// stop, errors and the end of the queue). The observer is told after each settled change,
/// never about transient pipeline states (a seek's flush, a gapless switch, buffering).
@MainActor
public final class Player {
    /// The queue in order.
    public var entries: [Entry] { state.queue.entries }
    /// Changes whenever entries are added, removed or replaced.
    public var queueRevision: Int { queue.revision }
    /// How many entries are queued.
    public var count: Int { queue.count }
    /// The queue, the selection, the shown entry and a load waiting for tags (see
    /// ``PlayerState``): changed only through its steps and the player's own commands.
    var state = PlayerState()
    /// The queue, as it is now.
    var queue: PlayQueue { state.queue }
    /// What clients are told: changes only once the pipeline confirms it.
    public var status: Status { engine.status }
    /// The entry clients are shown: the one the pipeline plays (or, when stopped, the one
    /// Play would start), a copy of the queued entry as clients were last shown it. Always a
    /// queued entry, or nil.
    public var current: Entry? { state.shown }
    /// The playback rate (1: normal speed).
    public var rate: Double { engine.rate }
    /// The rate the audio really moves at while it plays: ``rate``, unless the output takes it
    /// slower (or faster) than real time, as its position showed. Clients that extrapolate the
    /// position are told this one, so that they follow such an output without corrections.
    public var effectiveRate: Double { engine.effectiveRate }
    /// The volume, on the cubic scale of desktop mixers (0...1).
    public var volume: Double { engine.volume }
    /// What follows the last entry, or the current one at its end.
    public var repeatMode: RepeatMode { state.selection.order.repeatMode }
    /// Whether entries play in a random order.
    public var shuffle: Bool { state.selection.order.shuffle }
    /// The rates ``setRate(_:)`` accepts; others are clamped into it.
    public let supportedRates: ClosedRange<Double>
    /// Told after each settled change.
    public var onChange: (@MainActor (Change) -> Void)?
    /// How loudness is levelled: a change applies from the next track on.
    public var loudness = LoudnessSettings() {
        didSet {
            // The track handed over already keeps the gain it was given.
            if loudness != oldValue, !engine.hasHandedOver { prepareNext() }
        }
    }
    /// The gains measured for tracks without tags (nil: none are kept).
    public var gainCache: GainCache?

    /// Plays one entry at a time: the only owner of the pipeline.
    let engine: Engine
    /// The transport state of the engine.
    var transport: Transport { engine.transport }
    /// Which entry is selected, and the play order from it.
    var selection: Selection { state.selection }
    /// Reads the tags of entries off the main actor.
    let prefetch: TagPrefetch
    /// Where the cover images of the tracks read go (nil: none are looked for).
    public var artwork: ArtworkCache? { prefetch.artwork }
    let logger: Logger
    /// The index of the selected entry (see ``Selection``).
    var selectedIndex: Int? { state.selectedIndex }
    /// Playback stopped because the queue ran out (the end, or nothing playable left), not
    /// because someone stopped it: tracks queued now may go on from there.
    public var ranOut: Bool { state.ranOut }
    /// The factory names of the elements the loaded stream plays through.
    public var pipelineElementNames: [String] { engine.pipelineElementNames }
    /// How many pipelines GStreamer got stuck in and were replaced.
    public var pipelinesReplaced: Int { engine.pipelinesReplaced }
    /// How long a network stream may send nothing before it is reported and skipped.
    public var streamStallTimeout: Duration {
        get { engine.stallLimit }
        set { engine.stallLimit = newValue }
    }

    /// A player with an empty queue, stopped.
    /// - Parameter audioSink: a GStreamer bin description, or nil for the system output.
    /// - Parameter supportedRates: the playback rates clients may ask for; others are clamped.
    /// - Parameter artwork: where the cover images of tracks go as their tags are read.
    /// - Parameter stuckLimit: how long a call into GStreamer (a state change, a seek, a
    ///   query) may take before the pipeline is taken for stuck and replaced.
    /// - Parameter logger: where what happens to the queue and its tracks is logged.
    /// - Throws: `MediaError` when `audioSink` does not describe a bin GStreamer can make.
    public convenience init(
        audioSink: String?, supportedRates: ClosedRange<Double> = 0.5...2.0, artwork: ArtworkCache? = nil,
        stuckLimit: Duration = .seconds(3), logger: Logger
    ) throws {
        try self.init(
            output: AudioOutput(audioSink: audioSink), supportedRates: supportedRates, artwork: artwork,
            stuckLimit: stuckLimit, logger: logger)
    }

    /// A player with an empty queue, stopped, that plays into `output` (see
    /// ``init(audioSink:supportedRates:artwork:stuckLimit:logger:)`` for the rest).
    package init(
        output: AudioOutput, supportedRates: ClosedRange<Double> = 0.5...2.0, artwork: ArtworkCache? = nil,
        stuckLimit: Duration = .seconds(3), logger: Logger
    ) throws {
        self.logger = logger
        self.supportedRates = supportedRates
        prefetch = TagPrefetch(artwork: artwork)
        engine = try Engine(output: output, stuckLimit: stuckLimit, logger: logger)
        engine.onReport = { [weak self] report in self?.handle(report) }
        prefetch.uriToRead = { [weak self] id in
            guard let self, let index = queue.index(of: id), queue[index].needsRead else { return nil }
            return queue[index].uri
        }
        prefetch.finished = { [weak self] id, result, kind in
            self?.step { $0.backgroundRead(id, result, patient: kind == .patient) }
        }
    }

    /// The index of the selected entry in `entries`.
    public var currentIndex: Int? { selectedIndex }

    /// Whether Next would change the current entry (a queue of one on repeat-all restarts
    /// it instead, which is no change of track).
    public var canGoNext: Bool { selection.canMove(forward: true, in: queue) }
    /// Whether Previous could change the current entry (see ``canGoNext``).
    public var canGoPrevious: Bool { selection.canMove(forward: false, in: queue) }

    /// Playing, but the audio does not move (an output that takes none, a decoder that stopped):
    /// the position stands where the audio is, and clients are shown playback waiting.
    public var isWaitingForAudio: Bool { engine.isWaitingForAudio }

    /// The position, extrapolated from the pipeline's last report: zero when stopped. Reads
    /// never wait on GStreamer; while playing, one read a second asks the pipeline in the
    /// background, so that a drift (an output slower than real time) is corrected.
    public var position: Duration? { engine.position }

    /// The status the commands received so far lead to (`status` follows once the pipeline
    /// has settled in it).
    public var requestedStatus: Status { state.reading?.intent ?? transport.intent }

    /// The selected entry: the one playing, being loaded, or that Play would start.
    public var selectedEntry: Entry? { state.selected }

    /// Where in the selected entry the commands received so far lead: a seek still on its
    /// way, or the start of an entry being loaded, else the live position. Zero when stopped.
    public var requestedPosition: Duration {
        guard requestedStatus != .stopped, let entry = selectedEntry else { return .zero }
        if let read = state.reading { return read.position ?? .zero }
        guard transport.upcomingEntry == entry.id else { return .zero }
        if let pending = transport.pendingPosition { return pending }
        return position ?? .zero
    }

    /// Whether the commands received so far lead somewhere ``current`` and ``position`` do
    /// not show yet: another entry selected or being loaded, a seek or start position on its
    /// way, tags read before a load. ``selectedEntry`` and ``requestedPosition`` say where.
    public var isSettling: Bool {
        guard requestedStatus != .stopped else { return false }
        return state.reading != nil || selectedEntry?.id != current?.id || transport.upcomingEntry != current?.id
            || transport.pendingPosition != nil
    }

    // MARK: - Commands

    /// Starts or resumes playback. Returns false when there is nothing to play.
    @discardableResult
    public func play() -> Bool { run(.play) }

    /// Loads an entry paused, at `position` when given (the `--paused` start, a restored
    /// session). Without `index`, the selected entry. Returns false when there is none.
    @discardableResult
    public func preroll(index: Int? = nil, at position: Duration? = nil) -> Bool {
        run(.preroll(index: index, at: position))
    }

    /// Starts playing an entry at `position` (a restored session told to play).
    @discardableResult
    public func play(index: Int, at position: Duration?) -> Bool {
        run(.playEntry(index: index, at: position))
    }

    /// Pauses; nothing to do when not playing nor about to.
    public func pause() { run(.pause) }

    /// Pauses when playing or about to, else plays. Waiting for audio that does not move is
    /// shown as paused, so the toggle plays on (goes on waiting) then, as clients expect.
    public func togglePlayPause() { run(.togglePlayPause(waitingForAudio: isWaitingForAudio)) }

    /// Stops: nothing stays loaded, and the position goes back to zero.
    public func stop() { run(.stop) }

    /// Goes to the next entry in play order; nothing happens when there is none.
    public func next() { run(.next) }

    /// Restarts the current entry when more than 3 s in, else goes to the previous one.
    /// Both as the commands received so far leave it (a seek or a load may not have landed).
    public func previous() { run(.previous(position: requestedPosition)) }

    /// Makes the entry with `id` current, keeping the play/pause/stop state.
    @discardableResult
    public func goTo(id: UInt64) -> Bool { run(.goTo(id)) }

    /// Seeks within the selected entry. False when nothing is loaded to seek in.
    @discardableResult
    public func seek(to position: Duration) -> Bool { run(.seek(to: position)) }

    /// Sets the rate, clamped to `supportedRates`; NaN is ignored.
    public func setRate(_ newRate: Double) {
        guard !newRate.isNaN else { return }
        let clamped = min(max(newRate, supportedRates.lowerBound), supportedRates.upperBound)
        guard clamped != rate else { return }
        engine.setRate(clamped, from: requestedPosition)
    }

    /// Sets the volume on the cubic (perceptual) scale of desktop mixers, clamped to 0...1.
    public func setVolume(_ newVolume: Double) {
        let clamped = min(max(newVolume.isFinite ? newVolume : 1, 0), 1)
        guard clamped != volume else { return }
        engine.setVolume(clamped)
        onChange?(.volume)
    }

    /// Sets what follows the last entry, or the current one at its end.
    public func setRepeatMode(_ mode: RepeatMode) {
        step { $0.setRepeatMode(mode) }
    }

    /// Shuffle plays every entry once per cycle in a random order; turning it off goes on
    /// in queue order from the current entry.
    public func setShuffle(_ on: Bool) {
        step { $0.setShuffle(on) }
    }

    /// Queues `uris` after the current entry and plays the first of them.
    @discardableResult
    public func open(_ uris: [String]) -> Bool {
        open(uris.map { MediaItem(uri: $0) })
    }

    /// Queues `items` after the current entry and plays the first of them.
    @discardableResult
    public func open(_ items: [MediaItem]) -> Bool {
        guard !items.isEmpty else { return false }
        let added = enqueue(items, after: selectedIndex)
        guard let first = added.first else { return false }
        return run(.playAdded(first.id))
    }

    /// Stops the pipeline for good (before exit); `done` is called on the main actor once
    /// GStreamer has let go of it, so that the process does not exit under its threads.
    public func shutdown(done: (@MainActor @Sendable () -> Void)? = nil) {
        step { $0.shuttingDown() }
        engine.shutdown(done: done)
    }

    // MARK: - Play order

    /// The shuffle history, most recent last (for tests).
    var shuffleHistory: [UInt64] { selection.order.history }
    /// How far back Previous walks with Shuffle on.
    static var shuffleHistoryLimit: Int { PlayOrder.historyLimit }

    func firstIndex() -> Int? {
        state.selection.first(in: state.queue)
    }

    func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool = true) -> Int? {
        state.selection.neighbour(
            of: index, in: state.queue, forward: forward, automatic: automatic, allowRepeatOne: allowRepeatOne)
    }
}
