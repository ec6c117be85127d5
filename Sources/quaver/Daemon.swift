import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import NowPlaying
import Playback
import ToneGenerator

/// Wires the player to the now-playing library and the bus: the one owner of state, on the
/// main actor.
@MainActor
final class Daemon {
    struct Options {
        var items: [String]
        var name: String
        var audioSink: String?
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

    /// Keeps the running daemon alive for the life of the process.
    static var current: Daemon?

    let options: Options
    let logger: Logger
    let player: Player
    let commands = RemoteCommandCenter()
    let info = NowPlayingInfoCenter()
    let mpris: MPRISServer
    var connection: Connection?
    private var signalSources: [any DispatchSourceSignal] = []
    /// Pauses before the system sleeps (nil without a system bus).
    private var sleepGuard: SleepGuard?
    let store: StateStore
    /// What was last written, so that nothing is rewritten when nothing changed.
    var savedState: SavedState?
    var savedQueueRevision: Int?
    private var saveScheduled = false
    /// Writes the session in order, off the main queue.
    let saveQueue = DispatchQueue(label: "quaver.state", qos: .utility)
    var isWritingSave = false
    var queueSaveDue = false
    var stateSaveDue: SavedState?
    /// Media being expanded in the background; the session is saved once it is all in.
    var loadsInProgress = 0
    var loadGeneration = 0
    var playlistFolder: PlaylistFolder?
    var activePlaylistID: UInt64?
    /// Play was asked for before anything was queued.
    var playWhenLoaded = false
    /// Where cover images are kept for clients to show.
    let artwork: ArtworkCache
    /// Reads a current track again when its artwork was not found with its tags (the cached
    /// image went since, or the tags were not read in time).
    let artworkReader: Discoverer
    /// The entry whose artwork was last looked for again: once per entry, never in a loop.
    var artworkLookedForAgain: UInt64?
    private var nameRequested = false
    /// The demo playlist is being rendered (see `demoNameOwnershipDeadline`).
    private var makingDemo = false
    /// When the daemon was made: how long the first state took is logged with the name.
    private let startedAt = ContinuousClock.now
    /// Owns the name should the start take long (cancelled once it is owned: an idle daemon
    /// wakes for nothing).
    private var nameDeadline: (any DispatchSourceTimer)?

    init(options: Options, logger: Logger) throws {
        self.options = options
        self.logger = logger
        store = StateStore(folder: Paths.state, logger: logger)
        artwork = ArtworkCache(folder: Paths.artwork, logger: logger)
        artworkReader = Discoverer(artwork: artwork)
        player = try Player(
            audioSink: options.audioSink, supportedRates: options.rates, artwork: artwork, logger: logger)
        var configuration = MPRISServer.Configuration(
            playerName: options.name, identity: "Quaver", desktopEntry: "quaver")
        configuration.supportedURISchemes = MediaSources.supportedSchemes
        configuration.supportedMIMETypes = MediaTypes.supported()
        configuration.errorNamespace = "org.mpris.MediaPlayer2.quaver.Error"
        mpris = MPRISServer(commandCenter: commands, infoCenter: info, configuration: configuration, logger: logger)
        mpris.quitHandler = { [weak self] in self?.shutdown(status: .success, reason: "asked to quit over D-Bus") }
        bindCommands()
        mpris.trackList = self
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

    /// Queues the media, connects to the bus, exports MPRIS, owns the name and starts playing.
    /// - Parameter connection: the session bus connection to use (the one that asked whether
    ///   Quaver already runs), or nil to connect now.
    func start(on existing: Connection? = nil) throws {
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
            self?.player.shutdown()
            Exit.now(.failure)
        }

        let restored = options.items.isEmpty && options.resume ? store.load() : nil
        if let (state, queue) = restored {
            player.enqueue(queue)
            savedQueueRevision = player.queueRevision
            if options.volume == nil { player.setVolume(state.volume) }
            player.setRate(state.rate)
            player.setRepeatMode(Player.RepeatMode(rawValue: state.loop) ?? .off)
            player.setShuffle(state.shuffle)
        }
        startPlaylists()
        installSignalHandlers()
        sleepGuard = SleepGuard(logger: logger) { [unowned self] in
            let wasPlaying = player.status == .playing
            player.pause()
            return wasPlaying
        }

        if let (state, _) = restored, let index = state.current {
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
        // The name is owned once the first state is true (a track prerolled or playing, or
        // nothing to play), so that no client reads a Stopped with no track that is about to
        // change. A start that takes long owns it all the same, and publishes what is true then.
        if !isStarting {
            try ownName()
        } else {
            let deadline = DispatchSource.makeTimerSource(queue: .main)
            deadline.schedule(
                deadline: .now() + (makingDemo ? Self.demoNameOwnershipDeadline : Self.nameOwnershipDeadline))
            deadline.setEventHandler { [weak self] in MainActor.assumeIsolated { self?.ownNameOrExit() } }
            deadline.resume()
            nameDeadline = deadline
        }
    }

    private func ownNameOrExit() {
        do throws(BusError) {
            try ownName()
        } catch {
            logger.critical("cannot own the MPRIS name: \(error.message)")
            Exit.now(.failure)
        }
    }

    /// How long the start may take before the name is owned whatever the state.
    static let nameOwnershipDeadline: Double = 2
    /// The same when the demo playlist is rendered first (a first run with no music): three
    /// tracks take seconds to render on a busy machine, and a client that reads the state
    /// meanwhile would see Stopped with no track.
    static let demoNameOwnershipDeadline: Double = 15

    /// Whether what plays first is still being found or loaded.
    private var isStarting: Bool {
        guard player.status == .stopped, !player.ranOut else { return false }
        return player.requestedStatus != .stopped || loadsInProgress > 0
    }

    /// Owns the MPRIS name (once).
    private func ownName() throws(BusError) {
        guard let connection, mpris.busName == nil, !nameRequested else { return }
        nameRequested = true
        nameDeadline?.cancel()
        nameDeadline = nil
        syncNowPlaying(republishTiming: true)
        guard
            let name = try mpris.register(
                on: connection, processID: getpid(), instanceFallback: options.instance == .new)
        else {
            logger.notice("Quaver is already running as org.mpris.MediaPlayer2.\(options.name); leaving it be")
            Exit.now(.success)
        }
        let waited = Int(((ContinuousClock.now - startedAt) / .milliseconds(1)).rounded())
        logger.info(
            "Quaver \(Quaver.configuration.version) on \(GStreamer.version), bus name \(name), \(waited) ms after start"
        )

    }

    /// Queues what to play when started, in the background: the arguments, else the music
    /// folder, else the demo. Playback starts with the first tracks found.
    private func loadStartupMedia() {
        let fromArguments = !options.items.isEmpty
        guard fromArguments || FileManager.default.fileExists(atPath: options.musicFolder.path) else {
            return playDemo(startPaused: options.startPaused)
        }
        let sources = fromArguments ? options.items : [options.musicFolder.path]
        let startPaused = options.startPaused
        var started = false
        load(sources, quietly: !fromArguments) { [unowned self] uris in
            let added = player.enqueue(uris)
            // The first tracks were all unplayable and playback ran out before these came:
            // go on with them.
            if started, player.ranOut, !(startPaused && !playWhenLoaded), !added.isEmpty {
                player.play(index: player.count - added.count, at: nil)
            }
            if !started {
                started = true
                if startPaused && !playWhenLoaded { player.preroll() } else { player.play() }
                playWhenLoaded = false
            }
        } done: { [unowned self] count in
            if count > 0 {
                if !fromArguments { logger.info("playing \(count) tracks from \(options.musicFolder.path)") }
            } else if fromArguments {
                logger.warning("nothing playable among the arguments; waiting for OpenUri")
            } else {
                playDemo(startPaused: startPaused)
            }
            if mpris.busName == nil, !isStarting { ownNameOrExit() }
        }
    }

    /// Makes the built-in demo playlist on the loader queue (it renders its tracks through
    /// GStreamer, which can take seconds on a busy machine) and plays it once it is made. It
    /// counts as a load in progress meanwhile, so the bus name waits for the first true state
    /// as it does for the music folder. Dropped when something was queued by then: the demo
    /// stands in for an empty queue only.
    private func playDemo(startPaused: Bool) {
        let demoFolder = Paths.cache.appendingPathComponent("demo", isDirectory: true)
        let generation = loadGeneration
        loadsInProgress += 1
        makingDemo = true
        Self.loadQueue.async {
            let result = Result { () throws -> [String] in
                // The cache folder is Quaver's own: never written through a symbolic link.
                close(try PrivateFolder(demoFolder, ownedComponents: 2).open())
                return try TrackGenerator.generate(TrackGenerator.demo, into: demoFolder).map(\.absoluteString)
            }
            .mapError { MediaError(MediaError.reason($0)) }
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    self?.demoMade(result, in: demoFolder, startPaused: startPaused, generation: generation)
                }
            }
        }
    }

    private func demoMade(
        _ result: Result<[String], MediaError>, in demoFolder: URL, startPaused: Bool, generation: Int
    ) {
        loadsInProgress -= 1
        makingDemo = false
        defer {
            syncNowPlaying(republishTiming: false)
            if mpris.busName == nil, !isStarting { ownNameOrExit() }
        }
        switch result {
        case .success(let demo) where generation == loadGeneration && player.count == 0:
            logger.info(
                "no audio in \(options.musicFolder.path); playing the built-in demo playlist from \(demoFolder.path)")
            player.enqueue(demo)
            if startPaused && !playWhenLoaded { player.preroll() } else { player.play() }
            playWhenLoaded = false
        case .success:
            logger.debug("the demo playlist was made after something was queued; not queued")
        case .failure(let error):
            logger.error("could not create the demo playlist in \(demoFolder.path): \(error.reason)")
        }
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
        if change == .transport, mpris.busName == nil, !isStarting { ownNameOrExit() }
        if change == .transport { sleepGuard?.playerSettled(isPlaying: player.status == .playing) }
        if change != .metadata { setNeedsSave() }
        player.readInfoAhead(trackListWindow())
    }

    /// Saves the session after this turn of the main queue, so that the PropertiesChanged
    /// and Seeked signals the change caused (queued the same way, earlier) go out before
    /// the file is written and synced: clients are not kept waiting on the disk.
    private func setNeedsSave() {
        guard !saveScheduled else { return }
        saveScheduled = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                self.saveScheduled = false
                self.saveState()
            }
        }
    }

    // MARK: - Lifecycle

    private func installSignalHandlers() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated {
                    self?.shutdown(status: .success, reason: signalNumber == SIGINT ? "interrupted" : "terminated")
                }
            }
            source.resume()
            signalSources.append(source)
        }
        signalSources.append(makeReloadSource())
    }

    /// Releases the bus name, stops the pipeline and exits.
    func shutdown(status: ExitCode, reason: String) {
        logger.info("stopping: \(reason)")
        loadsInProgress = 0
        saveState()
        finishSaving()
        player.gainCache?.flush()
        mpris.unregister()
        connection?.flush()
        // Exits once GStreamer has let go of the pipeline, or after a second whatever it does.
        Exit.after({ [player] in player.shutdown(done: $0) }, status: status)
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
