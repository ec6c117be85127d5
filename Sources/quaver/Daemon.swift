import DBus
import Dispatch
import Foundation
import Logging
import NowPlaying
import Playback

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
        var instance = Config.InstancePolicy.new
    }

    /// Keeps the running daemon alive for the life of the process.
    static var current: Daemon?

    let options: Options
    let logger: Logger
    let player: Player
    let commands = RemoteCommandCenter()
    let info = NowPlayingInfoCenter()
    let mpris: MPRISServer
    private var connection: Connection?
    private var signalSources: [any DispatchSourceSignal] = []
    let store: StateStore
    /// What was last written, so that nothing is rewritten when nothing changed.
    private var savedState: SavedState?
    private var savedQueue: [UInt64]?
    private var saveScheduled = false

    init(options: Options, logger: Logger) throws {
        self.options = options
        self.logger = logger
        store = StateStore(folder: Paths.state, logger: logger)
        player = try Player(audioSink: options.audioSink, supportedRates: options.rates, logger: logger)
        var configuration = MPRISServer.Configuration(playerName: options.name, identity: "Quaver", desktopEntry: "quaver")
        configuration.supportedURISchemes = MediaSources.supportedSchemes
        configuration.supportedMIMETypes = MediaTypes.supported()
        configuration.errorNamespace = "org.mpris.MediaPlayer2.quaver.Error"
        mpris = MPRISServer(commandCenter: commands, infoCenter: info, configuration: configuration, logger: logger)
        mpris.quitHandler = { [weak self] in self?.shutdown(status: 0, reason: "asked to quit over D-Bus") }
        bindCommands()
        info.positionProvider = { [weak self] in self?.player.position }
        player.onChange = { [weak self] change in self?.playerDidChange(change) }
        if let volume = options.volume { player.setVolume(volume) }
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
        server.setNeedsPublish()
        return server.object.introspectionXML()
    }

    /// Queues the media, connects to the bus, exports MPRIS, owns the name and starts playing.
    func start() throws {
        let connection: Connection
        do {
            connection = try Connection(bus: .session, logger: logger)
        } catch {
            throw ExitError("cannot connect to the D-Bus session bus: \(error.message)")
        }
        self.connection = connection
        connection.onDisconnect = { [weak self] in
            self?.logger.critical("lost the connection to the D-Bus session bus; exiting")
            self?.player.shutdown()
            exit(1)
        }

        let restored = options.items.isEmpty && options.resume ? store.load() : nil
        if let (state, queue) = restored {
            player.enqueue(queue)
            savedQueue = player.entries.map(\.id)
            if options.volume == nil { player.setVolume(state.volume) }
            player.setRate(state.rate)
            player.setRepeatMode(Player.RepeatMode(rawValue: state.loop) ?? .off)
            player.setShuffle(state.shuffle)
        } else {
            player.enqueue(resolveStartupMedia())
        }

        guard let name = try mpris.register(on: connection, processID: getpid(), instanceFallback: options.instance == .new) else {
            logger.notice("Quaver is already running as org.mpris.MediaPlayer2.\(options.name); leaving it be")
            exit(0)
        }
        logger.info("Quaver \(Quaver.configuration.version) on \(GStreamer.version): \(player.entries.count) tracks queued, bus name \(name)")
        installSignalHandlers()

        if let (state, _) = restored, let index = state.current {
            let position = Duration.microseconds(state.position)
            logger.info("restored the last session: track \(index + 1) of \(player.entries.count) at \(Self.clock(position))")
            if options.startPlaying { player.play(index: index, at: position) } else { player.preroll(index: index, at: position) }
        } else if restored != nil {
            if options.startPlaying { player.play() }
        } else if options.startPaused {
            player.preroll()
        } else {
            player.play()
        }
        syncNowPlaying(republishTiming: true)
        mpris.setNeedsPublish()
    }

    static func clock(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        return String(format: "%d:%02d", seconds / 60, seconds % 60)
    }

    /// What to play when started: the arguments, else the music folder, else the demo.
    private func resolveStartupMedia() -> [String] {
        if !options.items.isEmpty {
            let uris = MediaSources.expand(options.items, logger: logger)
            if uris.isEmpty { logger.warning("nothing playable among the arguments; waiting for OpenUri") }
            return uris
        }
        let music = options.musicFolder
        let files = FileManager.default.fileExists(atPath: music.path)
            ? MediaSources.audioFiles(in: music, logger: logger) : []
        if !files.isEmpty {
            logger.info("playing \(files.count) tracks from \(music.path)")
            return files.map(\.absoluteString)
        }
        let demoFolder = Paths.cache.appendingPathComponent("demo", isDirectory: true)
        do {
            let demo = try TrackGenerator.generate(TrackGenerator.demo, into: demoFolder)
            logger.info("no audio in \(music.path); playing the built-in demo playlist from \(demoFolder.path)")
            return demo.map(\.absoluteString)
        } catch {
            logger.error("could not create the demo playlist in \(demoFolder.path): \(error)")
            return []
        }
    }

    // MARK: - Commands to player

    private func bindCommands() {
        commands.supportedPlaybackRates = player.supportedRates
        commands.playCommand.addTarget { [unowned self] _ in player.play() ? .success : .noActionableNowPlayingItem }
        commands.pauseCommand.addTarget { [unowned self] _ in
            player.pause()
            return .success
        }
        commands.togglePlayPauseCommand.addTarget { [unowned self] _ in
            player.togglePlayPause()
            return .success
        }
        commands.stopCommand.addTarget { [unowned self] _ in
            player.stop()
            return .success
        }
        commands.nextTrackCommand.addTarget { [unowned self] _ in
            player.next()
            return .success
        }
        commands.previousTrackCommand.addTarget { [unowned self] _ in
            player.previous()
            return .success
        }
        commands.changePlaybackPositionCommand.addTarget { [unowned self] event in
            player.seek(to: event.positionTime) ? .success : .commandFailed(reason: "the track cannot seek now")
        }
        commands.seekCommand.addTarget { [unowned self] event in
            player.seek(to: event.position) ? .success : .commandFailed(reason: "the track cannot seek now")
        }
        commands.changePlaybackRateCommand.addTarget { [unowned self] event in
            player.setRate(event.playbackRate)
            return .success
        }
        commands.changeVolumeCommand.addTarget { [unowned self] event in
            player.setVolume(event.volume)
            return .success
        }
        commands.changeRepeatModeCommand.addTarget { [unowned self] event in
            player.setRepeatMode(Player.RepeatMode(event.repeatType))
            return .success
        }
        commands.changeShuffleModeCommand.addTarget { [unowned self] event in
            player.setShuffle(event.shuffleType != .off)
            return .success
        }
        commands.openURICommand.addTarget { [unowned self] event in
            let uris = MediaSources.expand([event.uri], logger: logger)
            return player.open(uris) ? .success : .noSuchContent
        }
    }

    // MARK: - Player to now-playing info

    private func playerDidChange(_ change: Player.Change) {
        syncNowPlaying(republishTiming: change == .transport)
        if change != .metadata { setNeedsSave() }
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

    // MARK: - Saved session

    /// Saves the queue (when it changed) and the playback state (when it changed). Called at
    /// the moments that change them: never on a timer.
    func saveState() {
        guard connection != nil else { return }  // not before the session is restored
        let ids = player.entries.map(\.id)
        do {
            if ids != savedQueue {
                try store.saveQueue(player.entries.map(\.uri))
                savedQueue = ids
            }
            let position = player.status == .stopped ? .zero : (player.position ?? .zero)
            let state = SavedState(
                queueCount: ids.count, current: player.currentIndex,
                position: position.microseconds, volume: player.volume, rate: player.rate,
                loop: player.repeatMode.rawValue, shuffle: player.shuffle)
            if state != savedState {
                try store.save(state)
                savedState = state
            }
        } catch {
            logger.warning("could not save the session (playback goes on): \(error)")
        }
    }

    /// Copies the player's settled state into the command center and info center. The
    /// elapsed time is republished only at transport moments (play, pause, seek, rate,
    /// track change), as Apple's model asks; clients extrapolate in between.
    private func syncNowPlaying(republishTiming: Bool) {
        commands.playCommand.isEnabled = !player.entries.isEmpty
        commands.pauseCommand.isEnabled = player.current != nil
        commands.togglePlayPauseCommand.isEnabled = player.current != nil
        commands.stopCommand.isEnabled = player.current != nil
        commands.nextTrackCommand.isEnabled = player.canGoNext
        commands.previousTrackCommand.isEnabled = player.canGoPrevious
        let seekable = player.current?.info.map { $0.isSeekable && !$0.isLive && $0.duration != nil } ?? false
        commands.changePlaybackPositionCommand.isEnabled = seekable
        commands.seekCommand.isEnabled = seekable
        commands.currentRepeatType = RepeatType(player.repeatMode)
        commands.currentShuffleType = player.shuffle ? .items : .off
        info.volume = player.volume

        guard let entry = player.current else {
            info.nowPlayingInfo = nil
            info.playbackState = .stopped
            return
        }
        // Start from the published info of the same entry so that the timing fields are
        // assigned (and so restamped) only at transport moments.
        let published = info.nowPlayingInfo.flatMap { $0.queueItemID == entry.id ? $0 : nil }
        let sameItem = published != nil
        var now = published ?? NowPlayingInfo(queueItemID: entry.id)
        let track = entry.info ?? TrackInfo()
        now.title = track.title ?? Self.fileTitle(entry.uri)
        now.artists = track.artists
        now.album = track.album
        now.albumArtists = track.albumArtists
        now.genres = track.genres
        now.trackNumber = track.trackNumber
        now.discNumber = track.discNumber
        now.duration = track.duration
        now.isLiveStream = track.isLive
        now.assetURL = entry.uri
        now.defaultPlaybackRate = player.rate
        let rate = player.status == .playing ? player.rate : 0
        if republishTiming || !sameItem || now.playbackRate != rate {
            now.playbackRate = rate
            now.elapsedPlaybackTime = player.status == .stopped ? .zero : (player.position ?? (sameItem ? now.elapsedPlaybackTime : .zero))
        }
        info.nowPlayingInfo = now
        info.playbackState = PlaybackState(rawValue: player.status.rawValue) ?? .stopped
    }

    static func fileTitle(_ uri: String) -> String? {
        guard let url = URL(string: uri) else { return nil }
        let name = url.deletingPathExtension().lastPathComponent
        return name.isEmpty || name == "/" ? nil : name
    }

    // MARK: - Lifecycle

    private func installSignalHandlers() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated {
                    self?.shutdown(status: 0, reason: signalNumber == SIGINT ? "interrupted" : "terminated")
                }
            }
            source.resume()
            signalSources.append(source)
        }
    }

    /// Releases the bus name, stops the pipeline and exits.
    func shutdown(status: Int32, reason: String) {
        logger.info("stopping: \(reason)")
        saveState()
        mpris.unregister()
        player.shutdown()
        connection?.flush()
        exit(status)
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
