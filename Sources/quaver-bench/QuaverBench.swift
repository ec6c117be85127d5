import ArgumentParser
import AudioCheck
import DBus
import Foundation
import SeededRandom
import TestKit

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

/// One run: sets up, measures every figure and returns the markdown table.
@MainActor
final class Benchmark {
    let settings: Settings
    let report = Report()
    private var programs: Programs!
    private var sessions: [PlayerKind: PlayerSession] = [:]

    init(_ settings: Settings) { self.settings = settings }

    func run() async throws -> String {
        let began = ContinuousClock.now
        programs = try await setUp()
        defer { for session in sessions.values { session.close() } }
        for kind in PlayerKind.allCases {
            sessions[kind] = try await PlayerSession(kind, programs: programs, label: "daemon")
        }
        var phases: [String] = []
        func phase(_ figure: QuaverBench.Figure, _ body: () async throws -> Void) async {
            guard !settings.skip.contains(figure) else { return }
            let start = ContinuousClock.now
            log("\(figure.rawValue)…")
            do {
                try await body()
            } catch {
                report.problem("\(figure.rawValue): \(error)")
            }
            phases.append("\(figure.rawValue) \(Int((ContinuousClock.now - start).inSeconds.rounded())) s")
        }

        await phase(.startup) { try await startup() }
        let needDaemons = [.idle, .toggles, .getall, .seek].contains { !settings.skip.contains($0) }
        if needDaemons {
            do {
                try await launchDaemons()
                await phase(.idle) { try await idle() }
                await phase(.toggles) { try await toggleLatency() }
                await phase(.getall) { try await getAllThroughput() }
                await phase(.seek) { try await seekLatency() }
            } catch {
                report.problem("starting the players as daemons: \(error)")
            }
            for session in sessions.values { await session.stop() }
        }
        await phase(.gapless) { try await gapless() }
        await phase(.callgrind) { try await callgrind() }

        let took = ContinuousClock.now - began
        report.note(
            "The run took \(Int(took.inSeconds.rounded())) s (\(phases.joined(separator: ", "))), on a private bus per player; work files in \(programs.workDir.path)."
        )
        return report.markdown()
    }

    // MARK: Set-up

    /// Finds the programs, empties the work folder and generates the tracks.
    private func setUp() async throws -> Programs {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let quaver = settings.quaver ?? me.deletingLastPathComponent().appendingPathComponent("quaver").path
        guard FileManager.default.isExecutableFile(atPath: quaver) else {
            throw HarnessError("no quaver binary at \(quaver) (build it, or pass --quaver)")
        }
        guard let mpv = Tools.find(settings.mpv)?.path else {
            throw HarnessError("mpv is not installed (apt-get install mpv mpv-mpris)")
        }
        let pluginCandidates =
            [settings.mprisPlugin].compactMap { $0 } + [
                "/usr/lib/mpv-mpris/mpris.so", "/usr/lib/x86_64-linux-gnu/mpv-mpris/mpris.so",
                "/etc/mpv/scripts/mpris.so",
            ]
        guard let plugin = pluginCandidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw HarnessError("mpv-mpris's plugin is not installed (apt-get install mpv-mpris)")
        }
        guard let gstLaunch = Tools.find("gst-launch-1.0")?.path else {
            throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
        }

        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench")
        var programs = Programs(
            quaver: quaver, mpv: mpv, mprisPlugin: plugin, gstLaunch: gstLaunch, tracks: [],
            workDir: workDir)

        log("generating 3 tagged FLAC tracks of 60 s")
        programs.tracks = try await Tools.makeTestTracks(
            quaver, into: workDir.appendingPathComponent("tracks"), ["--track-count", "3", "--track-seconds", "60"],
            registry: programs.gstRegistry)
        guard programs.tracks.count == 3 else {
            throw HarnessError("quaver --make-test-tracks made \(programs.tracks)")
        }

        let quaverVersion = try await Tools.run([quaver, "--version"]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let mpvVersion =
            try await Tools.run([mpv, "--no-config", "--version"]).output
            .split(separator: "\n").first.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } ?? "mpv ?"
        let pluginVersion =
            (try? await Tools.run(["/usr/bin/dpkg-query", "-W", "-f", "${Version}", "mpv-mpris"]))
            .flatMap { $0.status == 0 ? $0.output : nil } ?? "unknown version"
        report.note("Quaver \(quaverVersion) (\(quaver)); \(mpvVersion); mpv-mpris \(pluginVersion) (\(plugin)).")
        return programs
    }

    /// Starts both players as daemons, paused on the first track, looping the playlist (so
    /// that no figure runs into the end of the queue), and waits until each shows its track.
    private func launchDaemons() async throws {
        for kind in PlayerKind.allCases {
            let session = sessions[kind]!
            try await session.start(programs.daemonCommand(kind, paused: true))
            try await session.waitForTrack()
            try await session.set("LoopStatus", .string("Playlist"))
            try await session.settle("Paused")
        }
    }

    // MARK: Figures

    /// Figure 4: process start → bus name owned and GetAll answered.
    private func startup() async throws {
        var answered: [PlayerKind: [Double]] = [:]
        var owned: [PlayerKind: [Double]] = [:]
        for round in -1..<settings.startupRounds {  // round -1 warms up (GStreamer registry, file cache)
            for kind in PlayerKind.order(round: max(round, 0)) {
                let session = sessions[kind]!
                let times = try await session.start(programs.daemonCommand(kind, paused: true))
                await session.stop()
                guard round >= 0 else { continue }
                answered[kind, default: []].append(times.answered.inMilliseconds)
                owned[kind, default: []].append(times.owned.inMilliseconds)
            }
        }
        var row = Row(
            figure: "start-up: process start → bus name owned and GetAll answered", unit: "ms", better: .lower)
        var nameRow = Row(figure: "start-up: process start → bus name owned", unit: "ms", better: .lower)
        for kind in PlayerKind.allCases {
            row[kind] = .success(Measure(rounds: answered[kind] ?? []))
            nameRow[kind] = .success(Measure(rounds: owned[kind] ?? []))
        }
        report.add(row)
        report.add(nameRow)
        report.note(
            "Start-up: \(settings.startupRounds) starts per player after one warm-up start, alternating; each started paused with the three tracks and quit over MPRIS."
        )
    }

    /// Figures 5 and 6: CPU, context switches and memory over a paused and a playing window,
    /// both players in the same window.
    private func idle() async throws {
        let both = PlayerKind.allCases.map { sessions[$0]! }
        let seconds = Int(settings.window.inSeconds.rounded())
        let paused = try await WindowCost.measure(both, duration: settings.window)
        for session in both { try await session.settle("Playing") }
        let playing = try await WindowCost.measure(both, duration: settings.window)
        for session in both { try await session.settle("Paused") }

        func rows(_ costs: [PlayerKind: WindowCost], _ state: String) {
            var cpu = Row(figure: "CPU time over \(seconds) s \(state)", unit: "ms", better: .lower)
            var switches = Row(
                figure: "context switches over \(seconds) s \(state)", unit: "count", better: .lower, decimals: 0)
            for kind in PlayerKind.allCases {
                guard let cost = costs[kind] else { continue }
                cpu[kind] = .success(WindowCost.measure(total: cost.cpu * 1000, parts: cost.cpuParts.map { $0 * 1000 }))
                switches[kind] = .success(WindowCost.measure(total: cost.switches, parts: cost.switchesParts))
            }
            if cpu.quaver.map({ (try? $0.get().value) == 0 }) == true
                && cpu.mpv.map({ (try? $0.get().value) == 0 }) == true
            {
                cpu.ratioOverride = "both 0"
            }
            report.add(cpu)
            report.add(switches)
        }
        rows(paused, "paused")
        rows(playing, "playing")
        var rssPaused = Row(figure: "memory (VmRSS), paused with one track loaded", unit: "MiB", better: .lower)
        var rssPlaying = Row(figure: "memory (VmRSS), playing", unit: "MiB", better: .lower)
        for kind in PlayerKind.allCases {
            if let cost = paused[kind] { rssPaused[kind] = .success(Measure(Double(cost.rssKiB) / 1024)) }
            if let cost = playing[kind] { rssPlaying[kind] = .success(Measure(Double(cost.rssKiB) / 1024)) }
        }
        report.add(rssPaused)
        report.add(rssPlaying)
        report.note(
            "CPU, context switches and memory: both players measured in the same \(seconds) s window (they are independent processes on their own buses), first paused with the first track loaded, then playing; CPU is utime+stime from /proc/PID/stat (10 ms ticks), context switches are summed over /proc/PID/task/*/status (threads present at both ends plus threads born in between); memory is VmRSS at the end of each window."
        )
    }

    /// Figure 1: PlayPause → PropertiesChanged with the new PlaybackStatus.
    private func toggleLatency() async throws {
        let perRound = Int((Double(settings.toggles) / Double(settings.rounds)).rounded(.up))
        let count = perRound + perRound % 2  // even, so each round ends paused as it began
        var all: [PlayerKind: [Double]] = [:]
        var byRound: [PlayerKind: [[Double]]] = [:]
        for round in 0..<settings.rounds {
            for kind in PlayerKind.order(round: round) {
                var random = SplitMix(seed: UInt64(round + 1))  // the same think times for both players
                let run = try await sessions[kind]!.toggleLatencies(
                    count: count, thinkTime: settings.thinkTime, random: &random)
                all[kind, default: []] += run.latencies
                byRound[kind, default: []].append(run.latencies)
            }
        }
        for (label, p) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
            var row = Row(
                figure: "PlayPause → PropertiesChanged(PlaybackStatus), \(label)", unit: "ms", better: .lower,
                decimals: 2)
            for kind in PlayerKind.allCases {
                row[kind] = .success(
                    Measure(
                        value: (all[kind] ?? []).percentile(p), rounds: (byRound[kind] ?? []).map { $0.percentile(p) }))
            }
            report.add(row)
        }
        report.note(
            "PlayPause: \(count) toggles per player per round, \(settings.rounds) rounds (\(count * settings.rounds) per player), each sent after a random think time uniform in 0–\(Int(settings.thinkTime.inMilliseconds)) ms (the same sequence for both players) and timed from the call to the PropertiesChanged that carries the new PlaybackStatus. Percentiles are over all toggles; brackets give the per-round range. mpv-mpris sends property changes from a 100 ms timer (it batches them), so its latency is spread evenly over 0–100 ms by design."
        )
    }

    /// Figure 2: GetAll(org.mpris.MediaPlayer2.Player) answered per second, several in flight,
    /// and the player's CPU time per call (which does not depend on who else needs the CPU).
    private func getAllThroughput() async throws {
        var rates: [PlayerKind: [Double]] = [:]
        var cpuPerCall: [PlayerKind: [Double]] = [:]
        var shares: [PlayerKind: [String]] = [:]
        for round in 0..<settings.rounds {
            for kind in PlayerKind.order(round: round) {
                let session = sessions[kind]!
                let pids = [try session.pid, session.bus.process.pid, getpid()]
                let before = try pids.map { try ProcessProbe.Sample(of: $0) }
                let run = try await session.getAllRun(
                    duration: settings.getallDuration, inFlight: settings.getallInFlight)
                let after = try pids.map { try ProcessProbe.Sample(of: $0) }
                let cpu = zip(after, before).map { $0.cpuSeconds(since: $1) }
                rates[kind, default: []].append(Double(run.calls) / run.elapsed.inSeconds)
                cpuPerCall[kind, default: []].append(cpu[0] / Double(run.calls) * 1e6)
                let percent = cpu.map { Int(($0 / run.elapsed.inSeconds * 100).rounded()) }
                shares[kind, default: []].append(
                    "player \(percent[0]) %, dbus-daemon \(percent[1]) %, client \(percent[2]) %")
            }
        }
        var row = Row(
            figure: "GetAll(Player) answered per second, \(settings.getallInFlight) in flight", unit: "calls/s",
            better: .higher, decimals: 0)
        var cpuRow = Row(figure: "player CPU time per GetAll(Player)", unit: "µs", better: .lower, decimals: 1)
        for kind in PlayerKind.allCases {
            row[kind] = .success(Measure(rounds: rates[kind] ?? []))
            cpuRow[kind] = .success(Measure(rounds: cpuPerCall[kind] ?? []))
        }
        report.add(row)
        report.add(cpuRow)
        report.note(
            "GetAll: \(settings.rounds) runs of \(settings.getallDuration.inSeconds) s per player, paused, \(settings.getallInFlight) calls always in flight from the one benchmark client. The player, its dbus-daemon and the client share the machine's \(ProcessInfo.processInfo.activeProcessorCount) cores, so calls per second is what the three manage together; the player's own CPU time per call is the player's cost alone. CPU, in % of one core, per run: "
                + PlayerKind.allCases.map { "\($0.title): \((shares[$0] ?? []).joined(separator: "; "))" }.joined(
                    separator: ". ") + ".")
    }

    /// Figure 3: Seek → Seeked.
    private func seekLatency() async throws {
        var all: [PlayerKind: [Double]] = [:]
        var byRound: [PlayerKind: [[Double]]] = [:]
        var cpuPerSeek: [PlayerKind: [Double]] = [:]
        for round in 0..<settings.rounds {
            for kind in PlayerKind.order(round: round) {
                let run = try await sessions[kind]!.seekLatencies(count: settings.seeks)
                all[kind, default: []] += run.latencies
                byRound[kind, default: []].append(run.latencies)
                cpuPerSeek[kind, default: []].append(run.cpu / Double(settings.seeks) * 1e3)
            }
        }
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            var row = Row(figure: "Seek → Seeked, \(label)", unit: "ms", better: .lower, decimals: 2)
            for kind in PlayerKind.allCases {
                row[kind] = .success(
                    Measure(
                        value: (all[kind] ?? []).percentile(p), rounds: (byRound[kind] ?? []).map { $0.percentile(p) }))
            }
            report.add(row)
        }
        var cpuRow = Row(figure: "player CPU time per Seek (playing)", unit: "ms", better: .lower, decimals: 2)
        for kind in PlayerKind.allCases { cpuRow[kind] = .success(Measure(rounds: cpuPerSeek[kind] ?? [])) }
        report.add(cpuRow)
        report.note(
            "Seek: \(settings.seeks) seeks per player per round, \(settings.rounds) rounds, while playing: SetPosition to 20 s, then relative seeks of alternately +5 s and −5 s, each sent once the previous Seeked arrived."
        )
    }

    /// Figure 7: two halves of one sine rendered back to back; samples inserted or lost.
    private func gapless() async throws {
        let folder = programs.workDir.appendingPathComponent("gapless")
        let source = try await Gapless.prepare(programs: programs, folder: folder)
        var joint = Row(
            figure: "gapless: samples inserted (+) or lost (−) at the joint", unit: "samples", better: .neither,
            decimals: 0, ratioOverride: "–")
        var length = Row(
            figure: "gapless: rendered length − expected length", unit: "samples", better: .neither, decimals: 0,
            ratioOverride: "–")
        for kind in PlayerKind.allCases {
            let output = folder.appendingPathComponent("rendered-\(kind.rawValue).wav")
            do {
                let session = try await PlayerSession(kind, programs: programs, label: "gapless")
                defer { session.close() }
                if kind == .quaver {
                    try await Gapless.renderQuaver(session, programs: programs, source: source, output: output)
                } else {
                    try await Gapless.renderMPV(
                        programs: programs, environment: session.environment, source: source, output: output,
                        log: session.logFile)
                }
                let analysis = try Gapless.analyseRendering(output, source: source)
                joint[kind] = .success(Measure(Double(analysis.inserted)))
                length[kind] = .success(Measure(Double(analysis.renderedSamples - analysis.expectedSamples)))
                report.note("Gapless, \(kind.title): \(analysis.summary).")
            } catch let error as HarnessError {
                joint[kind] = .failure(error)
                length[kind] = .failure(error)
                report.problem("gapless, \(kind.title): \(error)")
            }
        }
        report.add(joint)
        report.add(length)
        report.note(
            "Gapless: a \(Gapless.frequency) Hz sine with quiet white noise mixed in (so that aligning it is unambiguous), \(source.reference.count) samples (44.1 kHz mono, S16LE) made by gst-launch-1.0 audiotestsrc, split at sample \(source.splitAt) into two FLAC files (each checked to decode back to exactly its samples), rendered by Quaver into audioconvert ! wavenc ! filesink and by mpv with --ao=pcm --gapless-audio=yes; the rendered file is aligned with the sine near its start and near its end, and the difference of the two alignments is what was inserted or lost at the joint (the analysis is first checked on copies damaged on purpose: silence inserted, samples dropped, padding at the start). Whether each rendered WAV header was finalized is given above."
        )
    }

    /// Figure 8: instructions per PlayPause round trip under callgrind.
    private func callgrind() async throws {
        let folder = programs.workDir.appendingPathComponent("callgrind")
        let preparation = try await Callgrind.prepare(programs: programs, folder: folder)
        var perToggle = Row(
            figure: "instructions per PlayPause round trip (callgrind)", unit: "instructions", better: .lower,
            decimals: 0)
        var playing = Row(
            figure: "instructions per second of playback (callgrind)", unit: "instructions/s", better: .lower,
            decimals: 0)
        for kind in PlayerKind.allCases {
            do {
                let session = try await PlayerSession(kind, programs: programs, label: "callgrind")
                defer { session.close() }
                let result: Callgrind.Result
                do {
                    result = try await Callgrind.measure(
                        session, programs: programs, preparation: preparation, folder: folder,
                        toggles: settings.callgrindToggles)
                } catch {
                    await session.stop(timeout: .seconds(60))
                    throw error
                }
                await session.stop(timeout: .seconds(60))
                perToggle[kind] = .success(Measure(result.perToggle))
                playing[kind] = .success(Measure(result.playingPerSecond))
                report.note(
                    "Callgrind, \(kind.title): \(result.toggles) toggles in \(String(format: "%.1f", result.window.inSeconds)) s (\(String(format: "%.1f", result.playing.inSeconds)) s of it playing): \(report.format(Double(result.withToggles), 0)) instructions, the same window paused \(report.format(Double(result.idle), 0)), playing \(report.format(result.playingPerSecond, 0)) per second; dump \(result.toggleDump.path)."
                )
            } catch let error as HarnessError {
                perToggle[kind] = .failure(error)
                playing[kind] = .failure(error)
                report.problem("callgrind, \(kind.title): \(error)")
            }
        }
        report.add(perToggle)
        report.add(playing)
        report.note(
            "Callgrind: each player under valgrind --tool=callgrind on its own bus, 10 warm-up toggles, then counters zeroed (callgrind_control -z), \(settings.callgrindToggles) toggles back to back, dumped (-d); zeroed again, the same window paused, dumped; (with toggles − paused) / toggles. The toggles run back to back, so the player hardly plays in between (the time it did is given above; at the rate of the playing row it is negligible). The second row is a further window with the player playing. Quaver runs as a copy without debug info (valgrind 3.19 cannot read Swift's DWARF 5) with a sigsuspend shim preloaded (valgrind 3.19 writes into the read-only signal mask dispatch_main passes to rt_sigsuspend and crashes)."
        )
    }
}

/// The work folder (`path`, or `name` in the temporary folder), emptied of the previous run
/// (but never a folder quaver-bench did not make) and marked as quaver-bench's.
func prepareWorkDir(_ path: String?, default name: String) throws -> URL {
    let workDir = URL(fileURLWithPath: path ?? FileManager.default.temporaryDirectory.appendingPathComponent(name).path)
    let marker = workDir.appendingPathComponent(".quaver-bench")
    let existing = (try? FileManager.default.contentsOfDirectory(atPath: workDir.path)) ?? []
    if !existing.isEmpty {
        guard FileManager.default.fileExists(atPath: marker.path) else {
            throw HarnessError("\(workDir.path) is not empty and was not made by quaver-bench; pass another --work-dir")
        }
        try FileManager.default.removeItem(at: workDir)
    }
    try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    touch(marker)
    return workDir
}
