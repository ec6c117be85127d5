import ArgumentParser
import Foundation

/// Compares Quaver with mpv + mpv-mpris over MPRIS, side by side in one run, and prints a
/// markdown table (progress goes to stderr). `scripts/bench` builds it and runs it.
@main
struct QuaverBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quaver-bench",
        abstract: "Benchmark Quaver against mpv + mpv-mpris over MPRIS and print a markdown table.",
        discussion: """
            Each player runs on its own private dbus-daemon with silent output that keeps real time \
            (Quaver: fakesink sync=true; mpv: --ao=null), playing the same generated FLAC tracks. \
            The players are measured alternately, round after round, in one run.

            With --scale, it measures Quaver alone with a queue of 100,000 tracks instead (see SCALE BENCHMARK); \
            with --storm, how quickly it answers D-Bus while commands storm its playback engine (see STORM BENCHMARK); \
            with --footprint, its memory, start-up and CPU beside GStreamer's own floor (see FOOTPRINT BENCHMARK); \
            with --loudness, the CPU cost of measuring loudness while playing (see LOUDNESS BENCHMARK).
            """)

    /// The figures, by the names `--skip` takes.
    enum Figure: String, CaseIterable, ExpressibleByArgument, Sendable {
        case startup, idle, toggles, getall, seek, gapless, callgrind
    }

    @Option(help: "The quaver binary (default: the one beside quaver-bench).")
    var quaver: String?

    @Option(help: "The mpv binary.")
    var mpv = "mpv"

    @Option(help: "mpv-mpris's plugin (default: found where Debian and Ubuntu put it).")
    var mprisPlugin: String?

    @Option(help: "Scratch folder for tracks, logs, homes and callgrind dumps (emptied first).")
    var workDir: String?

    @Option(help: "Rounds of each fast figure (toggles, GetAll, seeks), alternating the players.")
    var rounds = 3

    @Option(help: "PlayPause toggles per player in all, spread over the rounds.")
    var toggles = 1000

    @Option(help: "Upper bound of the random think time before each toggle, in ms (0: none).")
    var thinkTimeMs = 100

    @Option(help: "Seeks per player per round.")
    var seeks = 200

    @Option(help: "Length of each GetAll throughput run, in seconds.")
    var getallSeconds = 5.0

    @Option(help: "GetAll calls kept in flight.")
    var getallInFlight = 4

    @Option(help: "Measured start-ups per player (after one warm-up start).")
    var startupRounds = 5

    @Option(help: "Length of the paused and of the playing window for CPU, context switches and memory, in seconds.")
    var windowSeconds = 30.0

    @Option(help: "Toggles counted under callgrind.")
    var callgrindToggles = 200

    @Option(
        help: ArgumentHelp(
            "Leave out a figure (repeatable): \(Figure.allCases.map(\.rawValue).joined(separator: ", ")).",
            valueName: "figure"))
    var skip: [Figure] = []

    @Option(help: "Also write the table to this file.")
    var output: String?

    @OptionGroup(title: "Scale benchmark")
    var scaleOptions: ScaleOptions

    /// The storm benchmark's options.
    @OptionGroup(title: "Storm benchmark")
    var stormOptions: StormOptions

    /// The footprint benchmark's options.
    @OptionGroup(title: "Footprint benchmark")
    var footprintOptions: FootprintOptions

    /// The loudness benchmark's options.
    @OptionGroup(title: "Loudness benchmark")
    var loudnessOptions: LoudnessOptions

    func validate() throws {
        guard rounds >= 1, toggles >= 2, seeks >= 2, startupRounds >= 1, getallInFlight >= 1, callgrindToggles >= 2
        else {
            throw ValidationError("counts must be positive (toggles, seeks and callgrind toggles at least 2)")
        }
        guard getallSeconds > 0, windowSeconds >= 3 else {
            throw ValidationError("windows must be positive (the CPU window at least 3 s)")
        }
        try scaleOptions.check()
        try stormOptions.check()
        try footprintOptions.check()
        try loudnessOptions.check()
        let runs = [scaleOptions.scale, stormOptions.storm, footprintOptions.footprint, loudnessOptions.loudness]
        if runs.filter({ $0 }).count > 1 {
            throw ValidationError("--scale, --storm, --footprint and --loudness are separate runs")
        }
    }

    func run() async throws {
        if footprintOptions.footprint {
            let table = try await FootprintBenchmark(footprintOptions.settings(quaver: quaver, workDir: workDir)).run()
            print(table, terminator: "")
            if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
            return
        }
        if loudnessOptions.loudness {
            let table = try await LoudnessBenchmark(loudnessOptions, quaver: quaver, workDir: workDir).run()
            print(table, terminator: "")
            if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
            return
        }
        if stormOptions.storm {
            let table = try await StormBenchmark(stormOptions.settings(quaver: quaver, workDir: workDir)).run()
            print(table, terminator: "")
            if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
            return
        }
        if scaleOptions.scale {
            let table = try await ScaleBenchmark(
                scaleOptions.settings(quaver: quaver, workDir: workDir, rounds: rounds)
            ).run()
            print(table, terminator: "")
            if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
            return
        }
        let settings = Settings(
            quaver: quaver, mpv: mpv, mprisPlugin: mprisPlugin, workDir: workDir, rounds: rounds, toggles: toggles,
            thinkTime: .milliseconds(thinkTimeMs), seeks: seeks,
            getallDuration: .milliseconds(Int(getallSeconds * 1000)),
            getallInFlight: getallInFlight, startupRounds: startupRounds,
            window: .milliseconds(Int(windowSeconds * 1000)), callgrindToggles: callgrindToggles, skip: Set(skip))
        let table = try await Benchmark(settings).run()
        print(table, terminator: "")
        if let output { try table.write(toFile: output, atomically: true, encoding: .utf8) }
    }
}

/// The options, as the main actor takes them.
struct Settings: Sendable {
    var quaver: String?
    var mpv: String
    var mprisPlugin: String?
    var workDir: String?
    var rounds: Int
    var toggles: Int
    var thinkTime: Duration
    var seeks: Int
    var getallDuration: Duration
    var getallInFlight: Int
    var startupRounds: Int
    var window: Duration
    var callgrindToggles: Int
    var skip: Set<QuaverBench.Figure>
}
