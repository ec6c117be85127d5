import ArgumentParser
import FoundationEssentials
import TestKit

/// The options of the loudness benchmark (`quaver-bench --loudness`).
struct LoudnessOptions: ParsableArguments {
    /// Runs the loudness benchmark instead of the comparison with mpv.
    @Flag(
        help: """
            Instead of the comparison with mpv: Quaver's CPU while it plays a track without ReplayGain tags, \
            with rganalysis measuring it, without (--no-replaygain-analysis), and with loudness off. \
            --quaver, --work-dir and --output apply; the comparison's other options do not.
            """)
    var loudness = false

    /// Length of each measured window.
    @Option(help: "Length of each CPU window, in seconds.")
    var loudnessSeconds = 15.0

    /// Windows per variant.
    @Option(help: "Windows per variant, the variants alternating.")
    var loudnessRounds = 2

    /// Rejects settings that cannot measure.
    func check() throws {
        guard loudnessSeconds >= 3, loudnessRounds >= 1 else {
            throw ValidationError("--loudness-seconds must be at least 3, --loudness-rounds at least 1")
        }
    }
}

/// Quaver playing one untagged track in real time (`fakesink sync=true`) under each loudness
/// variant: CPU ticks (utime + stime from /proc/PID/stat) over a window of playback.
@MainActor
final class LoudnessBenchmark {
    /// One way of running Quaver.
    struct Variant {
        /// The name in the table.
        var name: String
        /// The options added to the command line.
        var arguments: [String]
    }

    static let variants = [
        Variant(name: "measuring (rganalysis on the branch)", arguments: []),
        Variant(name: "not measuring (--no-replaygain-analysis)", arguments: ["--no-replaygain-analysis"]),
        Variant(name: "loudness off (--replaygain off)", arguments: ["--replaygain", "off"]),
    ]

    let options: LoudnessOptions
    let quaverPath: String?
    let workDirPath: String?

    /// Prepares a run; `run()` does the work.
    init(_ options: LoudnessOptions, quaver: String?, workDir: String?) {
        self.options = options
        quaverPath = quaver
        workDirPath = workDir
    }

    /// Measures every variant `loudnessRounds` times and returns the markdown table.
    func run() async throws -> String {
        let quaver = try quaverBinary(quaverPath)
        let workDir = try prepareWorkDir(workDirPath, default: "quaver-bench-loudness")
        var programs = Programs(
            quaver: quaver, mpv: "", mprisPlugin: "", gstLaunch: "", tracks: [],
            workDir: workDir)
        // Long enough that the window never reaches its end (which would store a measurement).
        let seconds = Int(options.loudnessSeconds.rounded(.up)) + 30
        log("generating an untagged FLAC track of \(seconds) s")
        programs.tracks = try await programs.makeTracks(1, seconds: "\(seconds)")

        var ticks = [[UInt64]](repeating: [], count: Self.variants.count)
        for round in 0..<options.loudnessRounds {
            // Alternating the order: a machine that gets busier during the run weighs on each alike.
            let order = round.isMultiple(of: 2) ? Array(Self.variants.indices) : Self.variants.indices.reversed()
            for index in order {
                let variant = Self.variants[index]
                log("loudness round \(round + 1): \(variant.name), \(options.loudnessSeconds) s")
                ticks[index].append(try await window(variant, programs: programs, label: "loudness-\(round)-\(index)"))
            }
        }
        let report = Report()
        var table =
            "| Quaver playing an untagged FLAC track (44.1 kHz stereo) | CPU ticks in \(report.format(options.loudnessSeconds, 0)) s, each window | mean | CPU % |\n|---|---|---|---|\n"
        for (index, variant) in Self.variants.enumerated() {
            let mean = Double(ticks[index].reduce(0, +)) / Double(ticks[index].count)
            let percent = mean / ProcessProbe.ticksPerSecond / options.loudnessSeconds * 100
            table +=
                "| \(variant.name) | \(ticks[index].map(String.init).joined(separator: ", ")) | \(report.format(mean, 1)) | \(report.format(percent, 2)) |\n"
        }
        table +=
            "\nTicks are utime + stime of the quaver process from /proc/PID/stat (\(Int(ProcessProbe.ticksPerSecond)) a second), over a window that starts 2 s after playback settles, with `--audio-sink \"fakesink sync=true\"`; each variant in a fresh HOME, so nothing was measured before. Work files in \(workDir.path).\n"
        return table
    }

    /// Starts Quaver playing the track under `variant`, and counts its CPU ticks over the window.
    private func window(_ variant: Variant, programs: Programs, label: String) async throws -> UInt64 {
        let session = try await PlayerSession(
            .quaver, programs: programs, label: label, busName: "org.mpris.MediaPlayer2.quaver")
        defer { session.close() }
        try await session.start(
            [programs.quaver, "--no-resume", "--audio-sink", "fakesink sync=true"] + variant.arguments + programs.tracks
        )
        try await session.settle("Playing", timeout: .seconds(30))
        try await Task.sleep(for: .seconds(2))
        let pid = try session.pid
        let before = try ProcessProbe.Sample(of: pid)
        try await Task.sleep(for: .milliseconds(Int(options.loudnessSeconds * 1000)))
        let after = try ProcessProbe.Sample(of: pid)
        await session.stop()
        return after.cpuTicks &- before.cpuTicks
    }
}
