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

    /// Length of the playing window.
    @Option(help: "Seconds of playing over which CPU ticks and context switches are counted.")
    var footprintWindow = 60.0

    /// Leaves out the pass through a sound server.
    @Flag(help: "Measure into fakesink only, not also into pulsesink on a private PipeWire session.")
    var footprintNoServer = false

    /// Tracks in the big queue.
    @Option(help: "Tracks in the big queue (hard links of the one FLAC in a folder; 0: leave it out).")
    var footprintQueue = 100_000

    /// Rejects settings that cannot be measured.
    func check() throws {
        guard footprintStarts >= 1, footprintWindow >= 1, footprintQueue >= 0 else {
            throw ValidationError(
                "--footprint-starts and --footprint-window must be at least 1, --footprint-queue not negative")
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
            window: .milliseconds(Int(footprintWindow * 1000)), queue: footprintQueue,
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
    /// The playing window.
    var window: Duration
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
    /// At the end of the playing window, from /proc/PID/smaps_rollup, in KiB.
    var rss: UInt64?
    var pss: UInt64?
    var anonymous: UInt64?
    /// utime + stime over the playing window, in clock ticks.
    var cpuTicks: UInt64?
    /// Context switches of all its threads over the playing window.
    var switches: UInt64?
    /// Threads at the end of the playing window.
    var threads: Int?
    /// VmRSS with the big queue loaded, paused, in KiB; and start to Playing with it, in ms.
    var queueRSS: UInt64?
    var queuePlaying: Double?
    /// Rss and Pss by mapped file (or [heap], [anon]), in KiB, at the end of the window.
    var mappings: [(name: String, rss: UInt64, pss: UInt64)] = []
    /// What went wrong.
    var problems: [String] = []
}

/// Quaver's footprint beside GStreamer's floor: the same FLAC into `fakesink sync=true`,
/// measured in the same run. Prints a markdown table of its own.
@MainActor
final class FootprintBenchmark {
    let settings: FootprintSettings
    private var programs: Programs!
    private var rows: [FootprintRow] = []
    private var notes: [String] = []
    private var queueFolder: URL?
    /// The same track without ReplayGain tags, which Quaver measures while it plays it.
    private var untaggedTrack: String?

    /// Prepares a run; `run()` does the work.
    init(_ settings: FootprintSettings) { self.settings = settings }

    /// Sets up, measures the floor and every build, and returns the markdown.
    func run() async throws -> String {
        let began = ContinuousClock.now
        try await setUp()
        let main = try quaverBinary(settings.quaver)
        let builds = [("Quaver", main)] + settings.builds.map { ("Quaver (\($0.0))", $0.1) }
        for sink in settings.sinks {
            // Start-up and the big queue do not depend on the output: timed in the first pass.
            let first = sink == settings.sinks.first
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
            rows.append(await floor(sink: sink, environment: environment, timeStarts: first))
            for (label, path) in builds {
                rows.append(
                    await quaver(label: label, binary: path, sink: sink, environment: environment, timeStarts: first))
            }
            if sink == .fake, let untaggedTrack {
                rows.append(
                    await quaver(
                        label: "Quaver, a track without ReplayGain tags (measured as it plays)", binary: main,
                        sink: sink, environment: environment, timeStarts: false, track: untaggedTrack))
            }
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
        let seconds = Int(settings.window.inSeconds.rounded(.up)) + 10
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
        let load =
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
                separator: " ") ?? "?"
        notes.append("The machine's load average (1, 5, 15 min) before the first measurement: \(load).")
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

    // MARK: The floor

    /// gst-launch-1.0 playing the same file into the same sink: GStreamer alone.
    private func floor(sink: FootprintSink, environment extra: [String: String], timeStarts: Bool) async
        -> FootprintRow
    {
        var row = FootprintRow(label: "gst-launch-1.0 playbin (the floor)", sink: sink)
        let command = [
            programs.gstLaunch, "playbin", "uri=" + URL(fileURLWithPath: programs.tracks[0]).absoluteString,
            "audio-sink=\(sink.element)",
        ]
        var environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": programs.gstRegistry]) { $1 }
        environment.merge(extra) { $1 }
        let starts = timeStarts ? settings.starts : 0
        log("gst-launch-1.0 into \(sink.rawValue): \(starts) starts and a playing window")
        for round in -1..<starts {
            do {
                let launched = try LineWatcher(command, environment: environment)
                let playing = try await launched.wait(forLineContaining: "New clock", timeout: .seconds(20))
                if round >= 0 { row.starts.append(playing.inMilliseconds) }
                if round == starts - 1 { try await measureWindow(pid: launched.pid, into: &row) }
                launched.kill()
            } catch {
                row.problems.append("gst-launch-1.0: \(error)")
                break
            }
        }
        return row
    }

    // MARK: Quaver

    private func quaver(
        label: String, binary: String, sink: FootprintSink, environment: [String: String], timeStarts: Bool,
        track: String? = nil
    ) async -> FootprintRow {
        var row = FootprintRow(label: label, sink: sink)
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            row.problems.append("no quaver binary at \(binary)")
            return row
        }
        var programs = self.programs!
        programs.quaver = binary
        if let track { programs.tracks = [track] }
        let starts = timeStarts ? settings.starts : 0
        log(
            "\(label) into \(sink.rawValue): \(starts) starts, a playing window\(timeStarts ? " and the big queue" : "")"
        )
        do {
            let session = try await PlayerSession(.quaver, programs: programs, label: "footprint-\(rows.count)")
            defer { session.close() }
            for round in -1..<starts {
                let times = try await session.start(programs.daemonCommand(.quaver, paused: true))
                await session.stop()
                if round >= 0 { row.starts.append(times.owned.inMilliseconds) }
            }
            let command = programs.daemonCommand(.quaver, paused: false).map {
                $0 == FootprintSink.fake.element ? sink.element : $0
            }
            try await session.start(command, environment: environment)
            try await session.settle("Playing")
            try await measureWindow(pid: try session.pid, into: &row)
            await session.stop()
            if timeStarts, let queueFolder {
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
            }
        } catch {
            row.problems.append("\(label): \(error)")
        }
        return row
    }

    // MARK: Measuring

    /// 2 s to settle, then CPU ticks over the window and memory at its end.
    private func measureWindow(pid: Int32, into row: inout FootprintRow) async throws {
        try await Task.sleep(for: .seconds(2))
        let before = try ProcessProbe.Sample(of: pid)
        try await Task.sleep(for: settings.window)
        let after = try ProcessProbe.Sample(of: pid)
        row.cpuTicks = after.cpuTicks &- before.cpuTicks
        row.switches = after.contextSwitches(since: before)
        row.threads = after.switchesByThread.count
        guard let rollup = ProcessProbe.read("smaps_rollup", of: pid) else {
            throw HarnessError("cannot read /proc/\(pid)/smaps_rollup")
        }
        row.rss = ProcessProbe.field("Rss", in: rollup)
        row.pss = ProcessProbe.field("Pss", in: rollup)
        row.anonymous = ProcessProbe.field("Anonymous", in: rollup)
        row.mappings = try Self.mappings(pid: pid)
    }

    /// Rss and Pss summed by what is mapped: a file's name, `[heap]`, `[stack]`, or `[anon]`
    /// for anonymous mappings without a name. Largest first.
    static func mappings(pid: Int32) throws -> [(name: String, rss: UInt64, pss: UInt64)] {
        guard let text = ProcessProbe.read("smaps", of: pid) else {
            throw HarnessError("cannot read /proc/\(pid)/smaps")
        }
        var sums: [String: (rss: UInt64, pss: UInt64)] = [:]
        var current = "[anon]"
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-") && !first.hasSuffix(":") {
                // A mapping's header: address perms offset device inode [path].
                current =
                    fields.count >= 6
                    ? (fields[5...].joined(separator: " ").split(separator: "/").last.map(String.init) ?? "[anon]")
                    : "[anon]"
            } else if first == "Rss:", fields.count >= 2, let value = UInt64(fields[1]) {
                sums[current, default: (0, 0)].rss += value
            } else if first == "Pss:", fields.count >= 2, let value = UInt64(fields[1]) {
                sums[current, default: (0, 0)].pss += value
            }
        }
        return sums.map { (name: $0.key, rss: $0.value.rss, pss: $0.value.pss) }.sorted { $0.rss > $1.rss }
    }

    // MARK: Report

    private func markdown() -> String {
        func mib(_ kib: UInt64?) -> String { kib.map { String(format: "%.1f", Double($0) / 1024) } ?? "–" }
        func middle(_ values: [Double]) -> Double? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
        }
        func median(_ values: [Double]) -> String {
            guard let value = middle(values), let low = values.min(), let high = values.max() else { return "–" }
            return String(format: "%.1f [%.1f–%.1f]", value, low, high)
        }
        func ratio(_ value: Double?, _ floor: Double?) -> String {
            guard let value, let floor, floor > 0 else { return "–" }
            return String(format: "%.2f", value / floor)
        }
        let seconds = settings.window.inSeconds
        func perSecond(_ switches: UInt64?) -> Double? { switches.map { Double($0) / seconds } }
        var text =
            "| program | sink | RSS (MiB) | × floor | PSS (MiB) | anonymous (MiB) | start → name owned / PLAYING (ms) | × floor | CPU ticks over \(Int(seconds)) s playing | × floor | context switches / s | × floor | threads | \(settings.queue)-track queue: RSS (MiB) | start → Playing with it (ms) |\n"
        text += "| --- | --- |" + String(repeating: " ---: |", count: 13) + "\n"
        for row in rows {
            let floor = rows.first { $0.sink == row.sink }
            let startFloor = rows.first { !$0.starts.isEmpty }
            text += "| \(row.label) | \(row.sink.rawValue) | \(mib(row.rss)) | "
            text +=
                "\(ratio(row.rss.map(Double.init), floor?.rss.map(Double.init))) | \(mib(row.pss)) | \(mib(row.anonymous)) | "
            text += "\(median(row.starts)) | \(ratio(middle(row.starts), startFloor.flatMap { middle($0.starts) })) | "
            text += "\(row.cpuTicks.map(String.init) ?? "–") | "
            text += "\(ratio(row.cpuTicks.map(Double.init), floor?.cpuTicks.map(Double.init))) | "
            text += "\(perSecond(row.switches).map { String(format: "%.1f", $0) } ?? "–") | "
            text +=
                "\(ratio(perSecond(row.switches), perSecond(floor?.switches))) | \(row.threads.map(String.init) ?? "–") | "
            text += "\(mib(row.queueRSS)) | \(row.queuePlaying.map { String(format: "%.0f", $0) } ?? "–") |\n"
        }
        text +=
            "\nResident by mapping at the end of the playing window (Rss / Pss in MiB; the 14 largest, then the rest together):\n\n"
        text += "| mapping | " + rows.map { "\($0.label), \($0.sink.rawValue)" }.joined(separator: " | ") + " |\n"
        text += "| --- |" + String(repeating: " ---: |", count: rows.count) + "\n"
        var names: [String] = []
        for row in rows {
            for mapping in row.mappings.prefix(14) where !names.contains(mapping.name) { names.append(mapping.name) }
        }
        for name in names {
            text +=
                "| \(name) | "
                + rows.map { row in
                    row.mappings.first { $0.name == name }.map { "\(mib($0.rss)) / \(mib($0.pss))" } ?? "–"
                }.joined(separator: " | ") + " |\n"
        }
        text +=
            "| the rest | "
            + rows.map { row in
                let rest = row.mappings.filter { !names.contains($0.name) }
                return "\(mib(rest.map(\.rss).reduce(0, +))) / \(mib(rest.map(\.pss).reduce(0, +)))"
            }.joined(separator: " | ") + " |\n"
        text += "\nHow:\n\n"
        text +=
            "- The floor is `gst-launch-1.0 playbin uri=FILE audio-sink=SINK` on the same FLAC, 10 s longer than the settling and the window together; Quaver is `quaver --no-resume --audio-sink SINK FILE` on a private dbus-daemon with its own HOME, with its defaults (ReplayGain on, the progress watch running). The FLAC carries ReplayGain tags (a track gain of -6 dB), which Quaver applies; the row of the same track without them shows what measuring it as it plays costs (once per track: the gain is kept for its later plays). SINK is `fakesink sync=true`, then `pulsesink` on a private PipeWire session (pipewire, WirePlumber, pipewire-pulse with a null sink) that both programs play to; × floor is to the floor on the same sink.\n"
        text +=
            "- Start: from just before the process starts to its bus name owned (Quaver, started with `--paused`) or to `New clock` on gst-launch's output (PLAYING reached); \(settings.starts) starts each after a warm-up start; median [lowest–highest].\n"
        text +=
            "- Memory: /proc/PID/smaps_rollup (Rss, Pss, Anonymous) after 2 s of playing and the \(Int(settings.window.inSeconds)) s window; CPU: utime + stime from /proc/PID/stat over the window (\(Int(ProcessProbe.ticksPerSecond)) ticks a second); context switches: voluntary and involuntary, summed over /proc/PID/task/*/status over the window; threads: /proc/PID/task at its end.\n"
        if settings.queue > 0 {
            text +=
                "- Queue: a folder of \(settings.queue) hard links of the FLAC (named `000000.flac` on), named on the command line; start → PlaybackStatus Playing, and VmRSS once Quaver has logged `queue loaded:`, paused, 1 s later.\n"
        }
        text += "\nNotes:\n\n" + notes.map { "- \($0)\n" }.joined()
        let problems = rows.flatMap(\.problems)
        if !problems.isEmpty { text += "\nProblems:\n\n" + problems.map { "- \($0)\n" }.joined() }
        return text
    }
}

/// A program whose output is read line by line, each line stamped when read.
@MainActor
final class LineWatcher {
    private let process: ChildProcess
    private let started = ContinuousClock.now
    private var received: [(line: String, time: ContinuousClock.Instant)] = []
    private var exited = false
    private let waiter = Waiter()

    init(_ command: [String], environment: [String: String]) throws {
        process = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment, output: .pipe)
        process.readLinesOnMainActor { [weak self] line, time in
            self?.received.append((line, time))
            self?.waiter.poke()
        }
        process.onExitOnMainActor { [weak self] _ in
            self?.exited = true
            self?.waiter.poke()
        }
    }

    var pid: Int32 { process.pid }

    /// The time from the start to the first line containing `needle`.
    func wait(forLineContaining needle: String, timeout: Duration) async throws -> Duration {
        let found = { [unowned self] in received.first { $0.line.contains(needle) } }
        guard await waiter.wait(timeout: timeout, until: { found() != nil || self.exited }), let line = found() else {
            let program = URL(fileURLWithPath: process.executable).lastPathComponent
            throw HarnessError(exited ? "\(program) exited before '\(needle)'" : "no '\(needle)' within \(timeout)")
        }
        return line.time - started
    }

    func kill() { process.killAndWait() }
}
