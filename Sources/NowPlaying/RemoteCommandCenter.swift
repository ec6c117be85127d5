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

/// A token for a target added to a command; pass it to `removeTarget(_:)`.
public final class RemoteCommandTarget: Hashable, Sendable {
    public static func == (lhs: RemoteCommandTarget, rhs: RemoteCommandTarget) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// One remote command: a list of targets (handlers) and an enabled flag, like Apple's
/// `MPRemoteCommand`. A command is *active*, and its MPRIS `Can*` flag true, only when it
/// is enabled and has at least one target.
@MainActor
public final class RemoteCommand<Event: Sendable> {
    public typealias Handler = @MainActor (Event) -> RemoteCommandHandlerStatus

    /// A short name used in logs (`play`, `nextTrack`, ...).
    public let name: String
    private var targets: [(token: RemoteCommandTarget, handler: Handler)] = []
    private let didChange: @MainActor () -> Void

    init(name: String, didChange: @escaping @MainActor () -> Void) {
        self.name = name
        self.didChange = didChange
    }

    /// Whether the command may be used now. A disabled command is a no-op for clients.
    public var isEnabled = true {
        didSet { if isEnabled != oldValue { didChange() } }
    }

    /// Adds a handler; the command calls it until the returned token is removed.
    @discardableResult
    public func addTarget(handler: @escaping Handler) -> RemoteCommandTarget {
        let token = RemoteCommandTarget()
        let hadTargets = hasTargets
        targets.append((token, handler))
        if hasTargets != hadTargets { didChange() }
        return token
    }

    public func removeTarget(_ target: RemoteCommandTarget) {
        let hadTargets = hasTargets
        targets.removeAll { $0.token == target }
        if hasTargets != hadTargets { didChange() }
    }

    public func removeAllTargets() {
        let hadTargets = hasTargets
        targets.removeAll()
        if hasTargets != hadTargets { didChange() }
    }

    public var hasTargets: Bool { !targets.isEmpty }

    /// Enabled and handled: what the MPRIS `Can*` flags are made of.
    public var isActive: Bool { isEnabled && hasTargets }

    /// Runs every target in order and returns the first status that is not `.success`
    /// (or `.success`). Returns nil, doing nothing, when the command is not active.
    public func perform(_ event: Event) -> RemoteCommandHandlerStatus? {
        perform(event, enabled: isEnabled)
    }

    /// `perform`, with `enabled` deciding in place of `isEnabled` (which says what is
    /// published; a command may arrive before the state it follows is).
    func perform(_ event: Event, enabled: Bool) -> RemoteCommandHandlerStatus? {
        guard enabled && hasTargets else { return nil }
        var result = RemoteCommandHandlerStatus.success
        for (_, handler) in targets {
            let status = handler(event)
            if result == .success && status != .success { result = status }
        }
        return result
    }
}

/// The event of a command that carries nothing but its occurrence.
public struct RemoteCommandEvent: Sendable, Equatable {
    public init() {}
}

/// Jump to an absolute position in the current item (MPRIS `SetPosition`).
public struct ChangePlaybackPositionCommandEvent: Sendable, Equatable {
    public var positionTime: Duration
}

/// Move relative to the current position (MPRIS `Seek`). `position` is the resolved target,
/// clamped at zero and known to lie within the item; a target past the end becomes `nextTrack`.
public struct SeekCommandEvent: Sendable, Equatable {
    public var offset: Duration
    public var position: Duration
}

public struct ChangePlaybackRateCommandEvent: Sendable, Equatable {
    public var playbackRate: Double
}

public enum RepeatType: String, Sendable, CaseIterable {
    /// Stop at the end of the queue (MPRIS `None`).
    case off
    /// Repeat the current item (MPRIS `Track`).
    case one
    /// Wrap around the queue (MPRIS `Playlist`).
    case all
}

public struct ChangeRepeatModeCommandEvent: Sendable, Equatable {
    public var repeatType: RepeatType
}

public enum ShuffleType: String, Sendable, CaseIterable {
    case off, items
}

public struct ChangeShuffleModeCommandEvent: Sendable, Equatable {
    public var shuffleType: ShuffleType
}

/// Set the output volume: 0 is silent, 1 is full volume.
public struct ChangeVolumeCommandEvent: Sendable, Equatable {
    public var volume: Double
}

/// Open a URI (MPRIS `OpenUri`); its scheme is already known to be supported.
public struct OpenURICommandEvent: Sendable, Equatable {
    public var uri: String
}

/// Queue a URI after a queued item (nil: at the start), and make it current if asked
/// (MPRIS `AddTrack`); its scheme is already known to be supported.
public struct AddTrackCommandEvent: Sendable, Equatable {
    public var uri: String
    public var afterItemID: UInt64?
    public var setAsCurrent: Bool
}

/// Act on one queued item (MPRIS `RemoveTrack`, `GoTo`).
public struct TrackCommandEvent: Sendable, Equatable {
    public var itemID: UInt64
}

/// Start playing a playlist (MPRIS `ActivatePlaylist`).
public struct ActivatePlaylistCommandEvent: Sendable, Equatable {
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

    public private(set) lazy var playCommand = make("play", RemoteCommandEvent.self)
    public private(set) lazy var pauseCommand = make("pause", RemoteCommandEvent.self)
    public private(set) lazy var togglePlayPauseCommand = make("togglePlayPause", RemoteCommandEvent.self)
    public private(set) lazy var stopCommand = make("stop", RemoteCommandEvent.self)
    public private(set) lazy var nextTrackCommand = make("nextTrack", RemoteCommandEvent.self)
    public private(set) lazy var previousTrackCommand = make("previousTrack", RemoteCommandEvent.self)
    public private(set) lazy var changePlaybackPositionCommand = make("changePlaybackPosition", ChangePlaybackPositionCommandEvent.self)
    public private(set) lazy var seekCommand = make("seek", SeekCommandEvent.self)
    public private(set) lazy var changePlaybackRateCommand = make("changePlaybackRate", ChangePlaybackRateCommandEvent.self)
    public private(set) lazy var changeRepeatModeCommand = make("changeRepeatMode", ChangeRepeatModeCommandEvent.self)
    public private(set) lazy var changeShuffleModeCommand = make("changeShuffleMode", ChangeShuffleModeCommandEvent.self)
    public private(set) lazy var changeVolumeCommand = make("changeVolume", ChangeVolumeCommandEvent.self)
    public private(set) lazy var openURICommand = make("openURI", OpenURICommandEvent.self)
    public private(set) lazy var addTrackCommand = make("addTrack", AddTrackCommandEvent.self)
    public private(set) lazy var removeTrackCommand = make("removeTrack", TrackCommandEvent.self)
    public private(set) lazy var goToTrackCommand = make("goToTrack", TrackCommandEvent.self)
    public private(set) lazy var activatePlaylistCommand = make("activatePlaylist", ActivatePlaylistCommandEvent.self)

    /// The repeat mode shown to clients (Apple keeps it on `MPChangeRepeatModeCommand`).
    public var currentRepeatType: RepeatType = .off { didSet { if currentRepeatType != oldValue { notify() } } }
    /// The shuffle mode shown to clients.
    public var currentShuffleType: ShuffleType = .off { didSet { if currentShuffleType != oldValue { notify() } } }
    /// The speeds `changePlaybackRateCommand` accepts (MPRIS `MinimumRate`/`MaximumRate`).
    public var supportedPlaybackRates: ClosedRange<Double> = 1.0...1.0 { didSet { if supportedPlaybackRates != oldValue { notify() } } }

    public init() {}

    /// Registers a closure called after any command changes its targets or enabled flag.
    public func observe(_ observer: @escaping @MainActor () -> Void) {
        observers.append(observer)
    }

    /// Removes every target of every command, so no handler outlives its owner.
    public func removeAllTargets() {
        playCommand.removeAllTargets(); pauseCommand.removeAllTargets(); togglePlayPauseCommand.removeAllTargets()
        stopCommand.removeAllTargets(); nextTrackCommand.removeAllTargets(); previousTrackCommand.removeAllTargets()
        changePlaybackPositionCommand.removeAllTargets(); seekCommand.removeAllTargets()
        changePlaybackRateCommand.removeAllTargets(); changeRepeatModeCommand.removeAllTargets()
        changeShuffleModeCommand.removeAllTargets(); changeVolumeCommand.removeAllTargets()
        openURICommand.removeAllTargets(); addTrackCommand.removeAllTargets(); removeTrackCommand.removeAllTargets()
        goToTrackCommand.removeAllTargets(); activatePlaylistCommand.removeAllTargets()
    }

    private func make<E: Sendable>(_ name: String, _: E.Type) -> RemoteCommand<E> {
        RemoteCommand<E>(name: name) { [weak self] in self?.notify() }
    }

    private func notify() {
        for observer in observers { observer() }
    }
}
