public import DBus
import Dispatch
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
/// - A method whose command is not active does nothing and replies success.
/// - With a `trackList` source, `org.mpris.MediaPlayer2.TrackList` is exported too: changes
///   of the window go out as `TrackRemoved`/`TrackAdded` when they are a few edits, else
///   as `TrackListReplaced`, each time with `Tracks` invalidated.
/// - With a `playlists` source, `org.mpris.MediaPlayer2.Playlists` is exported too.
@MainActor
public final class MPRISServer {
    /// How the player presents itself on the bus.
    public struct Configuration: Sendable {
        /// The part after `org.mpris.MediaPlayer2.` in the bus name.
        public var playerName: String
        /// The name desktops show for the player (MPRIS `Identity`), such as "Quaver".
        public var identity: String
        /// The base name of the player's `.desktop` file, which desktops take its icon
        /// from (MPRIS `DesktopEntry`); nil: none.
        public var desktopEntry: String?
        /// The URI schemes `OpenUri` and `AddTrack` accept (MPRIS `SupportedUriSchemes`);
        /// others get `InvalidArgs` before any handler runs.
        public var supportedURISchemes: [String] = ["file", "http", "https"]
        /// The MIME types the player can play (MPRIS `SupportedMimeTypes`).
        public var supportedMIMETypes: [String] = []
        /// Prefix of `mpris:trackid` paths; must not lie under `/org/mpris`.
        public var trackIDPrefix: ObjectPath
        /// Prefix of playlist ids.
        public var playlistIDPrefix: ObjectPath
        /// The namespace of the errors returned for failed commands.
        public var errorNamespace: String
        /// How far (µs) a new elapsed time may differ from the predicted one before it counts
        /// as a jump and `Seeked` is sent.
        public var seekTolerance: Duration = .milliseconds(100)

        /// A player on `org.mpris.MediaPlayer2.<playerName>`, shown as `identity`; track and
        /// playlist ids and error names are made from `playerName`.
        public init(playerName: String, identity: String, desktopEntry: String? = nil) {
            self.playerName = playerName
            self.identity = identity
            self.desktopEntry = desktopEntry
            let safe = Self.nameElement(playerName)
            self.trackIDPrefix = ObjectPath("/" + safe + "/track") ?? ObjectPath("/player/track")!
            self.playlistIDPrefix = ObjectPath("/" + safe + "/playlist") ?? ObjectPath("/player/playlist")!
            self.errorNamespace = "org.mpris.MediaPlayer2." + safe + ".Error"
        }

        /// `name` as one element valid in both object paths and error names: ASCII letters,
        /// digits and `_`, not starting with a digit (a bus name may hold `-`, these may not).
        static func nameElement(_ name: String) -> String {
            let mapped = String(
                name.unicodeScalars.map { scalar in
                    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
                        ? Character(scalar) : "_"
                })
            guard let first = mapped.first else { return "player" }
            return first.isNumber ? "_" + mapped : mapped
        }
    }

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

    /// The `Can*` flags published with the change that settles a pending item.
    private static let flagsHeldWhilePending = ["CanGoNext", "CanGoPrevious", "CanSeek", "CanPlay", "CanPause"]

    /// The window of the track list as clients last learnt it.
    private var publishedWindow: [UInt64] = []
    private var trackListReplaced = false
    private var changedTrackMetadata: [UInt64] = []
    private var renamedPlaylists: [MediaPlaylist] = []

    private var published: [String: [String: Value]] = [:]
    private var publishedTiming: Timing?
    /// A client's seek was accepted: its landing is announced with `Seeked` even when it is
    /// closer to the predicted position than `seekTolerance` (a seek to 0 from 0.05 s).
    var seekRequested = false
    private var publishScheduled = false
    private var connection: Connection?
    /// The bus name owned since ``register(on:processID:instanceFallback:)``; nil before,
    /// and after ``unregister()``.
    public private(set) var busName: String?

    private struct Timing {
        var itemID: UInt64?
        var isStopped: Bool
        var elapsed: Duration
        var rate: Double
        var instant: ContinuousClock.Instant
        var duration: Duration?
        func predicted(at now: ContinuousClock.Instant) -> Duration {
            var position = elapsed + (now - instant) * rate
            if let duration, position > duration { position = duration }
            return position
        }
    }

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
    @discardableResult
    public func register(
        on connection: Connection, processID: Int32 = MPRISServer.currentProcessID, instanceFallback: Bool = true
    ) throws(BusError) -> String? {
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
        let primary = "org.mpris.MediaPlayer2." + configuration.playerName
        switch try connection.requestName(primary) {
        case .primaryOwner, .alreadyOwner:
            busName = primary
        case .exists, .inQueue:
            guard instanceFallback else { return nil }
            let instance = primary + ".instance\(processID)"
            logger.info("\(primary) is owned by another process; using \(instance)")
            guard try connection.requestName(instance) == .primaryOwner else {
                throw BusError(.failed, "could not own \(primary) or \(instance)")
            }
            busName = instance
        }
        return busName
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

    // MARK: - Publishing

    /// Schedules one publication at the end of the current main-queue turn, so that all
    /// changes of one transition leave in one signal.
    public func setNeedsPublish() {
        if optionalMembers != exportedOptionalMembers {
            object.replaceInterfaces(makeInterfaces())
        }
        guard !publishScheduled else { return }
        publishScheduled = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.publishNow() }
        }
    }

    /// The queue changed: its window is compared with what clients know at the next
    /// publication. `replaced` says the queue was replaced as a whole (a playlist
    /// activated), which goes out as `TrackListReplaced` whatever the window looks like.
    public func trackListDidChange(replaced: Bool = false) {
        if replaced { trackListReplaced = true }
        setNeedsPublish()
    }

    /// What is known of a queued item changed (its tags were read): `TrackMetadataChanged`
    /// goes out at the next publication.
    public func trackMetadataDidChange(_ itemID: UInt64) {
        changedTrackMetadata.append(itemID)
        setNeedsPublish()
    }

    /// The set of playlists changed, or (`renamed`) some playlists' names or icons did.
    public func playlistsDidChange(renamed: [MediaPlaylist] = []) {
        renamedPlaylists += renamed
        setNeedsPublish()
    }

    /// Emits what changed since the last publication: one `PropertiesChanged` per interface,
    /// then `Seeked` if the position jumped.
    func publishNow() {
        publishScheduled = false
        var current = snapshot()
        // While the player settles a change, the flags it already set for the commands that
        // follow wait for the change itself: a new track's Metadata and its Can* flags reach
        // clients in one signal, so that no widget shows a title with another's buttons.
        if infoCenter.pendingItem != nil, let old = published[Self.playerInterface] {
            for name in Self.flagsHeldWhilePending { current[Self.playerInterface]?[name] = old[name] }
        }
        for interface in object.interfaces.map(\.name) {
            let old = published[interface] ?? [:]
            let new = current[interface] ?? [:]
            var changed: [String: Value] = [:]
            for (name, value) in new where old[name] != value { changed[name] = value }
            object.emitPropertiesChanged(interface: interface, changed: changed)
        }
        published = current

        let newTiming = timing()
        let restamped = newTiming.instant != publishedTiming?.instant || newTiming.itemID != publishedTiming?.itemID
        let requested =
            seekRequested && restamped && !newTiming.isStopped && newTiming.itemID == publishedTiming?.itemID
        if let jump = discontinuity(from: publishedTiming, to: newTiming) ?? (requested ? newTiming.elapsed : nil) {
            object.emit(interface: Self.playerInterface, member: "Seeked", arguments: [.int64(jump.microseconds)])
        }
        if restamped { seekRequested = false }
        publishedTiming = newTiming
        publishTrackList()
        for playlist in renamedPlaylists {
            object.emit(
                interface: Self.playlistsInterface, member: "PlaylistChanged", arguments: [playlistValue(playlist)])
        }
        renamedPlaylists = []
    }

    /// The window's change as removals and additions when it is a few edits (a track
    /// change slides it by one), else `TrackListReplaced`; then `TrackMetadataChanged` for
    /// items whose tags came in and were not just announced with them.
    private func publishTrackList() {
        defer {
            trackListReplaced = false
            changedTrackMetadata = []
        }
        guard let trackList else { return }
        let window = trackList.trackListWindow()
        var announced = Set<UInt64>()
        if window != publishedWindow || trackListReplaced {
            let edits = trackListReplaced ? nil : WindowEdits(from: publishedWindow, to: window)
            if let edits, edits.count <= max(4, window.count / 2) {
                for id in edits.removed {
                    object.emit(
                        interface: Self.trackListInterface, member: "TrackRemoved",
                        arguments: [.objectPath(trackID(for: id))])
                }
                let added = Dictionary(
                    uniqueKeysWithValues: trackList.trackListMetadata(edits.added.map(\.id)).map {
                        ($0.queueItemID, $0)
                    })
                for (id, after) in edits.added {
                    let info = added[id] ?? NowPlayingInfo(queueItemID: id)
                    object.emit(
                        interface: Self.trackListInterface, member: "TrackAdded",
                        arguments: [
                            metadataValue(info), .objectPath(after.map { trackID(for: $0) } ?? Self.noTrack),
                        ])
                    announced.insert(id)
                }
            } else {
                object.emit(
                    interface: Self.trackListInterface, member: "TrackListReplaced",
                    arguments: [
                        trackIDs(window), .objectPath(currentTrackID),
                    ])
                announced = Set(window)
            }
            object.emitPropertiesChanged(interface: Self.trackListInterface, changed: [:], invalidated: ["Tracks"])
            publishedWindow = window
        }
        var seen = announced
        let changed = changedTrackMetadata.filter { seen.insert($0).inserted }
        guard !changed.isEmpty else { return }
        for info in trackList.trackListMetadata(changed) {
            object.emit(
                interface: Self.trackListInterface, member: "TrackMetadataChanged",
                arguments: [
                    .objectPath(trackID(for: info.queueItemID)), metadataValue(info),
                ])
        }
    }

    private func timing() -> Timing {
        guard let info = infoCenter.nowPlayingInfo, infoCenter.playbackState != .stopped else {
            return Timing(
                itemID: infoCenter.nowPlayingInfo?.queueItemID, isStopped: true, elapsed: .zero, rate: 0,
                instant: infoCenter.timestamp, duration: nil)
        }
        let rate = infoCenter.playbackState == .playing ? info.playbackRate : 0
        return Timing(
            itemID: info.queueItemID, isStopped: false, elapsed: info.elapsedPlaybackTime, rate: rate,
            instant: infoCenter.timestamp, duration: info.duration)
    }

    /// The new position if it is not what the previous timing predicts (a seek, a loop back
    /// to the start, a resume somewhere else); nil for ordinary progress.
    private func discontinuity(from old: Timing?, to new: Timing) -> Duration? {
        // Stopping resets the position to zero, which clients expect: no Seeked.
        guard let old, new.itemID != nil, !new.isStopped else { return nil }
        let expected: Duration = old.itemID == new.itemID && !old.isStopped ? old.predicted(at: new.instant) : .zero
        let difference = new.elapsed - expected
        let tolerance = configuration.seekTolerance
        return (difference > tolerance || difference < .zero - tolerance) ? new.elapsed : nil
    }

    /// Every signalled property's current value, per interface.
    private func snapshot() -> [String: [String: Value]] {
        var result: [String: [String: Value]] = [:]
        for interface in object.interfaces {
            var values: [String: Value] = [:]
            for property in interface.properties where property.emitsChangedSignal == .true {
                values[property.name] = property.getter()
            }
            result[interface.name] = values
        }
        return result
    }

    // MARK: - Derived values

    var playbackStatus: String {
        switch infoCenter.playbackState {
        case .playing: (infoCenter.nowPlayingInfo?.playbackRate ?? 0) > 0 ? "Playing" : "Paused"
        case .paused: "Paused"
        case .stopped: "Stopped"
        }
    }

    private var hasItem: Bool { infoCenter.nowPlayingInfo != nil }
    var canPlay: Bool { hasItem && commandCenter.playCommand.isActive }
    var canPause: Bool { hasItem && commandCenter.pauseCommand.isActive }
    var canSeek: Bool {
        guard let info = infoCenter.nowPlayingInfo, !info.isLiveStream, info.duration != nil else { return false }
        return commandCenter.changePlaybackPositionCommand.isActive || commandCenter.seekCommand.isActive
    }
    var canGoNext: Bool { commandCenter.nextTrackCommand.isActive }
    var canGoPrevious: Bool { commandCenter.previousTrackCommand.isActive }

    /// The `mpris:trackid` of the current item.
    var currentTrackID: ObjectPath {
        guard let id = infoCenter.nowPlayingInfo?.queueItemID else { return Self.noTrack }
        return trackID(for: id)
    }

    func trackID(for itemID: UInt64) -> ObjectPath {
        configuration.trackIDPrefix.appending(String(itemID))!
    }

    /// The whole `Metadata` map, with the types clients require; an empty map when nothing
    /// is current, as the MPRIS spec's conformance tool and Mopidy's test suite require.
    var metadata: Value {
        guard let info = infoCenter.nowPlayingInfo else {
            return .stringVariantDictionary([:])
        }
        return metadataValue(info)
    }

    /// The metadata map of an item.
    func metadataValue(_ info: NowPlayingInfo) -> Value {
        var map: [String: Value] = ["mpris:trackid": .objectPath(trackID(for: info.queueItemID))]
        if let duration = info.duration, !info.isLiveStream { map["mpris:length"] = .int64(duration.microseconds) }
        if let title = info.title, !title.isEmpty { map["xesam:title"] = .string(title) }
        let artists = info.artists.filter { !$0.isEmpty }
        if !artists.isEmpty { map["xesam:artist"] = .strings(artists) }
        if let album = info.album, !album.isEmpty { map["xesam:album"] = .string(album) }
        let albumArtists = info.albumArtists.filter { !$0.isEmpty }
        if !albumArtists.isEmpty { map["xesam:albumArtist"] = .strings(albumArtists) }
        let genres = info.genres.filter { !$0.isEmpty }
        if !genres.isEmpty { map["xesam:genre"] = .strings(genres) }
        if let number = info.trackNumber, let n = Int32(exactly: number), n > 0 { map["xesam:trackNumber"] = .int32(n) }
        if let number = info.discNumber, let n = Int32(exactly: number), n > 0 { map["xesam:discNumber"] = .int32(n) }
        if let art = info.artworkURL, !art.isEmpty { map["mpris:artUrl"] = .string(art) }
        if let url = info.assetURL, !url.isEmpty { map["xesam:url"] = .string(url) }
        return .stringVariantDictionary(map)
    }

    var rate: Double {
        let nominal = infoCenter.nowPlayingInfo?.defaultPlaybackRate ?? 1
        return nominal > 0 && nominal.isFinite ? nominal : 1
    }

    // MARK: - Interfaces

    /// What decides which optional members are exported: `LoopStatus` and `Shuffle` exist
    /// only while their commands have handlers.
    private var optionalMembers: [Bool] {
        [
            commandCenter.changeRepeatModeCommand.hasTargets, commandCenter.changeShuffleModeCommand.hasTargets,
            trackList != nil, playlists != nil,
        ]
    }
    private var exportedOptionalMembers: [Bool] = []

    private func makeInterfaces() -> [Interface] {
        exportedOptionalMembers = optionalMembers
        var interfaces = [
            rootInterfaceDeclaration(),
            Interface(
                Self.playerInterface, methods: playerMethods(), properties: playerProperties(),
                signals: [
                    SignalDeclaration("Seeked", [Argument("Position", .int64)])
                ]),
        ]
        if trackList != nil { interfaces.append(trackListInterfaceDeclaration()) }
        if playlists != nil { interfaces.append(playlistsInterfaceDeclaration()) }
        return interfaces
    }

    private func rootInterfaceDeclaration() -> Interface {
        Interface(
            Self.rootInterface,
            methods: [
                Method("Raise") { [weak self] _ in
                    self?.raiseHandler?()
                    return []
                },
                Method("Quit") { [weak self] _ throws(BusError) in
                    guard let handler = self?.quitHandler else {
                        throw BusError(.notSupported, "this player cannot quit")
                    }
                    // Reply first, then quit on the next turn.
                    DispatchQueue.main.async { MainActor.assumeIsolated { handler() } }
                    return []
                },
            ],
            properties: [
                Property("CanQuit", .boolean) { [unowned self] in .boolean(quitHandler != nil) },
                Property("CanRaise", .boolean) { [unowned self] in .boolean(raiseHandler != nil) },
                Property("HasTrackList", .boolean) { [unowned self] in .boolean(trackList != nil) },
                Property("Identity", .string) { [unowned self] in .string(configuration.identity) },
                Property("DesktopEntry", .string) { [unowned self] in .string(configuration.desktopEntry ?? "") },
                Property("SupportedUriSchemes", .array(.string)) { [unowned self] in
                    .strings(configuration.supportedURISchemes)
                },
                Property("SupportedMimeTypes", .array(.string)) { [unowned self] in
                    .strings(configuration.supportedMIMETypes)
                },
            ])
    }

    /// Runs a command and turns its status into a reply: success or a no-op (the command is
    /// not active) is a normal reply; a failure is an error under
    /// `configuration.errorNamespace`. Returns whether a handler ran and succeeded.
    @discardableResult
    func run<E>(_ command: RemoteCommand<E>, _ event: E) throws(BusError) -> Bool {
        guard let status = command.perform(event) else {
            logger.debug("\(command.name) ignored: the command is disabled or has no handler")
            return false
        }
        switch status {
        case .success:
            return true
        case .noSuchContent:
            throw BusError(
                BusError.Name(configuration.errorNamespace + ".NoSuchContent"), "\(command.name): no such content")
        case .noActionableNowPlayingItem:
            throw BusError(
                BusError.Name(configuration.errorNamespace + ".NoActionableNowPlayingItem"),
                "\(command.name): nothing is loaded")
        case .commandFailed(let reason):
            throw BusError(
                BusError.Name(configuration.errorNamespace + ".CommandFailed"), "\(command.name) failed: \(reason)")
        }
    }

    static func loopStatus(_ type: RepeatType) -> String {
        switch type {
        case .off: "None"
        case .one: "Track"
        case .all: "Playlist"
        }
    }

    static func repeatType(_ status: String) -> RepeatType? {
        switch status {
        case "None": .off
        case "Track": .one
        case "Playlist": .all
        default: nil
        }
    }
}

extension Duration {
    /// Whole microseconds, truncated toward zero, saturating at the Int64 range.
    package var microseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = product.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }
}
