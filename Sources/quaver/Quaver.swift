public import ArgumentParser
internal import CLibcShims
import Dispatch
import FoundationEssentials
import Glibc
public import Logging
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary
import ToneGenerator

import class DBus.Connection

@main
enum Main {
    /// The command line without the program name. A global, not a local of `main`: the
    /// player never returns from `main` (it exits from the main queue), and LeakSanitizer
    /// reports a value only a never-ending frame refers to as leaked.
    static let arguments = Array(CommandLine.arguments.dropFirst())

    /// Runs the command the arguments name: the player, or `quaver doctor`.
    static func main() {
        limitMallocArenas()
        mapLargeBlocks()
        Quaver.main(arguments)
    }
}

/// glibc gives each thread that allocates under contention an arena of its own, up to eight
/// per core, and rarely gives their free pages back; GStreamer starts new streaming threads
/// with every track, so a long-running daemon keeps growing. One arena keeps it smaller at
/// no cost in calls answered (the figures are in bench/README.md, "Memory settings").
/// Set before any thread starts; `MALLOC_ARENA_MAX` in the environment still wins.
private func limitMallocArenas() {
    if ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil {
        _ = csystem_limit_malloc_arenas(1)
    }
}

/// The smallest block glibc gives a mapping of its own (see `mapLargeBlocks`).
let largeBlockBytes = 1 << 20

/// A track's tags of megabytes (a 10 MB title, a 16 MiB picture) are copied several times
/// by GStreamer while it plays. glibc raises its mmap threshold to the size of the first
/// such block freed, so the next copies go to the heap, and their pages stay with the
/// process once freed: 50 MB more, tracks later. With a fixed threshold every block of
/// `largeBlockBytes` or more is a mapping of its own, handed back as GStreamer frees it.
/// `MALLOC_MMAP_THRESHOLD_` in the environment still wins.
private func mapLargeBlocks() {
    if ProcessInfo.processInfo.environment["MALLOC_MMAP_THRESHOLD_"] == nil {
        _ = csystem_set_mmap_threshold(Int32(largeBlockBytes))
    }
}

/// The command line: `play`, the default subcommand (so that `quaver PATH...` plays), and
/// `doctor`. The man page and the shell completions are generated from it.
struct Quaver: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quaver",
        abstract: "Play music in the background and publish it to every desktop media control (MPRIS).",
        usage: """
            quaver [play] [<options>] [<path-or-uri> ...]
            quaver doctor [--name <name>]
            quaver snapcast-control --stream=<id>
            """,
        discussion: """
            Quaver plays the files, folders, playlists (.m3u, .m3u8, .pls) and http(s) streams you \
            name, in order. Folders are searched recursively. With nothing named, it comes back to \
            where the last session left off (paused), or plays your music folder, or a short \
            built-in demo playlist when that folder has no audio.

            Defaults can be set in $XDG_CONFIG_HOME/quaver/quaver.conf (see docs/usage.md); the \
            session is saved in $XDG_STATE_HOME/quaver/.

            Control it from media keys, GNOME or KDE media widgets, or a shell:
              playerctl -p quaver play-pause | next | previous | metadata | position 30 | volume 0.5

            When Quaver does not show up in a media widget, run: quaver doctor

            Playing is the default subcommand: quaver PATH... is quaver play PATH..., and \
            quaver help play lists its options. A file or folder named doctor, play or help is \
            played as ./doctor, ./play or ./help.

            Examples:
              quaver ~/Music/Albums/Blue            play a folder
              quaver --paused party.m3u             load a playlist, wait for Play
              quaver --audio-sink "fakesink sync=true"   play silently (no sound card needed)
              quaver ./doctor                       play a folder named doctor
            """,
        version: Version.current,
        subcommands: [Play.self, Doctor.self, SnapcastControl.self],
        defaultSubcommand: Play.self
    )
}

/// `quaver [play] [options] [path-or-uri ...]`: the player, a daemon until asked to quit.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play files, folders, playlists and streams, and publish them over MPRIS (the default).",
        discussion: """
            quaver PATH... and quaver play PATH... are the same. With nothing named, Quaver comes \
            back to the last session (paused), or plays the music folder, or a short built-in demo \
            playlist.
            """
    )

    @Argument(
        help: ArgumentHelp("Files, folders, playlists or file/http/https URIs to play.", valueName: "path-or-uri"))
    var items: [String] = []

    @Option(help: ArgumentHelp("Bus name suffix: Quaver owns org.mpris.MediaPlayer2.<name>.", valueName: "name"))
    var name = "quaver"

    @Option(
        help: ArgumentHelp(
            "When Quaver already runs: 'hand-over' (the default) queues the paths named in it, after its current track, and plays the first; 'new' starts another one (named <name>.instance<PID>); 'quit' exits quietly.",
            valueName: "hand-over|new|quit"))
    var instance: Config.InstancePolicy?

    @Flag(help: "Start another Quaver even when one runs (the same as --instance new).")
    var newInstance = false

    @Option(
        help: ArgumentHelp(
            "GStreamer sink to play into, e.g. \"pulsesink\", \"fakesink sync=true\" or \"wavenc ! filesink location=out.wav\". Default: the system's audio output, or a silent real-time sink when there is none.",
            valueName: "pipeline"))
    var audioSink: String?

    @Option(
        help: ArgumentHelp(
            "Where the audio goes instead of a GStreamer sink: snapcast:PATH renders into snapserver's pipe source at PATH, snapcast:tcp://HOST:PORT into its TCP source (add ?sampleformat=RATE:BITS:CHANNELS when the source reads another format than 48000:16:2).",
            valueName: "snapcast:path"))
    var output: String?

    @Flag(help: "Load the first track but do not start playing.")
    var paused = false

    @Flag(help: "Start playing even when coming back to a saved session (which otherwise waits, paused).")
    var play = false

    @Flag(help: "Do not come back to the saved session; play the music folder instead.")
    var noResume = false

    @Option(help: ArgumentHelp("Start volume, 0 to 1 on the mixer (cubic) scale.", valueName: "level"))
    var volume: Double?

    @Option(
        help: ArgumentHelp(
            "Loudness levelling (ReplayGain): 'auto' (the default) plays an album in order at its album gain and anything else at track gain; 'album', 'track', or 'off'.",
            valueName: "auto|album|track|off"))
    var replaygain: LoudnessSettings.Mode?

    @Option(help: ArgumentHelp("Added to every track's gain, in dB (-15 to 15; default 0).", valueName: "dB"))
    var replaygainPreamp: Double?

    @Option(
        help: ArgumentHelp(
            "How a gain is kept from clipping: 'peak' (the default) lowers it to the track's peak, 'limiter' applies it whole through rglimiter, 'off' does neither.",
            valueName: "peak|limiter|off"))
    var replaygainClipping: LoudnessSettings.Clipping?

    @Option(
        help: ArgumentHelp(
            "Gain of a track without ReplayGain tags until it has been measured, in dB (-30 to 15; default 0).",
            valueName: "dB"))
    var replaygainFallback: Double?

    @Flag(help: "Do not measure tracks without ReplayGain tags while they play.")
    var noReplaygainAnalysis = false

    @Option(
        help: ArgumentHelp("Log detail: trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel: Logger.Level = .info

    @Option(help: .hidden)
    var makeTestTracks: String?

    @Option(help: .hidden)
    var trackCount = 3

    @Option(help: .hidden)
    var trackSeconds = 10.0

    @Option(help: .hidden)
    var trackFormat = TrackGenerator.Format.flac

    /// Each test track gets a front cover of its own colour; printed beside it, tab-separated.
    @Flag(help: .hidden)
    var trackCovers = false

    @Flag(help: .hidden)
    var printIntrospection = false

    func validate() throws {
        if let volume, !(volume.isFinite && (0...1).contains(volume)) {
            throw ValidationError("--volume must be between 0 and 1")
        }
        if paused && play { throw ValidationError("--paused and --play contradict each other") }
        if let output {
            guard audioSink == nil else { throw ValidationError("--output and --audio-sink contradict each other") }
            do {
                _ = try OutputSpec(parsing: output)
            } catch {
                throw ValidationError("--output: \(error)")
            }
        }
        if let replaygainPreamp, Config.decibels("\(replaygainPreamp)", in: LoudnessSettings.preampRange) == nil {
            throw ValidationError(
                "--replaygain-preamp must be from \(LoudnessSettings.preampRange.lowerBound) to \(LoudnessSettings.preampRange.upperBound) dB"
            )
        }
        if let replaygainFallback, Config.decibels("\(replaygainFallback)", in: LoudnessSettings.fallbackRange) == nil {
            throw ValidationError(
                "--replaygain-fallback must be from \(LoudnessSettings.fallbackRange.lowerBound) to \(LoudnessSettings.fallbackRange.upperBound) dB"
            )
        }
        guard !name.isEmpty, name.utf8.count < 100,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }),
            !(name.first?.isNumber ?? true)
        else {
            throw ValidationError("--name must be letters, digits or _ and must not start with a digit")
        }
    }

    func run() throws {
        let level = logLevel
        let problems = ProblemLog(file: Paths.state.appendingPathComponent("problems.log"))
        LoggingSystem.bootstrap { _ in ConsoleLogHandler(level: level, recentProblems: problems) }
        let logger = Logger(label: "quaver")
        Self.avoidGSettingsAbort()

        if let folder = makeTestTracks {
            try makeTestTracks(in: URL(fileURLWithPath: folder, isDirectory: true))
            return
        }
        let config: Config
        do {
            config = try Config.load()
        } catch {
            logger.critical("invalid configuration: \(error)")
            throw ExitCode(2)
        }
        var options = Daemon.Options(
            items: items, name: name, audioSink: audioSink ?? config.audioSink, startPaused: paused,
            volume: volume ?? config.volume)
        // The command line's sink or output wins over either in quaver.conf.
        if let output {
            options.audioSink = nil
            options.output = try? OutputSpec(parsing: output)  // checked in validate()
        } else if audioSink == nil {
            options.output = config.output
        }
        options.startPlaying = play
        options.musicFolder = config.musicFolder ?? Paths.music
        options.resume = config.resume && !noResume
        options.rates = config.minimumRate...config.maximumRate
        options.instance = newInstance ? .new : instance ?? config.instance
        options.playlistsFolder =
            config.playlistsFolder ?? Paths.music.appendingPathComponent("Playlists", isDirectory: true)
        options.loudness = LoudnessOverrides(
            mode: replaygain, preamp: replaygainPreamp, clipping: replaygainClipping, fallbackGain: replaygainFallback,
            noAnalysis: noReplaygainAnalysis)
        options.startLoudness = options.loudness.applied(to: config.loudness)
        if printIntrospection {
            MainActor.assumeIsolated { print(Daemon.introspectionXML(options: options), terminator: "") }
            return
        }
        let daemon = try MainActor.assumeIsolated { () throws -> Daemon? in
            var connection: Connection?
            if options.instance != .new {
                switch HandOver.run(items: items, name: name, policy: options.instance, play: !paused, logger: logger) {
                case .done: return nil
                case .refused: throw ExitCode.failure
                case .start(let asked): connection = asked
                }
            }
            let daemon = try Daemon(options: options, logger: logger)
            try daemon.start(on: connection)
            return daemon
        }
        // The daemon lives as long as the process: the main queue runs until it exits.
        if let daemon { withExtendedLifetime(daemon) { dispatchMain() } }
    }
}

extension Play {
    /// Writes the tracks the tests play and prints their paths (with `--track-covers`, each
    /// followed by a tab and the path of a copy of its cover, in `covers/` beside them).
    func makeTestTracks(in folder: URL) throws {
        var tracks = TrackGenerator.numbered(count: trackCount, seconds: trackSeconds, format: trackFormat)
        var covers: [URL] = []
        if trackCovers {
            let coverFolder = folder.appendingPathComponent("covers", isDirectory: true)
            try FileManager.default.createDirectory(at: coverFolder, withIntermediateDirectories: true)
            for index in tracks.indices {
                // Odd multiplier: a different colour for every track number.
                let image = try TrackGenerator.image(color: UInt32(truncatingIfNeeded: (index + 1) &* 0x3F_1F7B))
                tracks[index].pictures = [.init(image)]
                let copy = coverFolder.appendingPathComponent((index + 1).zeroPadded(to: 2) + ".png")
                try image.write(to: copy, options: .atomic)
                covers.append(copy)
            }
        }
        let files = try TrackGenerator.generate(tracks, into: folder)
        for (index, file) in files.enumerated() {
            print(covers.isEmpty ? file.path : file.path + "\t" + covers[index].path)
        }
    }

    /// GIO aborts the process when an http source asks for proxy settings and no GSettings
    /// schemas are installed at all (a minimal container, a stripped session). Without
    /// schemas there are no desktop proxy settings to read anyway: use the environment's.
    static func avoidGSettingsAbort() {
        let environment = ProcessInfo.processInfo.environment
        guard environment["GIO_USE_PROXY_RESOLVER"] == nil, environment["GSETTINGS_SCHEMA_DIR"] == nil else { return }
        let home =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share").path
        let system = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        let folders = [home] + system.split(separator: ":").map(String.init)
        guard
            !folders.contains(where: {
                FileManager.default.fileExists(atPath: $0 + "/glib-2.0/schemas/gschemas.compiled")
            })
        else { return }
        setenv("GIO_USE_PROXY_RESOLVER", "dummy", 1)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension Config.InstancePolicy: ExpressibleByArgument {}
extension TrackGenerator.Format: ExpressibleByArgument {}
extension LoudnessSettings.Mode: ExpressibleByArgument {}
extension LoudnessSettings.Clipping: ExpressibleByArgument {}
