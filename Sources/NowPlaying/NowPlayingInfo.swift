/// What is playing, in the shape of Apple's now-playing info dictionary, typed.
///
/// Timing follows Apple: `elapsedPlaybackTime` and `playbackRate` (1.0 playing, 0.0 paused)
/// are set together at the moments that change them (play, pause, seek, rate and item
/// change), never on a timer; readers extrapolate `elapsed + (now - timestamp) * rate`.
public struct NowPlayingInfo: Sendable, Equatable {
    /// Identifies this entry of the play queue. A new id for every new entry, never reused,
    /// even when the same file is queued twice (it becomes `mpris:trackid`).
    public var queueItemID: UInt64
    /// The title (`xesam:title`).
    public var title: String?
    /// The performers (`xesam:artist`).
    public var artists: [String] = []
    /// The album's title (`xesam:album`).
    public var album: String?
    /// The album's performers (`xesam:albumArtist`).
    public var albumArtists: [String] = []
    /// The track's number on its disc (`xesam:trackNumber`).
    public var trackNumber: Int?
    /// The disc's number (`xesam:discNumber`).
    public var discNumber: Int?
    /// The genres (`xesam:genre`).
    public var genres: [String] = []
    /// The length (`mpris:length`); nil when unknown (a live stream). Without it the item
    /// cannot seek.
    public var duration: Duration?
    /// A `file://` URL of an image that exists.
    public var artworkURL: String?
    /// The URI of the media itself (`xesam:url`).
    public var assetURL: String?
    /// Whether the item is live (a radio stream): it has no end and cannot seek.
    public var isLiveStream = false

    /// Where playback was when `timestamp` was taken. Assigning it, even the same value,
    /// republishes the timing: a track that loops onto itself sets 0 again and is restamped.
    public var elapsedPlaybackTime: Duration = .zero { didSet { timingRevision &+= 1 } }
    /// 1.0 (or the chosen speed) while playing, 0.0 while paused, like Apple's.
    public var playbackRate: Double = 0 { didSet { timingRevision &+= 1 } }
    /// Counts assignments of the timing fields, so the center can tell "set again" from
    /// "copied unchanged" (an artwork update of a copy leaves it as it was).
    private(set) var timingRevision: UInt64 = 0
    /// The speed playback runs at when playing (MPRIS `Rate`), kept while paused.
    public var defaultPlaybackRate: Double = 1

    /// The info of the queue item `queueItemID`, with nothing else known yet.
    public init(queueItemID: UInt64) {
        self.queueItemID = queueItemID
    }
}

/// An item the player has switched to, or a position it has been asked to reach, that
/// ``NowPlayingInfoCenter/nowPlayingInfo`` does not show yet: a track still loading after
/// Next, a seek still landing.
public struct PendingItem: Sendable, Equatable {
    /// The queue item the player is moving to (or in).
    public var queueItemID: UInt64
    /// Its length, when known; without it the item cannot seek.
    public var duration: Duration?
    /// Where in it the player is headed.
    public var elapsedPlaybackTime: Duration

    /// A pending item: `queueItemID`, `duration` long, headed for `elapsedPlaybackTime`.
    public init(queueItemID: UInt64, duration: Duration?, elapsedPlaybackTime: Duration) {
        self.queueItemID = queueItemID
        self.duration = duration
        self.elapsedPlaybackTime = elapsedPlaybackTime
    }
}

/// The state Apple's macOS `MPNowPlayingInfoCenter.playbackState` describes, which MPRIS
/// publishes as `PlaybackStatus`.
public enum PlaybackState: String, Sendable {
    /// Playing (`Playing`; with a ``NowPlayingInfo/playbackRate`` of 0, `Paused`).
    case playing
    /// Paused where it was (`Paused`).
    case paused
    /// Stopped: the position is 0 (`Stopped`).
    case stopped
}

/// Holds what is playing and how, like Apple's `MPNowPlayingInfoCenter`.
///
/// Assign a whole `NowPlayingInfo` at each moment that matters; the center stamps it with
/// the time when `elapsedPlaybackTime` or `playbackRate` were assigned or the item changed
/// (and only then: updating the artwork of a copy of the current info leaves the timing be).
@MainActor
public final class NowPlayingInfoCenter {
    private var observers: [@MainActor () -> Void] = []
    private let clock: @MainActor @Sendable () -> ContinuousClock.Instant

    /// A center with nothing playing. `clock` tells the time the timing is stamped with
    /// (a test passes its own).
    public init(clock: @escaping @MainActor @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.clock = clock
        self.timestamp = clock()
    }

    /// What is current, and how far it has played; nil: nothing (MPRIS `Metadata` is then
    /// empty, and `PlaybackStatus` `Stopped`).
    public var nowPlayingInfo: NowPlayingInfo? {
        didSet {
            if nowPlayingInfo?.elapsedPlaybackTime != oldValue?.elapsedPlaybackTime
                || nowPlayingInfo?.playbackRate != oldValue?.playbackRate
                || nowPlayingInfo?.timingRevision != oldValue?.timingRevision
                || nowPlayingInfo?.queueItemID != oldValue?.queueItemID
            {
                timestamp = clock()
            }
            if nowPlayingInfo != oldValue { notify() }
        }
    }

    /// Whether a loaded item plays, is paused, or is stopped. With no item it reads `.stopped`.
    public var playbackState: PlaybackState {
        get { nowPlayingInfo == nil ? .stopped : storedState }
        set {
            guard newValue != storedState else { return }
            storedState = newValue
            timestamp = clock()
            notify()
        }
    }
    private var storedState = PlaybackState.stopped

    /// The output volume, 0...1, on the player's own (documented) scale.
    public var volume: Double = 1 { didSet { if volume != oldValue { notify() } } }

    /// Set while a change the player has accepted is not in ``nowPlayingInfo`` yet (a track
    /// loading after Next, a seek landing), so that a client's Seek and SetPosition that
    /// follow apply to it: a Seek moves from its position, and a SetPosition must name it.
    /// Leave it nil when changes show at once; set it back to nil once they do.
    ///
    /// What clients see still follows ``nowPlayingInfo``. Whether a command may run is
    /// still its ``RemoteCommand/isEnabled``: set those from the pending state too. While an
    /// item is pending, the `Can*` flags those make are held back, and reach clients with the
    /// info that settles it, in one signal.
    public var pendingItem: PendingItem?

    /// When the timing fields were last set.
    public private(set) var timestamp: ContinuousClock.Instant

    /// Optional live position source (the daemon asks its pipeline). When nil or when it
    /// returns nil, the position is extrapolated from the info.
    public var positionProvider: (@MainActor () -> Duration?)?

    /// The position now: from the provider, else extrapolated; zero when stopped.
    public var currentPosition: Duration {
        guard let info = nowPlayingInfo, playbackState != .stopped else { return .zero }
        if let live = positionProvider?() { return max(live, .zero) }
        return extrapolatedPosition(of: info, at: clock())
    }

    /// `elapsed + (now - timestamp) * rate` while playing; the elapsed time otherwise.
    public func extrapolatedPosition(of info: NowPlayingInfo, at instant: ContinuousClock.Instant) -> Duration {
        let rate = playbackState == .playing ? info.playbackRate : 0
        var position = info.elapsedPlaybackTime + (instant - timestamp) * rate
        if let duration = info.duration, position > duration { position = duration }
        return max(position, .zero)
    }

    /// Registers a closure called after any change.
    public func observe(_ observer: @escaping @MainActor () -> Void) {
        observers.append(observer)
    }

    private func notify() {
        for observer in observers { observer() }
    }
}
