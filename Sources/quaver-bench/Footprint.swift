import ArgumentParser
import ChildProcess
import Foundation
import TestKit

/// The options of the footprint benchmark (`quaver-bench --footprint`).
struct FootprintOptions: ParsableArguments {
    /// Runs the footprint table instead of the comparison with mpv.
    @Flag(
        help: """
            Instead of the comparison with mpv: Quaver's memory, start-up and CPU beside GStreamer's own floor \
            (gst-launch-1.0 playbin on the same file and sink), in one run. --quaver, --work-dir and --output apply.
            """)
    var footprint = false

    /// More Quaver builds to measure beside --quaver.
    @Option(
        help: ArgumentHelp(
            "Another Quaver build to measure (repeatable), as LABEL=PATH, e.g. static=.build-static/release/quaver.",
            valueName: "label=path"))
    var footprintBuild: [String] = []

    /// Warm starts timed per program.
    @Option(help: "Starts timed per program, after one warm-up start (the median is reported).")
    var footprintStarts = 20

    /// Length of each playing window.
    @Option(
        help: """
            Seconds of each of the two windows of playing over which CPU ticks (both) and context switches (the \
            second) are counted: the first from 2 s of playing on, the second after it.
            """)
    var footprintWindow = 60.0

    /// Rounds of playing per output.
    @Option(
        help: """
            Rounds of playing per output: in each, every program plays at once, started afresh (the median of the \
            rounds is reported).
            """)
    var footprintRounds = 5

    /// Leaves out the pass through a sound server.
    @Flag(help: "Measure into fakesink only, not also into pulsesink on a private PipeWire session.")
    var footprintNoServer = false

    /// Tracks in the big queue.
    @Option(help: "Tracks in the big queue (hard links of the one FLAC in a folder; 0: leave it out).")
    var footprintQueue = 100_000

    /// Rejects settings that cannot be measured.
    func check() throws {
        guard footprintStarts >= 1, footprintWindow >= 1, footprintRounds >= 1, footprintQueue >= 0 else {
            throw ValidationError(
                "--footprint-starts, --footprint-window and --footprint-rounds must be at least 1, --footprint-queue not negative"
            )
        }
        for build in footprintBuild where !build.contains("=") {
            throw ValidationError("--footprint-build takes LABEL=PATH, not '\(build)'")
        }
    }

    /// The settings as the main actor takes them.
    func settings(quaver: String?, workDir: String?) -> FootprintSettings {
        let extra = footprintBuild.map { build -> (String, String) in
            let parts = build.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts[1])
        }
        return FootprintSettings(
            quaver: quaver, builds: extra, workDir: workDir, starts: footprintStarts,
            window: .milliseconds(Int(footprintWindow * 1000)), rounds: footprintRounds, queue: footprintQueue,
            sinks: footprintNoServer ? [.fake] : [.fake, .pulse])
    }
}

/// The footprint benchmark's options, checked.
struct FootprintSettings: Sendable {
    /// The quaver binary; nil: the one beside quaver-bench.
    var quaver: String?
    /// More builds, as (label, path).
    var builds: [(String, String)]
    /// The scratch folder; nil: quaver-bench-footprint in the temporary folder.
    var workDir: String?
    /// Timed starts per program.
    var starts: Int
    /// Each of the two playing windows.
    var window: Duration
    /// Rounds of playing per output, every program playing at once in each.
    var rounds: Int
    /// Tracks in the big queue.
    var queue: Int
    /// The outputs measured, each with the floor and every build.
    var sinks: [FootprintSink]
}

/// Where the audio goes in a pass of the footprint benchmark.
enum FootprintSink: String, Sendable {
    /// `fakesink sync=true`: GStreamer's clock paces the audio, no sound server.
    case fake = "fakesink"
    /// `pulsesink` on a private PipeWire session (pipewire-pulse), as on a desktop.
    case pulse = "pulsesink"

    /// The audio sink, as both programs take it.
    var element: String { self == .fake ? "fakesink sync=true" : "pulsesink" }
}

/// What one program measured.
struct FootprintRow {
    /// The name in the table.
    var label: String
    /// Where the audio went.
    var sink: FootprintSink = .fake
    /// Start to bus name owned (Quaver), or to PLAYING (gst-launch), in ms, per start.
    var starts: [Double] = []
    /// At the end of the last round, from /proc/PID/smaps_rollup, in KiB.
    var rss: UInt64?
    var pss: UInt64?
    var anonymous: UInt64?
    /// utime + stime over the first window of playing (from 2 s on), in clock ticks, by round.
    var startTicks: [Int: UInt64] = [:]
    /// utime + stime over the window after it, by round: playing on, the start over.
    var cpuTicks: [Int: UInt64] = [:]
    /// Context switches of all its threads over the window after the first, by round.
    var switches: [Int: UInt64] = [:]
    /// Threads at the end of the last round.
    var threads: Int?
    /// VmRSS with the big queue loaded, paused, in KiB; and start to Playing with it, in ms.
    var queueRSS: UInt64?
    var queuePlaying: Double?
    /// Rss and Pss by mapped file (or [heap], [anon]), in KiB, at the end of the last round.
    var mappings: [(name: String, rss: UInt64, pss: UInt64)] = []
    /// What went wrong.
    var problems: [String] = []
}

/// Quaver's footprint beside GStreamer's floor: the same FLAC into `fakesink sync=true`,
/// measured in the same run. Prints a markdown table of its own.
@MainActor
final class FootprintBenchmark {
    let settings: FootprintSettings
    private(set) var programs: Programs!
    private(set) var rows: [FootprintRow] = []
    var notes: [String] = []
    private var queueFolder: URL?
    /// The same track without ReplayGain tags, which Quaver measures while it plays it.
    private var untaggedTrack: String?

    /// Prepares a run; `run()` does the work.
    init(_ settings: FootprintSettings) { self.settings = settings }

    /// Sets up, times the starts of the floor and every build, plays them together into each
    /// output, and returns the markdown.
    func run() async throws -> String {
        let began = ContinuousClock.now
        try await setUp()
        let main = try quaverBinary(settings.quaver)
        let builds = [("Quaver", main)] + settings.builds.map { ("Quaver (\($0.0))", $0.1) }
        for sink in settings.sinks {
            var server: PipeWireSession?
            if sink == .pulse {
                guard PipeWireSession.isInstalled else {
                    notes.append("No pass through pulsesink: PipeWire is not installed (scripts/setup installs it).")
                    continue
                }
                log("starting a private PipeWire session")
                server = try await PipeWireSession()
            }
            let environment = server?.clientEnvironment ?? [:]
            var players = [FootprintPlayer(label: "gst-launch-1.0 playbin (the floor)", binary: nil)]
            players += builds.map { FootprintPlayer(label: $0.0, binary: $0.1) }
            if sink == .fake, let untaggedTrack {
                players.append(
                    FootprintPlayer(
                        label: "Quaver, a track without ReplayGain tags (measured as it plays)", binary: main,
                        track: untaggedTrack))
            }
            var played = players.map { FootprintRow(label: $0.label, sink: sink) }
            // Start-up and the big queue do not depend on the output: timed in the first pass,
            // one program at a time.
            if sink == settings.sinks.first {
                await timeFloorStarts(into: &played[0])
                for (index, player) in players.enumerated() {
                    guard let binary = player.binary, player.track == nil else { continue }
                    await timeStarts(of: binary, label: player.label, into: &played[index])
                }
            }
            await playTogether(players, sink: sink, environment: environment, into: &played)
            rows += played
            server?.stop()
        }
        notes.append(
            "The run took \(Int((ContinuousClock.now - began).inSeconds.rounded())) s; work files and logs in \(programs.workDir.path)."
        )
        return markdown()
    }

    // MARK: Set-up

    private func setUp() async throws {
        let quaver = try quaverBinary(settings.quaver)
        guard let gstLaunch = Tools.find("gst-launch-1.0")?.path else {
            throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
        }
        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench-footprint")
        programs = Programs(
            quaver: quaver, mpv: "", mprisPlugin: "", gstLaunch: gstLaunch, tracks: [],
            workDir: workDir)
        // Longer than the settling and the window, so that both programs still play at its end.
        let seconds = 2 * Int(settings.window.inSeconds.rounded(.up)) + 10
        log("generating a tagged FLAC track of \(seconds) s")
        let untagged = try await programs.makeTracks(1, seconds: String(seconds))[0]
        // Both programs play a track with ReplayGain tags, as a tagged library has: Quaver
        // applies its gain (-6 dB, so rgvolume works on every sample), and measures nothing.
        log("tagging a copy with ReplayGain")
        let tagged = workDir.appendingPathComponent("tagged.flac").path
        try await Self.tagCopy(of: untagged, to: tagged, gstLaunch: gstLaunch, registry: programs.gstRegistry)
        programs.tracks = [tagged]
        untaggedTrack = untagged
        if settings.queue > 0 {
            log("linking \(settings.queue) tracks into a folder")
            let folder = workDir.appendingPathComponent("queue")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var source = programs.tracks[0]
            for number in 0..<settings.queue {
                let name = folder.appendingPathComponent(String(format: "%06d.flac", number)).path
                if link(source, name) == 0 { continue }
                // A file takes at most 65,000 links on ext4: the rest link to a copy.
                guard errno == EMLINK else { throw HarnessError("link \(name): errno \(errno)") }
                try FileManager.default.copyItem(atPath: programs.tracks[0], toPath: name)
                source = name
            }
            queueFolder = folder
        }
        notes.append("The machine's load average (1, 5, 15 min) before the first measurement: \(machineLoad()).")
    }

    /// Decodes `source` and encodes it again into `target` with a track gain of -6 dB and
    /// a peak of 0.25, as the tag library of a ReplayGain scanner would leave it.
    private static func tagCopy(of source: String, to target: String, gstLaunch: String, registry: String)
        async throws
    {
        let tags = "replaygain-track-gain=(double)-6.0,replaygain-track-peak=(double)0.25"
        let command = [
            gstLaunch, "-q", "filesrc", "location=\(source)", "!", "flacparse", "!", "flacdec", "!", "audioconvert",
            "!", "taginject", "tags=\(tags)", "!", "flacenc", "!", "filesink", "location=\(target)",
        ]
        let environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": registry]) { $1 }
        let result = try await Tools.run(command, environment: environment)
        guard result.status == 0, FileManager.default.fileExists(atPath: target) else {
            throw HarnessError("gst-launch-1.0 could not tag a copy of \(source): \(result.output)")
        }
    }

    // MARK: Starts

    /// gst-launch-1.0 into `fakesink`, started `settings.starts` times after a warm-up:
    /// from the start to PLAYING (`New clock`).
    private func timeFloorStarts(into row: inout FootprintRow) async {
        log("gst-launch-1.0: \(settings.starts) starts")
        for round in -1..<settings.starts {
            do {
                let launched = try LineWatcher(
                    floorCommand(sink: .fake), environment: floorEnvironment(extra: [:]))
                let playing = try await launched.wait(forLineContaining: "New clock", timeout: .seconds(20))
                if round >= 0 { row.starts.append(playing.inMilliseconds) }
                launched.kill()
            } catch {
                row.problems.append("gst-launch-1.0: \(error)")
                return
            }
        }
    }

    /// The command that plays the track in gst-launch-1.0 into `sink`: GStreamer alone.
    func floorCommand(sink: FootprintSink) -> [String] {
        [
            programs.gstLaunch, "playbin", "uri=" + URL(fileURLWithPath: programs.tracks[0]).absoluteString,
            "audio-sink=\(sink.element)",
        ]
    }

    func floorEnvironment(extra: [String: String]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": programs.gstRegistry]) { $1 }.merging(extra) {
            $1
        }
    }

    /// `binary` started paused `settings.starts` times after a warm-up (start to name
    /// owned), then with the big queue (start to Playing, and its memory once loaded).
    private func timeStarts(of binary: String, label: String, into row: inout FootprintRow) async {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            row.problems.append("no quaver binary at \(binary)")
            return
        }
        var programs = self.programs!
        programs.quaver = binary
        log("\(label): \(settings.starts) starts\(queueFolder == nil ? "" : " and the big queue")")
        do {
            let session = try await PlayerSession(.quaver, programs: programs, label: "footprint-starts-\(rows.count)")
            defer { session.close() }
            for round in -1..<settings.starts {
                let times = try await session.start(programs.daemonCommand(.quaver, paused: true))
                await session.stop()
                if round >= 0 { row.starts.append(times.owned.inMilliseconds) }
            }
            guard let queueFolder else { return }
            let playing = session.events.expect("PlaybackStatus Playing") { $0.playbackStatus == "Playing" }
            let loaded = session.events.expect("`queue loaded:` line") { event in
                if case .output(let line) = event.kind { line.contains("queue loaded:") } else { false }
            }
            let start = ContinuousClock.now
            try session.launch(
                [binary, "--audio-sink", "fakesink sync=true", "--no-resume", queueFolder.path], watchOutput: true)
            row.queuePlaying =
                (try await session.events.wait(playing, timeout: .seconds(60)).time - start).inMilliseconds
            _ = try await session.events.wait(loaded, timeout: .seconds(300))
            _ = try await session.call("Pause")
            try await session.settle("Paused")
            try await Task.sleep(for: .seconds(1))
            row.queueRSS = try ProcessProbe.Sample(of: try session.pid).rssKiB
            await session.stop()
        } catch {
            row.problems.append("\(label): \(error)")
        }
    }
}

/// The machine's load average over 1, 5 and 15 minutes, from /proc/loadavg.
func machineLoad() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
        separator: " ") ?? "?"
}
