import Dispatch

/// What a command handler reports, like Apple's `MPRemoteCommandHandlerStatus`.
public enum RemoteCommandHandlerStatus: Sendable, Equatable {
    /// The command was carried out (or started; its outcome is published through the info center).
    case success
    /// The content the command refers to does not exist (an unknown track, a missing file).
    case noSuchContent
    /// There is nothing playing that the command could act on.
    case noActionableNowPlayingItem
    /// The command could not be carried out; `reason` is shown to the client.
    case commandFailed(reason: String)
}

/// A token for a target added to a command; pass it to ``RemoteCommand/removeTarget(_:)``.
public final class RemoteCommandTarget: Hashable, Sendable {
    /// Tokens are equal only to themselves.
    public static func == (lhs: RemoteCommandTarget, rhs: RemoteCommandTarget) -> Bool { lhs === rhs }
    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// One remote command: a list of targets (handlers) and an enabled flag, like Apple's
/// `MPRemoteCommand`. A command is *active*, and its MPRIS `Can*` flag true, only when it
/// is enabled and has at least one target.
///
/// Only the library subclasses it: ``SkipIntervalCommand`` adds what Apple's
/// `MPSkipIntervalCommand` adds.
@MainActor
public class RemoteCommand<Event: Sendable> {
    /// A target: called on the main actor with the command's event while a client's call
    /// waits for its reply, so it returns at once (start long work, and publish its outcome
    /// through the info center).
    public typealias Handler = @MainActor (Event) -> RemoteCommandHandlerStatus

    /// A target that reports its status later: called on the main actor with the command's
    /// event and a `completion` to call, on the main actor, with the status once it is known
    /// (after reading a file on another queue, say). The client's call waits for it, while
    /// the main queue goes on. Only the first status counts: later calls of `completion` are
    /// ignored. A `completion` released without being called reports
    /// ``RemoteCommandHandlerStatus/commandFailed(reason:)`` on the next turn of the main
    /// queue, so a client never waits for a status that cannot come.
    public typealias DeferredHandler =
        @MainActor (Event, _ completion: @escaping @MainActor (RemoteCommandHandlerStatus) -> Void) -> Void

    /// A short name used in logs (`play`, `nextTrack`, ...).
    public let name: String
    private var targets: [(token: RemoteCommandTarget, handler: DeferredHandler)] = []
    private let didChange: @MainActor () -> Void

    init(name: String, didChange: @escaping @MainActor () -> Void) {
        self.name = name
        self.didChange = didChange
    }

    /// Whether the command may be used now: set it from what the command would really do
    /// (``RemoteCommandCenter/nextTrackCommand`` disabled on the last item). A disabled
    /// command's MPRIS `Can*` flag is false, and a client's call of it does nothing.
    public var isEnabled = true {
        didSet { if isEnabled != oldValue { didChange() } }
    }

    /// Adds a handler; the command calls it until the returned token is removed.
    @discardableResult
    public func addTarget(handler: @escaping Handler) -> RemoteCommandTarget {
        addTarget(deferredHandler: { event, completion in completion(handler(event)) })
    }

    /// Adds a handler that reports its status later, through the completion it is given;
    /// the command calls it until the returned token is removed.
    ///
    /// ```swift
    /// center.openURICommand.addTarget { event, completion in
    ///     library.find(event.uri) { item in  // calls back on the main actor
    ///         guard let item else { return completion(.noSuchContent) }
    ///         player.play(item)
    ///         completion(.success)
    ///     }
    /// }
    /// ```
    ///
    /// The client's call is answered once every target has reported. A property a client
    /// sets (MPRIS `Volume`, `Rate`, `LoopStatus`, `Shuffle`) is answered at once instead,
    /// with a status reported before the handler returns; a later failure is only logged.
    @discardableResult
    public func addTarget(deferredHandler handler: @escaping DeferredHandler) -> RemoteCommandTarget {
        let token = RemoteCommandTarget()
        let hadTargets = hasTargets
        targets.append((token, handler))
        if hasTargets != hadTargets { didChange() }
        return token
    }

    /// Removes the target `target` stands for; the command stops calling it.
    public func removeTarget(_ target: RemoteCommandTarget) {
        let hadTargets = hasTargets
        targets.removeAll { $0.token == target }
        if hasTargets != hadTargets { didChange() }
    }

    /// Removes every target of this command.
    public func removeAllTargets() {
        let hadTargets = hasTargets
        targets.removeAll()
        if hasTargets != hadTargets { didChange() }
    }

    /// Whether at least one target is added.
    public var hasTargets: Bool { !targets.isEmpty }

    /// Enabled and handled: what the MPRIS `Can*` flags are made of.
    public var isActive: Bool { isEnabled && hasTargets }

    /// Runs every target in order and calls `completion` once all have reported, with the
    /// first status (in target order) that is not `.success`, or `.success`: before this
    /// returns when every target reports at once. Returns false, doing nothing, when the
    /// command is not active.
    func perform(_ event: Event, completion: @escaping @MainActor (RemoteCommandHandlerStatus) -> Void) -> Bool {
        guard isActive else { return false }
        let statuses = StatusGathering(count: targets.count, completion: completion)
        for (index, (_, handler)) in targets.enumerated() {
            handler(event) { statuses.report($0, at: index) }
        }
        return true
    }

    /// The command's events as an asynchronous sequence, for a program written with
    /// async/await: iterating it is a target like one added with ``addTarget(handler:)``
    /// (the command is active while the sequence is alive), and each event is answered
    /// `.success` at once, before the loop body runs.
    ///
    /// ```swift
    /// for await _ in center.playCommand.events() {
    ///     await player.play()
    /// }
    /// ```
    ///
    /// The target is removed when the iterating task ends or is cancelled. Events that
    /// come faster than the loop takes them are kept up to `limit`, the oldest dropped first.
    public func events(keepingNewest limit: Int = 16) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(limit))
        let target = addTarget { event in
            continuation.yield(event)
            return .success
        }
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.removeTarget(target) }
        }
        return stream
    }
}

/// The statuses of one command's targets, as they report: the first that is not
/// `.success` (in target order) once all have, or `.success`.
@MainActor
final class StatusGathering {
    private var statuses: [RemoteCommandHandlerStatus?]
    private var left: Int
    private var completion: (@MainActor (RemoteCommandHandlerStatus) -> Void)?

    init(count: Int, completion: @escaping @MainActor (RemoteCommandHandlerStatus) -> Void) {
        statuses = Array(repeating: nil, count: count)
        left = count
        self.completion = completion
    }

    // A target that dropped its completion unanswered fails the command, so the call that
    // waits for it is answered: on the main queue, as the last reference may go on any.
    deinit {
        guard let completion else { return }
        DispatchQueue.main.async {
            MainActor.assumeIsolated { completion(.commandFailed(reason: "a handler never reported its status")) }
        }
    }

    /// Target `index` reports `status`; a second report of the same target is ignored.
    func report(_ status: RemoteCommandHandlerStatus, at index: Int) {
        guard completion != nil, statuses[index] == nil else { return }
        statuses[index] = status
        left -= 1
        guard left == 0, let completion else { return }
        self.completion = nil
        completion(statuses.lazy.compactMap { $0 }.first { $0 != .success } ?? .success)
    }
}

/// The event of a command that carries nothing but its occurrence.
public struct RemoteCommandEvent: Sendable, Equatable {
    /// An event.
    public init() {}
}

/// Jump to an absolute position in the current item (MPRIS `SetPosition`).
public struct ChangePlaybackPositionCommandEvent: Sendable, Equatable {
    /// Where to go, from the start of the item: within it, never negative.
    public var positionTime: Duration
}

/// Move relative to the current position (MPRIS `Seek`). `position` is the resolved target,
/// clamped at zero and known to lie within the item; a target past the end becomes `nextTrack`.
public struct SeekCommandEvent: Sendable, Equatable {
    /// How far the client asked to move (negative: back).
    public var offset: Duration
    /// Where that leads: the current position plus `offset`, at least zero.
    public var position: Duration
}

/// Skip a step forward or back (MPRIS `Seek` with a positive or a negative offset), like
/// Apple's `MPSkipIntervalCommandEvent`.
public struct SkipIntervalCommandEvent: Sendable, Equatable {
    /// How far to skip, in seconds (a `TimeInterval`, as Apple's `interval`): the size of the
    /// client's step, never negative. The command says which way:
    /// ``RemoteCommandCenter/skipForwardCommand`` goes ahead by it,
    /// ``RemoteCommandCenter/skipBackwardCommand`` back by it. Clients choose their own
    /// steps (GNOME's media keys 45 s ahead and 10 s back, Plasma's shortcuts 30 s and 5 s),
    /// whatever ``SkipIntervalCommand/preferredIntervals`` says.
    public var interval: Double

    /// An event that skips `interval` seconds.
    public init(interval: Double) {
        self.interval = interval
    }
}

/// A command that skips by a step, like Apple's `MPSkipIntervalCommand`:
/// ``RemoteCommandCenter/skipForwardCommand`` and ``RemoteCommandCenter/skipBackwardCommand``.
public final class SkipIntervalCommand: RemoteCommand<SkipIntervalCommandEvent> {
    /// The steps, in seconds, your player would offer, as Apple's `preferredIntervals`.
    /// Kept so that code written for Apple's API builds unchanged, but never published:
    /// MPRIS has no way to tell clients a step, so each client sends its own and the
    /// event's ``SkipIntervalCommandEvent/interval`` is the client's. 15 s unless set.
    public var preferredIntervals: [Double] = [15]
}

/// Play at another speed (MPRIS `Rate`); within ``RemoteCommandCenter/supportedPlaybackRates``.
public struct ChangePlaybackRateCommandEvent: Sendable, Equatable {
    /// The speed asked for: 1 is normal, 2 twice as fast.
    public var playbackRate: Double
}

/// What happens at the end of an item or of the queue (MPRIS `LoopStatus`).
public enum RepeatType: String, Sendable, CaseIterable {
    /// Stop at the end of the queue (MPRIS `None`).
    case off
    /// Repeat the current item (MPRIS `Track`).
    case one
    /// Wrap around the queue (MPRIS `Playlist`).
    case all
}

/// Change the repeat mode (a client set MPRIS `LoopStatus`).
public struct ChangeRepeatModeCommandEvent: Sendable, Equatable {
    /// The mode asked for.
    public var repeatType: RepeatType
}

/// Whether the queue plays in order (MPRIS `Shuffle`).
public enum ShuffleType: String, Sendable, CaseIterable {
    /// In queue order (`Shuffle` false).
    case off
    /// In a random order of the items (`Shuffle` true).
    case items
}

/// Change the shuffle mode (a client set MPRIS `Shuffle`).
public struct ChangeShuffleModeCommandEvent: Sendable, Equatable {
    /// The mode asked for.
    public var shuffleType: ShuffleType
}

/// Set the output volume: 0 is silent, 1 is full volume.
public struct ChangeVolumeCommandEvent: Sendable, Equatable {
    /// The volume asked for, already clamped to 0...1.
    public var volume: Double
}

/// Open a URI (MPRIS `OpenUri`); its scheme is already known to be supported.
public struct OpenURICommandEvent: Sendable, Equatable {
    /// The URI, at most `MPRISServer.maximumURILength` bytes long.
    public var uri: String
}

/// Queue a URI after a queued item (nil: at the start), and make it current if asked
/// (MPRIS `AddTrack`); its scheme is already known to be supported.
public struct AddTrackCommandEvent: Sendable, Equatable {
    /// The URI to queue.
    public var uri: String
    /// The queue item it goes after; nil: first.
    public var afterItemID: UInt64?
    /// Whether it becomes the current item once added.
    public var setAsCurrent: Bool
}

/// Act on one queued item (MPRIS `RemoveTrack`, `GoTo`).
public struct TrackCommandEvent: Sendable, Equatable {
    /// The ``NowPlayingInfo/queueItemID`` of the item.
    public var itemID: UInt64
}

/// Start playing a playlist (MPRIS `ActivatePlaylist`).
public struct ActivatePlaylistCommandEvent: Sendable, Equatable {
    /// The ``MediaPlaylist/id`` of the playlist.
    public var playlistID: UInt64
}

/// The commands a player offers to remote controllers, like Apple's `MPRemoteCommandCenter`.
///
/// ```swift
/// let center = RemoteCommandCenter()
/// center.playCommand.addTarget { _ in player.play(); return .success }
/// center.nextTrackCommand.isEnabled = queue.hasNext
/// ```
@MainActor
public final class RemoteCommandCenter {
    private var observers: [@MainActor () -> Void] = []

    /// Start or resume playback (MPRIS `Play`, and `PlayPause` while not playing; `CanPlay`).
    public private(set) lazy var playCommand = make("play", RemoteCommandEvent.self)
    /// Pause (MPRIS `Pause`, and `PlayPause` while playing; `CanPause`).
    public private(set) lazy var pauseCommand = make("pause", RemoteCommandEvent.self)
    /// Toggle between playing and paused (MPRIS `PlayPause`). Without a target, `PlayPause`
    /// uses ``playCommand`` or ``pauseCommand``.
    public private(set) lazy var togglePlayPauseCommand = make("togglePlayPause", RemoteCommandEvent.self)
    /// Stop, forgetting the position (MPRIS `Stop`).
    public private(set) lazy var stopCommand = make("stop", RemoteCommandEvent.self)
    /// Go to the next item (MPRIS `Next`; `CanGoNext`). Disable it on the last item.
    public private(set) lazy var nextTrackCommand = make("nextTrack", RemoteCommandEvent.self)
    /// Go to the previous item (MPRIS `Previous`; `CanGoPrevious`).
    public private(set) lazy var previousTrackCommand = make("previousTrack", RemoteCommandEvent.self)
    /// Go to a position in the current item (MPRIS `SetPosition`, and `Seek` when neither
    /// ``seekCommand`` nor the skip command of the seek's direction is active; `CanSeek`).
    public private(set) lazy var changePlaybackPositionCommand = make(
        "changePlaybackPosition", ChangePlaybackPositionCommandEvent.self)
    /// Move relative to the position (MPRIS `Seek`, and `SetPosition` when
    /// ``changePlaybackPositionCommand`` is not active; `CanSeek`). While it is active, every
    /// `Seek` comes here, and the skip commands get none.
    public private(set) lazy var seekCommand = make("seek", SeekCommandEvent.self)
    /// Skip ahead by the client's step, like Apple's `skipForwardCommand`: MPRIS `Seek` with a
    /// positive offset, when ``seekCommand`` is not active (`CanSeek`).
    public private(set) lazy var skipForwardCommand = makeSkip("skipForward")
    /// Skip back by the client's step, like Apple's `skipBackwardCommand`: MPRIS `Seek` with a
    /// negative offset, when ``seekCommand`` is not active (`CanSeek`).
    public private(set) lazy var skipBackwardCommand = makeSkip("skipBackward")
    /// Play at another speed (MPRIS `Rate`), within ``supportedPlaybackRates``.
    public private(set) lazy var changePlaybackRateCommand = make(
        "changePlaybackRate", ChangePlaybackRateCommandEvent.self)
    /// Change the repeat mode (MPRIS `LoopStatus`; without a target the property is not offered).
    public private(set) lazy var changeRepeatModeCommand = make("changeRepeatMode", ChangeRepeatModeCommandEvent.self)
    /// Change the shuffle mode (MPRIS `Shuffle`; without a target the property is not offered).
    public private(set) lazy var changeShuffleModeCommand = make(
        "changeShuffleMode", ChangeShuffleModeCommandEvent.self)
    /// Change the volume (MPRIS `Volume`; without a target, a client's change does nothing).
    public private(set) lazy var changeVolumeCommand = make("changeVolume", ChangeVolumeCommandEvent.self)
    /// Open and play a URI (MPRIS `OpenUri`).
    public private(set) lazy var openURICommand = make("openURI", OpenURICommandEvent.self)
    /// Queue a URI (MPRIS `TrackList.AddTrack`; `CanEditTracks` with ``removeTrackCommand``).
    public private(set) lazy var addTrackCommand = make("addTrack", AddTrackCommandEvent.self)
    /// Remove a queued item (MPRIS `TrackList.RemoveTrack`).
    public private(set) lazy var removeTrackCommand = make("removeTrack", TrackCommandEvent.self)
    /// Make a queued item current (MPRIS `TrackList.GoTo`).
    public private(set) lazy var goToTrackCommand = make("goToTrack", TrackCommandEvent.self)
    /// Play a playlist (MPRIS `Playlists.ActivatePlaylist`).
    public private(set) lazy var activatePlaylistCommand = make("activatePlaylist", ActivatePlaylistCommandEvent.self)

    /// The repeat mode shown to clients (Apple keeps it on `MPChangeRepeatModeCommand`).
    public var currentRepeatType: RepeatType = .off { didSet { if currentRepeatType != oldValue { notify() } } }
    /// The shuffle mode shown to clients.
    public var currentShuffleType: ShuffleType = .off { didSet { if currentShuffleType != oldValue { notify() } } }
    /// The speeds `changePlaybackRateCommand` accepts (MPRIS `MinimumRate`/`MaximumRate`).
    public var supportedPlaybackRates: ClosedRange<Double> = 1.0...1.0 {
        didSet { if supportedPlaybackRates != oldValue { notify() } }
    }

    /// A center with every command enabled and none handled: add targets to those your
    /// program supports.
    public init() {}

    /// Registers a closure called after any command changes its targets or enabled flag.
    public func observe(_ observer: @escaping @MainActor () -> Void) {
        observers.append(observer)
    }

    /// Removes every target of every command, so no handler outlives its owner.
    public func removeAllTargets() {
        playCommand.removeAllTargets()
        pauseCommand.removeAllTargets()
        togglePlayPauseCommand.removeAllTargets()
        stopCommand.removeAllTargets()
        nextTrackCommand.removeAllTargets()
        previousTrackCommand.removeAllTargets()
        changePlaybackPositionCommand.removeAllTargets()
        seekCommand.removeAllTargets()
        skipForwardCommand.removeAllTargets()
        skipBackwardCommand.removeAllTargets()
        changePlaybackRateCommand.removeAllTargets()
        changeRepeatModeCommand.removeAllTargets()
        changeShuffleModeCommand.removeAllTargets()
        changeVolumeCommand.removeAllTargets()
        openURICommand.removeAllTargets()
        addTrackCommand.removeAllTargets()
        removeTrackCommand.removeAllTargets()
        goToTrackCommand.removeAllTargets()
        activatePlaylistCommand.removeAllTargets()
    }

    private func make<E: Sendable>(_ name: String, _: E.Type) -> RemoteCommand<E> {
        RemoteCommand<E>(name: name) { [weak self] in self?.notify() }
    }

    private func makeSkip(_ name: String) -> SkipIntervalCommand {
        SkipIntervalCommand(name: name) { [weak self] in self?.notify() }
    }

    /// Whether any command that moves within the item is active: what `CanSeek` needs
    /// besides a seekable item.
    var canMoveWithinItem: Bool {
        changePlaybackPositionCommand.isActive || seekCommand.isActive || skipForwardCommand.isActive
            || skipBackwardCommand.isActive
    }

    private func notify() {
        for observer in observers { observer() }
    }
}
