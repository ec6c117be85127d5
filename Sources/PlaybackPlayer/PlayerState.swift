import Logging
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// The player's own state as one value, and the pure steps that edit its queue.
///
/// It holds the queue, the selection over it, the entry clients are shown and a load that
/// waits for the selected entry's tags. Each step is named after what happened and returns
/// the ``Action``s the ``Player`` carries out, in order; what a step needs of the engine
/// travels in as a value, so a test drives it without GStreamer.
///
/// "The track" has three names in the player, each changed in one place:
/// - the **selected** entry (``selectedID``): where the commands received so far lead, the
///   entry playing, being loaded or read, or that Play would start. It moves through
///   ``selection``;
/// - the **shown** entry (``shown``): what clients are told is current (MPRIS Metadata), a
///   copy of the queued entry as they were last shown it. Only ``show(_:)`` assigns it, and
///   it is always a queued entry or nil;
/// - the **loaded** entry is the engine's (`Transport.loadedEntry`): the one whose stream is
///   in the pipeline.
///
/// A load that waits for tags (``reading``) is always the selected entry's: it names no
/// entry of its own, and any move of the selection abandons it.
struct PlayerState {
    /// A load of the selected entry that waits for its tags: read first, so that clients
    /// see one Metadata for a file, and a broken file is skipped before it reaches the
    /// pipeline.
    struct Reading: Equatable {
        /// Where the load starts (nil: at the beginning).
        var position: Duration?
        /// Where the load heads.
        var intent: PlaybackStatus
        /// Tells the read this load waits for from an earlier one.
        var generation: Int
    }

    /// What the player carries out after a step, in order.
    enum Action: Equatable {
        /// Loads the selected entry toward `intent` (paused or playing), at `position`; a
        /// local file's tags are read first (see ``loadSelected(at:intent:)``).
        case load(at: Duration?, intent: PlaybackStatus)
        /// Reads the tags of the entry `id` (at `uri`) that a load waits for; its end is
        /// ``readBeforeLoadEnded(_:generation:_:_:)`` with `generation`.
        case readBeforeLoad(UInt64, uri: String, generation: Int)
        /// Hands the entry `id` to the engine, to load at `position` toward `intent`.
        case startLoad(UInt64, at: Duration?, intent: PlaybackStatus)
        /// Reads the tags of the entry `id` again in the background, with time to spare.
        case readAgain(UInt64, uri: String)
        /// Plays, as the Play command does.
        case play
        /// Resumes the entry the engine holds or is loading.
        case resume
        /// Pauses the engine.
        case pause
        /// Pauses for the sound server's interruption (not a listener's command: its end
        /// may resume).
        case pauseForInterruption
        /// Stops the engine: nothing stays loaded.
        case stop
        /// Seeks within the entry the engine holds or is loading.
        case seek(to: Duration)
        /// The command had nothing to act on: its caller hears so (MPRIS answers with an
        /// error, or does nothing where the specification says so).
        case refused
        /// Reads the selected entry's tags when they are not known, so that a stopped player
        /// shows what Play would start (or moves past what cannot play).
        case readSelected
        /// What follows the selected entry may have changed: the engine is told again.
        case nextMayHaveChanged
        /// Tells the engine what follows the selected entry (see ``handOverPlan(_:)``).
        case prepareNext
        /// Loads the selected entry again where the commands lead, so that a new next entry
        /// applies at its end.
        case reloadSelected
        /// A track whose picture was over the limit was read or left: the memory its parsing
        /// took goes back to the system.
        case trimHeap
        /// One log line.
        case log(Logger.Level, String)
        /// The entry left the queue: the engine forgets it.
        case forget(UInt64)
        /// Tells the observer.
        case announce(PlaybackChange)
    }

    /// The queue in order.
    var queue = PlayQueue()
    /// Which entry is selected, and the play order from it.
    var selection = Selection()
    /// The entry clients are shown (nil: none), as they were last shown it.
    private(set) var shown: QueueEntry?
    /// A load of the selected entry waiting for its tags.
    private(set) var reading: Reading?
    private var readGeneration = 0
    /// Playback stopped because the queue ran out (the end, or nothing playable left), not
    /// because someone stopped it: tracks queued now may go on from there.
    var ranOut = false
    /// Failures in a row: once every entry has failed, playback stops.
    var consecutiveFailures = 0
    /// Whether the end of the sound server's interruption resumes playback.
    var interruption = Interruption()

    /// The index of the selected entry.
    var selectedIndex: Int? { selection.index }
    /// The selected entry's id.
    var selectedID: UInt64? { selection.index.map { queue[$0].id } }
    /// The selected entry.
    var selected: QueueEntry? { selection.index.map { queue[$0] } }
    /// The selected entry, unless it was found unplayable: what a stopped player shows.
    var selectedPlayable: QueueEntry? { selected.flatMap { $0.failure == nil ? $0 : nil } }

    // MARK: - The shown entry and the read before a load

    /// Shows `entry` to clients (nil: none): the one place ``shown`` is assigned. An entry
    /// no longer queued is never shown.
    mutating func show(_ entry: QueueEntry?) {
        shown = entry.flatMap { queue.contains($0.id) ? $0 : nil }
    }

    /// The queued entry with `id` changed: shows it anew when it is the shown one. True when
    /// it is.
    mutating func showAgainIfShown(_ id: UInt64) -> Bool {
        guard shown?.id == id, let index = queue.index(of: id) else { return false }
        shown = queue[index]
        return true
    }

    /// The selected entry waits for its tags before it loads at `position` toward `intent`:
    /// returns the read's generation, which ``reading(generation:)`` checks when it ends.
    mutating func startReading(at position: Duration?, intent: PlaybackStatus) -> Int {
        readGeneration += 1
        reading = Reading(position: position, intent: intent, generation: readGeneration)
        return readGeneration
    }

    /// No load waits for tags any more (another load, a stop, a move of the selection).
    mutating func abandonReading() {
        readGeneration += 1
        reading = nil
    }

    /// The read with `generation` ended: the load that waited for it, taken out, when it is
    /// still the one waiting (nil: another load came since).
    mutating func finishReading(generation: Int) -> Reading? {
        guard let reading, reading.generation == generation else { return nil }
        self.reading = nil
        return reading
    }

    /// Whether a load of the entry `id` waits for its tags.
    func isReading(_ id: UInt64) -> Bool { reading != nil && selectedID == id }

    /// Pause came while a load waits for tags: it loads paused.
    mutating func readingPaused() {
        if reading?.intent == .playing { reading?.intent = .paused }
    }

    /// Play came while a load waits for tags: it loads playing.
    mutating func readingPlays() {
        reading?.intent = .playing
    }

    /// A seek came while a load waits for tags: it loads there.
    mutating func readingSeeks(to position: Duration) {
        reading?.position = position
    }

    // MARK: - Options

    /// The listener chose the repeat mode `mode`: what follows the selected entry may change.
    mutating func setRepeatMode(_ mode: Player.RepeatMode) -> [Action] {
        guard mode != selection.order.repeatMode else { return [] }
        selection.setRepeatMode(mode)
        return [.nextMayHaveChanged, .announce(.options)]
    }

    /// The listener turned shuffle on or off: what follows the selected entry may change.
    mutating func setShuffle(_ on: Bool) -> [Action] {
        guard on != selection.order.shuffle else { return [] }
        selection.setShuffle(on, in: queue)
        return [.nextMayHaveChanged, .announce(.options)]
    }

    /// The player shuts down: a read that ends after this loads nothing.
    mutating func shuttingDown() -> [Action] {
        abandonReading()
        return []
    }

    // MARK: - Editing the queue

    /// Queues `items` before `position` and returns their entries; `announce`: the observer
    /// hears of the new queue.
    mutating func insert(_ items: [MediaItem], at position: Int, announce: Bool = true)
        -> (added: [QueueEntry], actions: [Action])
    {
        guard !items.isEmpty else { return ([], []) }
        let new = selection.makeEntries(items)
        queue.insert(new, at: position)
        var actions: [Action] = []
        if selection.inserted(new, at: position, in: queue) {
            // A local file is shown once its tags are read, so that clients see one Metadata
            // for it, not a file name followed by the real title.
            if let selected, !selected.needsRead { show(selected) }
            actions.append(.readSelected)
        }
        actions.append(.nextMayHaveChanged)
        if announce { actions.append(.announce(.queue)) }
        return (new, actions)
    }

    /// Removes the entry `id`. Removing the selected one moves on as Next would (toward
    /// `requested`, where the commands received so far lead), or stops when nothing follows.
    /// The shown entry never outlives its place in the queue: once it is gone, the selected
    /// one is shown. Nil when no entry has that id.
    mutating func remove(id: UInt64, requested: PlaybackStatus) -> [Action]? {
        guard let index = queue.index(of: id) else { return nil }
        guard index == selection.index else {
            queue.remove(at: index)
            selection.removed(at: index)
            if shown?.id == id { show(selectedPlayable) }
            return [.forget(id), .nextMayHaveChanged, .announce(.queue)]
        }
        let followerID = selection.neighbour(of: index, in: queue, forward: true, automatic: false).map {
            queue[$0].id
        }
        queue.remove(at: index)
        userActed()
        let actions: [Action] = [.forget(id), .announce(.queue)]
        if let followerID, followerID != id, let follower = queue.index(of: followerID) {
            selection.recordMove(from: id, to: followerID, forward: true)
            selection.move(from: nil, to: follower, in: queue, forward: true)
            guard requested != .stopped else {
                abandonReading()
                show(queue[follower])
                return actions + [.readSelected, .announce(.transport)]
            }
            // Until the follower settles (or while its tags are read) it is shown in the
            // removed entry's place.
            show(queue[follower])
            return actions + [.load(at: nil, intent: requested)]
        }
        abandonReading()
        selection.index = queue.isEmpty ? nil : min(index, queue.count - 1)
        // What Play would start is shown at once when its tags are known; else once read.
        if let selected = selectedPlayable, !selected.needsRead { show(selected) } else { show(nil) }
        return actions + [.stop, .readSelected]
    }

    /// Replaces the whole queue with `items` (a playlist activated), and plays it from the
    /// start when `play` is true. The first entry is shown at once, as Play would start it,
    /// while its tags are read: clients hear of the new list and of its current entry together.
    mutating func replace(with items: [MediaItem], play: Bool) -> [Action] {
        abandonReading()
        queue.removeAll()
        selection.reset()
        show(nil)
        userActed()
        var actions: [Action] = [.stop]
        let (added, inserted) = insert(items, at: 0, announce: false)
        actions += inserted
        show(selectedPlayable)
        if !added.isEmpty { actions.append(.announce(.queue)) }
        actions.append(.announce(.transport))
        if play { actions.append(.play) }
        return actions
    }
}
