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
import ToneGenerator

/// The start: what plays first, the bus name once it is true, and every way the daemon ends
/// (``Startup`` decides; this carries it out).
extension Daemon {
    /// Carries out the start-up's actions.
    func run(_ actions: [Startup.Action]) {
        for action in actions {
            switch action {
            case .readSession:
                readSession()
            case .ownName:
                ownName()
            case .saveAndExit(let success):
                loads.abandon()
                session.close { [self] in
                    flushGainCache { [self] in
                        mpris.unregister()
                        connection?.flush()
                        exitAfterRelease(success: success)
                    }
                }
            case .exit(let success):
                session.abandon()
                exitAfterRelease(success: success)
            }
        }
    }

    /// Calls `done` once the measured gains are on disk, without waiting on the main actor.
    private func flushGainCache(then done: @escaping @MainActor @Sendable () -> Void) {
        guard let cache = player.gainCache else { return done() }
        cache.flush(then: done)
    }

    /// Exits once GStreamer has let go of the pipeline, or after a second whatever it does.
    private func exitAfterRelease(success: Bool) {
        Exit.after({ [player] in player.shutdown(done: $0) }, status: success ? .success : .failure)
    }

    /// Owns the MPRIS name; the main actor goes on until the bus answers, and the daemon ends
    /// when it cannot.
    private func ownName() {
        guard let connection else { return }
        syncNowPlaying(republishTiming: true)
        let instanceFallback = options.instance == .new
        mpris.register(on: connection, processID: getpid(), instanceFallback: instanceFallback) { [weak self] result in
            switch result {
            case .success(let name): self?.nameAnswered(name)
            case .failure(let error): self?.nameRefused(error)
            }
        }
    }

    private func nameRefused(_ error: BusError) {
        logger.critical("cannot own the MPRIS name: \(error.message)")
        end(.nameRefused(error.message))
    }

    private func nameAnswered(_ name: String?) {
        guard let name else {
            logger.notice("Quaver is already running as org.mpris.MediaPlayer2.\(options.name); leaving it be")
            return end(.nameTaken)
        }
        let waited = Int(((ContinuousClock.now - startedAt) / .milliseconds(1)).rounded())
        logger.info(
            "Quaver \(Quaver.configuration.version) on \(GStreamer.version), bus name \(name), \(waited) ms after start"
        )
        StartupPages.releaseSoon(logger: logger)
    }

    /// Queues what to play when started, in the background: the arguments, else the music
    /// folder, else the demo. Playback starts with the first tracks found.
    func loadStartupMedia() {
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
            if started, player.ranOut, loads.playsLateTracks(startPaused: startPaused), !added.isEmpty {
                player.play(index: player.count - added.count, at: nil)
            }
            if !started {
                started = true
                if loads.takePlay(startPaused: startPaused) { player.play() } else { player.preroll() }
            }
        } done: { [unowned self] count in
            if count > 0 {
                if !fromArguments { logger.info("playing \(count) tracks from \(options.musicFolder.path)") }
            } else if fromArguments {
                logger.warning("nothing playable among the arguments; waiting for OpenUri")
            } else {
                playDemo(startPaused: startPaused)
            }
        }
    }

    /// Makes the built-in demo playlist on the loader queue (it renders its tracks through
    /// GStreamer, which can take seconds on a busy machine) and plays it once it is made. It
    /// counts as a load in progress meanwhile, so Play is offered, as while the music folder
    /// is searched. Dropped when something was queued by then: the demo
    /// stands in for an empty queue only.
    private func playDemo(startPaused: Bool) {
        let demoFolder = Paths.cache.appendingPathComponent("demo", isDirectory: true)
        let generation = loads.begin()
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
        let current = loads.end(generation)
        defer { syncNowPlaying(republishTiming: false) }
        switch result {
        case .success(let demo) where current && player.count == 0:
            logger.info(
                "no audio in \(options.musicFolder.path); playing the built-in demo playlist from \(demoFolder.path)")
            player.enqueue(demo)
            if loads.takePlay(startPaused: startPaused) { player.play() } else { player.preroll() }
        case .success:
            logger.debug("the demo playlist was made after something was queued; not queued")
        case .failure(let error):
            logger.error("could not create the demo playlist in \(demoFolder.path): \(error.reason)")
        }
    }
}
