public import DBus
import Glibc
public import Logging

/// Publishes a `RemoteCommandCenter` and a `NowPlayingInfoCenter` as MPRIS 2.2
/// (`org.mpris.MediaPlayer2` and `org.mpris.MediaPlayer2.Player` at `/org/mpris/MediaPlayer2`).
///
/// - `Can*` flags are derived from the commands (target + enabled) and the info, and are
///   re-signalled whenever they flip.
/// - Every change made during one turn of the main queue goes out as one
///   `PropertiesChanged` per interface carrying every changed property; `Position` is never
///   in it. `Seeked` follows when the position jumped in a way the last published timing
///   does not predict.
/// - A method whose command is not active does nothing and replies success. One whose
///   command is active replies once every target has reported its status: at once, or
///   later for a target added with ``RemoteCommand/addTarget(deferredHandler:)``.
/// - With a `trackList` source, `org.mpris.MediaPlayer2.TrackList` is exported too: changes
///   of the window go out as `TrackRemoved`/`TrackAdded` when they are a few edits, else
///   as `TrackListReplaced`, each time with `Tracks` invalidated.
/// - With a `playlists` source, `org.mpris.MediaPlayer2.Playlists` is exported too.
@MainActor
public final class MPRISServer {
    /// The object path every MPRIS player is at.
    public static let objectPath = ObjectPath("/org/mpris/MediaPlayer2")!
    /// The root interface: identity, Raise, Quit.
    public static let rootInterface = "org.mpris.MediaPlayer2"
    /// The player interface: transport, metadata, position.
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// The track list interface, exported with a ``trackList`` source.
    public static let trackListInterface = "org.mpris.MediaPlayer2.TrackList"
    /// `GetTracksMetadata` answers at most this many ids per call (a client after more asks
    /// again): the reply stays far below D-Bus's message size limit.
    public static let maximumTracksPerCall = 10_000
    /// The longest URI `OpenUri` and `AddTrack` accept, in bytes: far beyond any real path
    /// or stream address, and a bound on what a client can make the player keep (the queue
    /// is saved to disk at every change).
    nonisolated public static let maximumURILength = 8 * 1024
    /// The playlists interface, exported with a ``playlists`` source.
    public static let playlistsInterface = "org.mpris.MediaPlayer2.Playlists"
    /// The track id that means "no track" (before the first item in `AddTrack`, or in
    /// `TrackListReplaced` when nothing is current).
    public static let noTrack = ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!

    /// The commands clients may send; their targets and enabled flags make the `Can*` flags.
    public let commandCenter: RemoteCommandCenter
    /// What is playing; its changes are published as they happen.
    public let infoCenter: NowPlayingInfoCenter
    /// How the player presents itself.
    public let configuration: Configuration
    /// The exported object at ``objectPath``, for a program that adds interfaces of its own.
    public let object: ExportedObject
    let logger: Logger

    /// Called by `Quit`; nil makes `CanQuit` false.
    public var quitHandler: (@MainActor () -> Void)? { didSet { setNeedsPublish() } }
    /// Called by `Raise`; nil makes `CanRaise` false.
    public var raiseHandler: (@MainActor () -> Void)? { didSet { setNeedsPublish() } }
    /// The queue to show as `org.mpris.MediaPlayer2.TrackList`; nil leaves it out
    /// (`HasTrackList` false).
    public weak var trackList: (any TrackListDataSource)? {
        didSet {
            publishedWindow = trackList?.trackListWindow() ?? []
            setNeedsPublish()
        }
    }
    /// The playlists to offer as `org.mpris.MediaPlayer2.Playlists`; nil leaves it out.
    public weak var playlists: (any PlaylistsDataSource)? { didSet { setNeedsPublish() } }

    /// The item and position that `Seek` and `SetPosition` act on: the info center's pending
    /// item while the player settles a change, else what is published.
    var commandTarget: (itemID: UInt64, duration: Duration?, position: Duration)? {
        if let pending = infoCenter.pendingItem {
            return (pending.queueItemID, pending.duration, pending.elapsedPlaybackTime)
        }
        guard let info = infoCenter.nowPlayingInfo else { return nil }
        return (info.queueItemID, info.duration, infoCenter.currentPosition)
    }

    // What clients last learnt and what is still to tell them: MPRISServer+Publishing.swift
    // keeps these.
    /// The window of the track list as clients last learnt it.
    var publishedWindow: [UInt64] = []
    var trackListReplaced = false
    var changedTrackMetadata: [UInt64] = []
    var renamedPlaylists: [MediaPlaylist] = []

    var published: [String: [String: Value]] = [:]
    var publishedTiming: Timing?
    /// A client's seek was accepted: its landing is announced with `Seeked` even when it is
    /// closer to the predicted position than `seekTolerance` (a seek to 0 from 0.05 s).
    var seekRequested = false
    var publishScheduled = false
    private var connection: Connection?
    /// The bus name owned since ``register(on:processID:instanceFallback:)``; nil before,
    /// and after ``unregister()``.
    public private(set) var busName: String?
    /// The ``optionalMembers`` the exported interfaces were made with.
    var exportedOptionalMembers: [Bool] = []

    /// A server for `commandCenter` and `infoCenter`, presented as `configuration` says;
    /// nothing is on the bus until ``register(on:processID:instanceFallback:)``.
    public init(
        commandCenter: RemoteCommandCenter, infoCenter: NowPlayingInfoCenter,
        configuration: Configuration, logger: Logger = Logger(label: "mpris")
    ) {
        self.commandCenter = commandCenter
        self.infoCenter = infoCenter
        self.configuration = configuration
        self.logger = logger
        self.object = ExportedObject(path: Self.objectPath, interfaces: [])
        object.replaceInterfaces(makeInterfaces())
        commandCenter.observe { [weak self] in self?.setNeedsPublish() }
        infoCenter.observe { [weak self] in self?.setNeedsPublish() }
        published = snapshot()
        publishedTiming = timing()
    }

    /// Exports the object, then asks for `org.mpris.MediaPlayer2.<playerName>`; when another
    /// process owns it, takes `org.mpris.MediaPlayer2.<playerName>.instance<PID>` instead, or
    /// returns nil when `instanceFallback` is false. Returns the name obtained.
    ///
    /// This form blocks the calling thread until the bus answers: call it before the main
    /// queue runs, as a small program does. A program whose main queue already runs (it plays,
    /// or answers other calls) uses
    /// ``register(on:processID:instanceFallback:answered:)``, which does not block it.
    @discardableResult
    public func register(
        on connection: Connection, processID: Int32 = MPRISServer.currentProcessID, instanceFallback: Bool = true
    ) throws(BusError) -> String? {
        let primary = appear(on: connection)
        switch try connection.requestName(primary) {
        case .primaryOwner, .alreadyOwner:
            busName = primary
        case .exists, .inQueue:
            guard instanceFallback else { return nil }
            let instance = instanceName(of: primary, processID: processID)
            busName = try Self.instanceOwned(try connection.requestName(instance), primary, instance)
        }
        return busName
    }

    /// Does what ``register(on:processID:instanceFallback:)`` does without blocking: the
    /// main queue goes on (answering calls, playing) until the bus answers, and `answered`
    /// is then called on the main actor with the name obtained (nil: another process owns
    /// it and `instanceFallback` is false). No task is made, so a program that must not
    /// wake while idle stays asleep.
    public func register(
        on connection: Connection, processID: Int32 = MPRISServer.currentProcessID, instanceFallback: Bool = true,
        answered: @escaping @MainActor (Result<String?, BusError>) -> Void
    ) {
        let primary = appear(on: connection)
        connection.requestName(primary) { [weak self] reply in
            guard let self else { return }
            switch reply {
            case .failure(let error):
                answered(.failure(error))
            case .success(.primaryOwner), .success(.alreadyOwner):
                busName = primary
                answered(.success(primary))
            case .success(.exists), .success(.inQueue):
                guard instanceFallback else { return answered(.success(nil)) }
                let instance = instanceName(of: primary, processID: processID)
                connection.requestName(instance) { [weak self] reply in
                    guard let self else { return }
                    let owned = reply.flatMap { reply -> Result<String?, BusError> in
                        do throws(BusError) {
                            return .success(try Self.instanceOwned(reply, primary, instance))
                        } catch {
                            return .failure(error)
                        }
                    }
                    if case .success(let name) = owned { busName = name }
                    answered(owned)
                }
            }
        }
    }

    /// Exports the object on `connection`, with what it publishes first; returns the name to
    /// ask for.
    private func appear(on connection: Connection) -> String {
        self.connection = connection
        // The state of a player that appears playing or paused, and its track list, are
        // announced once, whole, when the object appears: a client that watches for the name
        // hears what it starts with. Nothing else is: changes made while it was not on the bus
        // are no news to anyone, nor is a player that appears stopped.
        published = snapshot()
        if infoCenter.playbackState != .stopped { published[Self.playerInterface] = [:] }
        publishedTiming = timing()
        publishedWindow = []
        trackListReplaced = trackList != nil
        setNeedsPublish()
        connection.export(object)
        return "org.mpris.MediaPlayer2." + configuration.playerName
    }

    private func instanceName(of primary: String, processID: Int32) -> String {
        let instance = primary + ".instance\(processID)"
        logger.info("\(primary) is owned by another process; using \(instance)")
        return instance
    }

    private static func instanceOwned(
        _ reply: Connection.RequestNameReply, _ primary: String, _ instance: String
    ) throws(BusError) -> String {
        guard reply == .primaryOwner else { throw BusError(.failed, "could not own \(primary) or \(instance)") }
        return instance
    }

    /// This process's id: what ``register(on:processID:instanceFallback:)`` names an
    /// instance by unless told otherwise.
    nonisolated public static var currentProcessID: Int32 { getpid() }

    /// How long `unregister` waits for the bus to confirm the name is released.
    nonisolated public static let releaseTimeout: Duration = .milliseconds(500)

    /// Releases the bus name (the object stays exported until the connection closes),
    /// waiting at most `releaseTimeout` for the bus: a player quits whether or not the bus
    /// answers, and the name goes with its connection anyway.
    public func unregister() {
        if let busName { connection?.releaseName(busName, timeout: Self.releaseTimeout) }
        busName = nil
    }
}
