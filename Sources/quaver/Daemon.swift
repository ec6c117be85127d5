import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Media
import NowPlaying
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary

/// Wires the player to the now-playing library and the bus: the one owner of state, on the
/// main actor.
@MainActor
final class Daemon {
    struct Options {
        var items: [String]
        var name: String
        var audioSink: String?
        /// Where the audio goes instead of `audioSink` (nil: `audioSink`'s sink).
        var output: OutputSpec?
        var startPaused: Bool
        /// Play even when restoring a saved session (which otherwise comes back paused).
        var startPlaying = false
        var volume: Double?
        var musicFolder: URL = Paths.music
        var resume = true
        var rates: ClosedRange<Double> = 0.5...2.0
        var instance = Config.InstancePolicy.handOver
        /// The folder of playlists offered over MPRIS; nil: none.
        var playlistsFolder: URL?
        /// The loudness settings of the command line, over those of `quaver.conf`.
        var loudness = LoudnessOverrides()
        /// The loudness settings at start: `quaver.conf`'s under the command line's.
        var startLoudness = LoudnessSettings()
    }

    let options: Options
    let logger: Logger
    let player: Player
    let commands = RemoteCommandCenter()
    let info = NowPlayingInfoCenter()
    let mpris: MPRISServer
    /// The session bus, from `start` on.
    private(set) var connection: Connection?
    /// SIGINT, SIGTERM and SIGHUP, answered from `start` on.
    private let signals = Signals()
    /// Pauses before the system sleeps (nil without a system bus).
    private var sleepGuard: SleepGuard?
    let store: StateStore
    /// Writes the saved session when it changes, off the main actor.
    let session: SessionSaver
    /// How far the start is, with the bus name, and how the daemon ends.
    var startup = Startup()
    /// Media being expanded in the background.
    var loads = Loads()
    var playlistFolder: PlaylistFolder?
    var activePlaylistID: UInt64?
    /// Where cover images are kept for clients to show.
    let artwork: ArtworkCache
    /// Reads a current track again when its artwork was not found with its tags (the cached
    /// image went since, or the tags were not read in time).
    let artworkReader: Discoverer
    /// The entry whose artwork was last looked for again: once per entry, never in a loop.
    var artworkLookedForAgain: UInt64?
    /// When the daemon was made: how long the start took is logged with the name.
    let startedAt = ContinuousClock.now

    init(options: Options, logger: Logger) throws {
        self.options = options
        self.logger = logger
        store = StateStore(folder: Paths.state, logger: logger)
        session = SessionSaver(store: store, logger: logger)
        artwork = ArtworkCache(folder: Paths.artwork, logger: logger)
        artworkReader = Discoverer(artwork: artwork)
        let output = try options.output?.open() ?? AudioOutput(audioSink: options.audioSink)
        if let spec = options.output { logger.info("playing into \(spec)") }
        player = try Player(output: output, supportedRates: options.rates, artwork: artwork, logger: logger)
        var configuration = MPRISServer.Configuration(
            playerName: options.name, identity: "Quaver", desktopEntry: "quaver")
        configuration.supportedURISchemes = MediaSources.supportedSchemes
        configuration.supportedMIMETypes = MediaTypes.supported()
        configuration.errorNamespace = "org.mpris.MediaPlayer2.quaver.Error"
        mpris = MPRISServer(commandCenter: commands, infoCenter: info, configuration: configuration, logger: logger)
        mpris.quitHandler = { [weak self] in self?.end(.asked("asked to quit over D-Bus")) }
        bindCommands()
        mpris.trackList = self
        session.source = self
        info.positionProvider = { [weak self] in self?.player.position }
        player.onChange = { [weak self] change in self?.playerDidChange(change) }
        if let volume = options.volume { player.setVolume(volume) }
        player.gainCache = Self.makeGainCache(logger: logger)
        player.loudness = options.startLoudness
        logger.debug("loudness: \(options.startLoudness.summary)")
    }

    /// The introspection document of the MPRIS object (`dbus/org.mpris.MediaPlayer2.xml`).
    static func introspectionXML(options: Options) -> String {
        let commands = RemoteCommandCenter()
        let server = MPRISServer(
            commandCenter: commands, infoCenter: NowPlayingInfoCenter(),
            configuration: .init(playerName: options.name, identity: "Quaver", desktopEntry: "quaver"))
        server.quitHandler = {}
        commands.changeRepeatModeCommand.addTarget { _ in .success }
        commands.changeShuffleModeCommand.addTarget { _ in .success }
        let sources = EmptySources()
        server.trackList = sources
        server.playlists = sources
        server.setNeedsPublish()
        return server.object.introspectionXML()
    }

    /// Connects to the bus and answers signals; the saved session is then read off the main
    /// actor, and ``sessionFound(_:)`` queues the media, exports MPRIS, owns the name and
    /// starts playing (``Startup`` decides when).
    /// - Parameter connection: the session bus connection to use (the one that asked whether
    ///   Quaver already runs), or nil to connect now.
    func start(on existing: Connection? = nil) throws(ExitError) {
        let connection: Connection
        if let existing {
            connection = existing
        } else {
            do {
                connection = try Connection(bus: .session, logger: logger)
            } catch {
                throw ExitError("cannot connect to the D-Bus session bus: \(error.message)")
            }
        }
        self.connection = connection
        connection.onDisconnect = { [weak self] in
            self?.logger.critical("lost the connection to the D-Bus session bus; exiting")
            self?.end(.busLost)
        }

        installSignalHandlers()
        run(startup.connected())
    }

    /// Reads the saved session on the saver's queue, then goes on with the start on the main
    /// actor (unless the daemon ends meanwhile).
    func readSession() {
        session.read(restoring: options.items.isEmpty && options.resume) { [weak self] found in
            self?.sessionFound(found)
        }
    }

    /// Queues what the saved session holds, else what the arguments, the music folder or the
    /// demo give, and starts playing it.
    private func sessionFound(_ found: StateStore.Found) {
        guard startup.phase == .readingSession else { return }
        let restored = found.restored
        if let restored {
            let state = restored.state
            player.enqueue(restored.queue)
            session.found(newest: found.newest, restored: restored.generation.map { ($0, player.queueRevision) })
            if options.volume == nil { player.setVolume(state.volume) }
            player.setRate(state.rate)
            player.setRepeatMode(Player.RepeatMode(rawValue: state.loop) ?? .off)
            player.setShuffle(state.shuffle)
        } else {
            session.found(newest: found.newest)
        }
        startPlaylists()
        sleepGuard = SleepGuard(logger: logger) { [unowned self] in
            let wasPlaying = player.status == .playing
            player.pause()
            return wasPlaying
        }

        if let state = restored?.state, let index = state.current {
            let position = Duration.microseconds(state.position)
            logger.info("restored the last session: track \(index + 1) of \(player.entries.count) at \(position.clock)")
            if options.startPlaying {
                player.play(index: index, at: position)
            } else {
                player.preroll(index: index, at: position)
            }
        } else if restored != nil {
            if options.startPlaying { player.play() }
        } else {
            loadStartupMedia()
        }
        syncNowPlaying(republishTiming: true)
        mpris.setNeedsPublish()
        run(startup.sessionRead())
    }

    // MARK: - Player to now-playing info

    private func playerDidChange(_ change: Player.Change) {
        switch change {
        case .entryInfo(let id):
            mpris.trackMetadataDidChange(id)
            return
        case .queue:
            mpris.trackListDidChange()
        case .transport, .metadata, .volume, .options:
            break
        }
        syncNowPlaying(republishTiming: change == .transport)
        if change == .transport { sleepGuard?.playerSettled(isPlaying: player.status == .playing) }
        if change != .metadata { session.setNeedsSave() }
        player.readInfoAhead(trackListWindow())
    }

    // MARK: - Lifecycle

    /// SIGINT and SIGTERM end the daemon as Quit does (the session written, the name
    /// released); SIGHUP reads `quaver.conf` again (see `reloadLoudness`).
    private func installSignalHandlers() {
        signals.answer(SIGINT) { [weak self] in self?.end(.asked("interrupted")) }
        signals.answer(SIGTERM) { [weak self] in self?.end(.asked("terminated")) }
        signals.answer(SIGHUP) { [weak self] in self?.reloadLoudness() }
    }

    /// Ends the daemon for `ending`, once: see ``Startup/end(_:)``.
    func end(_ ending: Startup.Ending) {
        if case .asked(let reason) = ending { logger.info("stopping: \(reason)") }
        run(startup.end(ending))
    }
}

struct ExitError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Player.RepeatMode {
    init(_ type: RepeatType) {
        switch type {
        case .off: self = .off
        case .one: self = .one
        case .all: self = .all
        }
    }
}

extension RepeatType {
    init(_ mode: Player.RepeatMode) {
        switch mode {
        case .off: self = .off
        case .one: self = .one
        case .all: self = .all
        }
    }
}

/// Sources with nothing in them, for the introspection document.
@MainActor
private final class EmptySources: TrackListDataSource, PlaylistsDataSource {
    func trackListWindow() -> [UInt64] { [] }
    func trackListMetadata(_ ids: [UInt64]) -> [NowPlayingInfo] { [] }
    var playlistCount: Int { 0 }
    var playlistOrderings: [MediaPlaylistOrdering] { [] }
    func playlists(from index: Int, maxCount: Int, ordering: MediaPlaylistOrdering, reversed: Bool) -> [MediaPlaylist] {
        []
    }
    var activePlaylist: MediaPlaylist? { nil }
    func playlist(id: UInt64) -> MediaPlaylist? { nil }
}
