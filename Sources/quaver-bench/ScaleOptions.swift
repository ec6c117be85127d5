import ArgumentParser
import DBus
import Foundation

/// The options of the scale benchmark (`quaver-bench --scale`).
struct ScaleOptions: ParsableArguments {
    @Flag(
        help: """
            Instead of the comparison with mpv: measure Quaver alone with a queue of --scale-tracks generated tracks, \
            named as one folder and as one .m3u8 playlist (first sound, load time, D-Bus latency during the load, \
            memory per queued track, TrackList calls). --rounds, --quaver, --work-dir and --output apply; the \
            comparison's other options do not.
            """)
    var scale = false

    @Option(help: "Tracks in the queue (hard links of one 0.5 s FLAC).")
    var scaleTracks = 100_000

    @Option(
        help: "Seconds from process start within which the queue must be loaded and playing, or those figures fail.")
    var scaleTimeout = 60.0

    @Option(help: "GetTracksMetadata calls per round.")
    var metadataCalls = 20

    @Option(help: "Track ids asked for in each GetTracksMetadata call.")
    var metadataBatch = 1000

    @Option(help: "AddTrack calls per round.")
    var addtrackCalls = 2000

    @Option(help: "AddTrack calls kept in flight.")
    var addtrackInFlight = 4

    func check() throws {
        guard scaleTracks >= 2, metadataCalls >= 1, metadataBatch >= 1, addtrackCalls >= 2, addtrackInFlight >= 1 else {
            throw ValidationError("scale counts must be positive (--scale-tracks and --addtrack-calls at least 2)")
        }
        guard metadataBatch <= scaleTracks else {
            throw ValidationError("--metadata-batch must not exceed --scale-tracks")
        }
        guard scaleTimeout >= 1 else { throw ValidationError("--scale-timeout must be at least 1 s") }
    }

    func settings(quaver: String?, workDir: String?, rounds: Int) -> ScaleSettings {
        ScaleSettings(
            quaver: quaver, workDir: workDir, rounds: rounds, tracks: scaleTracks,
            timeout: .milliseconds(Int(scaleTimeout * 1000)), metadataCalls: metadataCalls,
            metadataBatch: metadataBatch,
            addTrackCalls: addtrackCalls, addTrackInFlight: addtrackInFlight)
    }
}

struct ScaleSettings: Sendable {
    var quaver: String?
    var workDir: String?
    var rounds: Int
    var tracks: Int
    var timeout: Duration
    var metadataCalls: Int
    var metadataBatch: Int
    var addTrackCalls: Int
    var addTrackInFlight: Int
}

/// How the queue is named on Quaver's command line.
enum ScaleSource: String, CaseIterable, Sendable {
    case folder, playlist

    var title: String {
        switch self {
        case .folder: "folder"
        case .playlist: "playlist (.m3u8)"
        }
    }

    /// Alternates which source goes first, round after round.
    static func order(round: Int) -> [ScaleSource] {
        round.isMultiple(of: 2) ? [.folder, .playlist] : [.playlist, .folder]
    }
}

/// The rows of the scale table, in order.
enum ScaleFigure: CaseIterable {
    case firstSound, nameOwned, loadTime, loadCPU
    case getP50, getP99, getMax, getCount, getAfterLoadMax
    case rssLoaded, rssOneTrack, bytesPerTrack
    case tracksProperty, metadata
    case addTrackRate, addTrackP99
    case quit

    var title: String {
        switch self {
        case .firstSound: "time to first sound: process start → PlaybackStatus Playing"
        case .nameOwned: "process start → bus name owned"
        case .loadTime: "total load time: process start → `queue loaded:` line"
        case .loadCPU: "Quaver CPU time, process start → queue loaded"
        case .getP50: "Get(PlaybackStatus) during the load, one in flight: p50"
        case .getP99: "Get(PlaybackStatus) during the load: p99"
        case .getMax: "Get(PlaybackStatus) during the load: max"
        case .getCount: "Get(PlaybackStatus) calls answered during the load"
        case .getAfterLoadMax: "Get(PlaybackStatus) in the 1 s after the `queue loaded:` line: max"
        case .rssLoaded: "VmRSS, queue loaded, paused"
        case .rssOneTrack: "VmRSS, the same command with 1 track, paused"
        case .bytesPerTrack: "memory per queued track: (VmRSS − VmRSS with 1 track) / tracks"
        case .tracksProperty: "Get(TrackList.Tracks)"
        case .metadata: "GetTracksMetadata, 1 call"
        case .addTrackRate: "AddTrack answered per second"
        case .addTrackP99: "AddTrack latency, p99"
        case .quit: "Quit → process exit (queue of all tracks and the added ones)"
        }
    }

    var unit: String {
        switch self {
        case .firstSound, .nameOwned, .getP50, .getP99, .getMax, .getAfterLoadMax, .tracksProperty, .metadata,
            .addTrackP99, .quit:
            "ms"
        case .loadTime, .loadCPU: "s"
        case .getCount: "calls"
        case .rssLoaded, .rssOneTrack: "MiB"
        case .bytesPerTrack: "bytes"
        case .addTrackRate: "calls/s"
        }
    }

    var decimals: Int {
        switch self {
        case .firstSound, .nameOwned, .getCount, .bytesPerTrack, .addTrackRate, .quit: 0
        case .loadTime, .loadCPU, .getP50, .getP99, .addTrackP99: 2
        case .getMax, .getAfterLoadMax, .rssLoaded, .rssOneTrack, .tracksProperty, .metadata: 1
        }
    }

    var higherIsBetter: Bool { self == .addTrackRate }

    /// The value each median must stay under, in the row's unit.
    var target: Double? {
        switch self {
        case .firstSound: 500
        case .loadTime: 3
        case .getP99: 5
        case .bytesPerTrack: 1024
        default: nil
        }
    }

    /// Rows whose value is a statistic of all samples of every round pooled (the spread is
    /// the same statistic per round).
    var isPooled: Bool { [.getP50, .getP99, .getMax, .getAfterLoadMax, .addTrackP99].contains(self) }

    /// The statistic of a pooled row.
    func pooledStatistic(_ samples: [Double]) -> Double {
        switch self {
        case .getP50: samples.percentile(50)
        case .getMax, .getAfterLoadMax: samples.max() ?? .nan
        default: samples.percentile(99)
        }
    }
}

/// What was measured for one figure and one source, over the rounds.
struct ScaleSamples {
    var rounds: [Double] = []
    var pooled: [Double] = []
    var failures = 0
}

/// The generated media of the run.
struct ScaleMedia {
    /// The folder of all the tracks, and a playlist naming them.
    var folder: URL
    var playlist: URL
    /// A folder and a playlist with one track (the memory baseline).
    var oneFolder: URL
    var onePlaylist: URL
    /// One of the generated files.
    var sampleTrack: URL

    func path(_ source: ScaleSource, oneTrack: Bool) -> String {
        switch (source, oneTrack) {
        case (.folder, false): folder.path
        case (.playlist, false): playlist.path
        case (.folder, true): oneFolder.path
        case (.playlist, true): onePlaylist.path
        }
    }
}
