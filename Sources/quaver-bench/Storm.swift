import ArgumentParser
import DBus
import Foundation
import SeededRandom
import TestKit

/// The options of the storm benchmark (`quaver-bench --storm`).
struct StormOptions: ParsableArguments {
    /// Runs the storm instead of the comparison with mpv.
    @Flag(
        help: """
            Instead of the comparison with mpv: measure how quickly Quaver answers D-Bus while a driver client sends \
            Next, Previous and OpenUri many times a second and --storm-readers clients read Player properties back to \
            back, once with silent real-time output and once with a slow output (--storm-sink). --quaver, --work-dir \
            and --output apply; the comparison's other options do not.
            """)
    var storm = false

    /// Length of each storm.
    @Option(help: "Length of each storm, in seconds.")
    var stormSeconds = 20.0

    /// Reader clients in each storm.
    @Option(help: "Reader clients, each on its own bus connection with one call in flight.")
    var stormReaders = 32

    /// Mean rate of the driver's commands.
    @Option(
        help: "Commands per second from the driver, on average (random gaps; Next, Previous and OpenUri at random).")
    var stormRate = 20.0

    /// How long a call may wait for its reply.
    @Option(help: "Seconds a call may wait for its reply before it counts as unanswered.")
    var stormTimeout = 5.0

    /// Seed of the driver's choices.
    @Option(help: "Seed of the driver's random commands, gaps and OpenUri targets (the same seed, the same storm).")
    var stormSeed = 1

    /// Tracks in the queue Quaver starts with.
    @Option(help: "Tracks in the queue (generated FLAC, 0.5 s each).")
    var stormTracks = 20

    /// The output of the slow variant.
    @Option(help: "Output of the slow variant: a GStreamer sink description that takes its time over every buffer.")
    var stormSink = "identity sleep-time=2000000 ! fakesink sync=false"

    /// Variants to run; empty means all.
    @Option(
        help: ArgumentHelp(
            "Run only this variant (repeatable): normal (fakesink sync=true), slow (--storm-sink) or stuck (a sink that never takes a buffer). Default: all three.",
            valueName: "variant"))
    var stormVariant: [StormVariant] = []

    /// Rejects settings that cannot make a storm.
    func check() throws {
        guard stormSeconds >= 1, stormTimeout > 0, stormRate > 0 else {
            throw ValidationError("--storm-seconds must be at least 1, --storm-timeout and --storm-rate positive")
        }
        guard stormReaders >= 0, stormTracks >= 2 else {
            throw ValidationError("--storm-readers must not be negative, --storm-tracks at least 2")
        }
    }

    /// The settings as the main actor takes them.
    func settings(quaver: String?, workDir: String?) -> StormSettings {
        StormSettings(
            quaver: quaver, workDir: workDir, duration: .milliseconds(Int(stormSeconds * 1000)), readers: stormReaders,
            rate: stormRate, timeout: .milliseconds(Int(stormTimeout * 1000)),
            seed: UInt64(truncatingIfNeeded: stormSeed),
            tracks: stormTracks, slowSink: stormSink,
            variants: stormVariant.isEmpty ? StormVariant.allCases : StormVariant.allCases.filter(stormVariant.contains)
        )
    }
}

/// The storm's options, checked.
struct StormSettings: Sendable {
    /// The quaver binary; nil: the one beside quaver-bench.
    var quaver: String?
    /// The scratch folder; nil: quaver-bench-storm in the temporary folder.
    var workDir: String?
    /// Length of each storm.
    var duration: Duration
    /// Reader clients.
    var readers: Int
    /// Driver commands per second, on average.
    var rate: Double
    /// How long a call may wait for its reply.
    var timeout: Duration
    /// Seed of the driver's choices.
    var seed: UInt64
    /// Tracks in the queue.
    var tracks: Int
    /// The slow variant's sink.
    var slowSink: String
    /// The variants to run, in order.
    var variants: [StormVariant]
}

/// The output Quaver plays into during a storm.
enum StormVariant: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Silent output that keeps real time, as in the other benchmarks.
    case normal
    /// An output that blocks on every buffer, so that the pipeline's state changes wait on it.
    case slow
    /// An output that never takes its first buffer (a sound server that stopped taking
    /// audio): no track ever starts, and every pipeline sticks.
    case stuck

    /// The `--audio-sink` value.
    func sink(_ settings: StormSettings) -> String {
        switch self {
        case .normal: "fakesink sync=true"
        case .slow: settings.slowSink
        case .stuck: "identity sleep-time=3600000000 ! fakesink sync=false"
        }
    }
}

/// One kind of call a storm client sends.
struct StormCall: Sendable {
    /// The name in the tables.
    var name: String
    /// The D-Bus interface.
    var interface: String
    /// The method.
    var member: String
    /// The arguments.
    var arguments: [Value]
    /// A driver command (the rest are reads).
    var isCommand: Bool

    /// Reads a Player property.
    static func get(_ property: String) -> StormCall {
        StormCall(
            name: "Get(\(property))", interface: MPRISNames.properties, member: "Get",
            arguments: [.string(MPRISNames.player), .string(property)], isCommand: false)
    }

    /// What every reader cycles through.
    static let reads = [
        get("PlaybackStatus"), get("Position"), get("Metadata"),
        StormCall(
            name: "GetAll(Player)", interface: MPRISNames.properties, member: "GetAll",
            arguments: [.string(MPRISNames.player)],
            isCommand: false),
    ]
    /// Skips to the next track.
    static let next = StormCall(
        name: "Next", interface: MPRISNames.player, member: "Next", arguments: [], isCommand: true)
    /// Goes back a track.
    static let previous = StormCall(
        name: "Previous", interface: MPRISNames.player, member: "Previous", arguments: [], isCommand: true)

    /// Opens `uri` (Quaver queues it after the current track and plays it).
    static func openURI(_ uri: String) -> StormCall {
        StormCall(
            name: "OpenUri", interface: MPRISNames.player, member: "OpenUri", arguments: [.string(uri)], isCommand: true
        )
    }
}

/// The replies to one kind of call (or a group of kinds) in one storm.
@MainActor
final class StormTally {
    /// Calls sent.
    var sent = 0
    /// Milliseconds from sending to the reply, for each call answered without an error.
    var latencies: [Double] = []
    /// Calls that got no reply within the timeout (libdbus answers them itself with NoReply).
    var timedOut = 0
    /// Error replies, by error name.
    var errors: [String: Int] = [:]

    /// Error replies in all.
    var errorCount: Int { errors.values.reduce(0, +) }

    /// The sum of `tallies`.
    static func merged(_ tallies: [StormTally]) -> StormTally {
        let sum = StormTally()
        for tally in tallies {
            sum.sent += tally.sent
            sum.latencies += tally.latencies
            sum.timedOut += tally.timedOut
            sum.errors.merge(tally.errors, uniquingKeysWith: +)
        }
        return sum
    }
}

/// What one storm measured.
@MainActor
struct StormRun {
    /// Which output.
    var variant: StormVariant
    /// Its `--audio-sink` value.
    var sink: String
    /// By call name, in order of first use.
    var tallies: [(name: String, isCommand: Bool, tally: StormTally)] = []
    /// From the first call sent to the last reply (or timeout) received.
    var elapsed: Duration = .zero
    /// Seconds of CPU of Quaver, its dbus-daemon and the benchmark client over the storm.
    var cpu: [Double] = []
    /// The most driver commands waiting for their replies at one moment.
    var maxCommandsInFlight = 0
    /// The latest a command went out after its scheduled moment, in milliseconds.
    var maxDriverLateness = 0.0
    /// Sentences for the notes.
    var observations: [String] = []
    /// What went wrong outside the figures.
    var problems: [String] = []

    /// The tally of `call`, made on first use.
    mutating func tally(_ call: StormCall) -> StormTally {
        if let found = tallies.first(where: { $0.name == call.name }) { return found.tally }
        let tally = StormTally()
        tallies.append((call.name, call.isCommand, tally))
        return tally
    }

    /// The driver's calls together.
    var commands: StormTally { StormTally.merged(tallies.filter(\.isCommand).map(\.tally)) }
    /// The readers' calls together.
    var reads: StormTally { StormTally.merged(tallies.filter { !$0.isCommand }.map(\.tally)) }
    /// Every call.
    var all: StormTally { StormTally.merged(tallies.map(\.tally)) }
}

/// Quaver under a storm: a driver client sends Next, Previous and OpenUri many times a second
/// while reader clients read Player properties as fast as they are answered; every reply's
/// latency is recorded. Prints a markdown table of its own.
@MainActor
final class StormBenchmark {
    /// Quaver's default name, as a desktop sees it.
    static let busName = "org.mpris.MediaPlayer2.quaver"

    /// The options.
    let settings: StormSettings
    /// The programs and the generated tracks.
    private var programs: Programs!
    /// One per variant, in order.
    private var runs: [StormRun] = []
    /// Sentences for the notes that concern every storm.
    private var notes: [String] = []

    /// Prepares a run; `run()` does the work.
    init(_ settings: StormSettings) { self.settings = settings }

    /// Sets up, runs every variant and returns the markdown.
    func run() async throws -> String {
        let began = ContinuousClock.now
        try await setUp()
        for variant in settings.variants {
            log(
                "storm with \(variant.rawValue) output: \(settings.duration), \(settings.readers) readers, \(settings.rate) commands/s"
            )
            runs.append(await storm(variant))
        }
        let took = Int((ContinuousClock.now - began).inSeconds.rounded())
        notes.append("The run took \(took) s; work files and Quaver's logs in \(programs.workDir.path).")
        return markdown()
    }

    // MARK: Set-up

    /// Finds the programs, empties the work folder and generates the queue.
    private func setUp() async throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let quaver = settings.quaver ?? me.deletingLastPathComponent().appendingPathComponent("quaver").path
        guard FileManager.default.isExecutableFile(atPath: quaver) else {
            throw HarnessError("no quaver binary at \(quaver) (build it, or pass --quaver)")
        }
        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench-storm")
        programs = Programs(
            quaver: quaver, mpv: "", mprisPlugin: "", gstLaunch: "", tracks: [],
            workDir: workDir)
        log("generating \(settings.tracks) tagged FLAC tracks of 0.5 s")
        programs.tracks = try await Tools.makeTestTracks(
            quaver, into: workDir.appendingPathComponent("tracks"),
            ["--track-count", String(settings.tracks), "--track-seconds", "0.5"], registry: programs.gstRegistry)
        guard programs.tracks.count == settings.tracks else {
            throw HarnessError("quaver --make-test-tracks did not make \(settings.tracks) tracks: \(programs.tracks)")
        }
        let version = try await Tools.run([quaver, "--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let load = loadAverage()
        notes.append(
            "Quaver \(version) (\(quaver)), started as `quaver --no-resume --audio-sink SINK TRACK…` with \(settings.tracks) generated tagged FLAC tracks of 0.5 s, on a private dbus-daemon with its own HOME and XDG folders; the machine's load average (1, 5, 15 min) before the first storm: \(load)."
        )
    }

    /// The machine's load average over 1, 5 and 15 minutes: other work shares the cores.
    private func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
            separator: " ") ?? "?"
    }

    // MARK: One storm

    /// Starts Quaver playing into the variant's sink, storms it and stops it.
    private func storm(_ variant: StormVariant) async -> StormRun {
        var run = StormRun(variant: variant, sink: variant.sink(settings))
        let session: PlayerSession
        do {
            session = try await PlayerSession(
                .quaver, programs: programs, label: "storm-\(variant.rawValue)", busName: Self.busName)
        } catch {
            run.problems.append("making the private bus: \(error)")
            return run
        }
        defer { session.close() }
        var readers: [Connection] = []
        defer { for reader in readers { reader.close() } }
        do {
            try await session.start([programs.quaver, "--no-resume", "--audio-sink", run.sink] + programs.tracks)
            try await session.waitForTrack()
            // Looping keeps it playing whatever the commands do to the queue.
            try await session.set("LoopStatus", .string("Playlist"))
            if variant == .stuck {
                // Nothing ever plays: the storm begins once Play is answered.
                _ = try await session.call("Play")
            } else {
                try await session.settle("Playing", timeout: .seconds(30))
            }
            readers = try (0..<settings.readers).map { _ in try Connection(address: session.bus.address) }
        } catch {
            run.problems.append("starting Quaver playing into `\(run.sink)`: \(error); see \(session.logFile.path)")
            await session.stop()
            return run
        }

        let pids = [(try? session.pid) ?? 0, session.bus.process.pid, getpid()]
        let before = pids.map { try? ProcessProbe.Sample(of: $0) }
        let start = ContinuousClock.now
        let end = start + settings.duration
        let box = StormBox(run)
        let readerTasks = readers.enumerated().map { index, connection in
            Task { @MainActor in await self.read(connection, first: index, until: end, into: box) }
        }
        await drive(session.client, from: start, until: end, into: box)
        for task in readerTasks { await task.value }
        run = box.run
        run.elapsed = ContinuousClock.now - start
        run.observations.append("load average at its end \(loadAverage())")
        let after = pids.map { try? ProcessProbe.Sample(of: $0) }
        run.cpu = zip(after, before).map { now, then in
            guard let now, let then else { return .nan }
            return now.cpuSeconds(since: then)
        }

        await afterStorm(session, into: &run)
        return run
    }

    /// Sends one call on `connection` and records its reply in `tally`; returns whether it
    /// was answered without an error.
    @discardableResult
    private func send(_ call: StormCall, on connection: Connection, into tally: StormTally) async -> Bool {
        tally.sent += 1
        let sent = ContinuousClock.now
        do {
            _ = try await connection.call(
                destination: Self.busName, path: MPRISNames.path, interface: call.interface, member: call.member,
                arguments: call.arguments, timeout: settings.timeout)
            tally.latencies.append((ContinuousClock.now - sent).inMilliseconds)
            return true
        } catch {
            if error.name == .noReply || error.name == .timeout {
                tally.timedOut += 1
            } else {
                tally.errors[error.name.rawValue, default: 0] += 1
            }
            return false
        }
    }

    /// One reader: the next read as soon as the previous one is answered, cycling through
    /// `StormCall.reads` from a different place for each reader.
    private func read(_ connection: Connection, first: Int, until end: ContinuousClock.Instant, into box: StormBox)
        async
    {
        var index = first % StormCall.reads.count
        while ContinuousClock.now < end {
            let call = StormCall.reads[index]
            let answered = await send(call, on: connection, into: box.run.tally(call))
            // An error comes back at once: pausing keeps a failing player from turning the
            // reader into a busy loop that starves the others.
            if !answered { try? await Task.sleep(for: .milliseconds(10)) }
            index = (index + 1) % StormCall.reads.count
        }
    }

    /// The driver: commands at random moments (gaps uniform around the mean of the rate),
    /// each sent without waiting for the earlier ones, as media keys and widgets do; returns
    /// once every command is answered or timed out.
    private func drive(
        _ connection: Connection, from start: ContinuousClock.Instant, until end: ContinuousClock.Instant,
        into box: StormBox
    ) async {
        var random = SplitMix(seed: settings.seed)
        let uris = programs.tracks.map { URL(fileURLWithPath: $0).absoluteString }
        let meanGap = 1 / settings.rate
        var due = start
        var commands: [Task<Void, Never>] = []
        while true {
            due += .milliseconds(Int(Double.random(in: 0..<(2 * meanGap), using: &random) * 1000))
            guard due < end else { break }
            let call =
                switch random.int(0..<3) {
                case 0: StormCall.next
                case 1: StormCall.previous
                default: StormCall.openURI(random.pick(uris))
                }
            try? await Task.sleep(until: due, clock: .continuous)
            box.run.maxDriverLateness = max(box.run.maxDriverLateness, (ContinuousClock.now - due).inMilliseconds)
            let tally = box.run.tally(call)
            box.commandsInFlight += 1
            box.run.maxCommandsInFlight = max(box.run.maxCommandsInFlight, box.commandsInFlight)
            commands.append(
                Task { @MainActor in
                    await self.send(call, on: connection, into: tally)
                    box.commandsInFlight -= 1
                })
        }
        for command in commands { await command.value }
    }

    /// Checks that Quaver still answers and plays, reads what its log says about the
    /// pipeline, and stops it.
    private func afterStorm(_ session: PlayerSession, into run: inout StormRun) async {
        if session.isRunning {
            let sent = ContinuousClock.now
            do {
                let status = try await session.playbackStatus()
                let took = (ContinuousClock.now - sent).inMilliseconds
                run.observations.append(
                    String(format: "after the storm Get(PlaybackStatus) took %.1f ms: %@", took, status))
            } catch {
                run.problems.append("Get(PlaybackStatus) after the storm: \(error)")
            }
        } else {
            run.problems.append(
                "Quaver exited with status \(session.exitStatus ?? -1) during the storm; see \(session.logFile.path)")
        }
        await session.stop(timeout: .seconds(20))
        if session.exitStatus != 0 {
            run.problems.append(
                "Quaver did not exit cleanly after Quit (status \(session.exitStatus ?? -1); -1: killed)")
        }
        let log = (try? String(contentsOf: session.logFile, encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n")
        let stuck = lines.filter { $0.contains("did not return from a call into the pipeline") }.count
        let skipped = lines.filter { $0.contains("skipping ") }.count
        let warnings = lines.filter { line in ["[warning]", "[error]", "[critical]"].contains { line.contains($0) } }
            .count
        run.observations.append(
            "Quaver's log: \(stuck) pipeline\(stuck == 1 ? "" : "s") replaced after a stuck call, \(skipped) track\(skipped == 1 ? "" : "s") skipped, \(warnings) warning or error line\(warnings == 1 ? "" : "s") in all (\(session.logFile.path))"
        )
    }

    // MARK: Results

    /// The tables, how they were measured and the notes.
    private func markdown() -> String {
        let report = Report()
        /// Milliseconds with two decimals below 10, one above.
        func ms(_ value: Double) -> String { report.format(value, value < 10 ? 2 : 1) }
        /// The figures of one row.
        func cells(_ tally: StormTally, _ elapsed: Duration) -> String {
            let perSecond = elapsed > .zero ? Double(tally.latencies.count) / elapsed.inSeconds : .nan
            let latencies = tally.latencies
            return
                "\(tally.sent) | \(report.format(perSecond, 0)) | \(ms(latencies.percentile(50))) | \(ms(latencies.percentile(99))) | "
                + "\(ms(latencies.max() ?? .nan)) | \(tally.timedOut) | \(tally.errorCount) |"
        }
        let header =
            "| sent | answered/s | p50 (ms) | p99 (ms) | max (ms) | unanswered | errors |\n"
            + "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        var text = "| output | calls " + header
        for run in runs {
            let label = "\(run.variant.rawValue) (`\(run.sink)`)"
            guard !run.tallies.isEmpty else {
                text += "| \(label) | – | failed (see below) | | | | | | |\n"
                continue
            }
            for (name, tally) in [("commands", run.commands), ("reads", run.reads), ("all", run.all)] {
                text += "| \(label) | \(name) | " + cells(tally, run.elapsed) + "\n"
            }
        }
        text += "\nBy call:\n\n| output | call " + header
        for run in runs {
            for entry in run.tallies.sorted(by: { ($0.isCommand ? 0 : 1, $0.name) < ($1.isCommand ? 0 : 1, $1.name) }) {
                text += "| \(run.variant.rawValue) | \(entry.name) | " + cells(entry.tally, run.elapsed) + "\n"
            }
        }
        let how = [
            "Each storm lasts \(settings.duration.inSeconds) s. Quaver starts playing its queue of \(settings.tracks) tracks of 0.5 s, LoopStatus Playlist (so it keeps playing whatever the commands do); the storm begins once it reports PlaybackStatus Playing (with the stuck output, once Play is answered).",
            "Driver: one client sends Next, Previous or OpenUri (one of the generated tracks' file URIs, which Quaver queues after the current track and plays), chosen at random with equal odds, at moments spaced by random gaps uniform in 0–\(report.format(2000 / settings.rate, 0)) ms (\(report.format(settings.rate, 0)) commands/s on average; SplitMix seed \(settings.seed)). It does not wait for one reply before the next command.",
            "Readers: \(settings.readers) clients, each on its own bus connection, each with one call in flight: Get(PlaybackStatus), Get(Position), Get(Metadata) and GetAll(org.mpris.MediaPlayer2.Player) in turn, the next sent as soon as the previous one is answered (10 ms later after an error reply), until the storm's end.",
            "Latency: from just before a call is handed to libdbus to its reply being read on the client's main queue, for calls answered without an error; every client shares the benchmark's one main thread, so a reply waits there while the client handles others. Unanswered: no reply within \(settings.timeout.inSeconds) s (libdbus's NoReply). Errors: error replies. answered/s: calls answered without an error over the storm, its draining included.",
        ]
        text += "\nHow:\n\n" + how.map { "- " + $0 }.joined(separator: "\n") + "\n"
        var allNotes = notes
        for run in runs where !run.tallies.isEmpty {
            let cpu = zip(["Quaver", "dbus-daemon", "benchmark client"], run.cpu).map { name, seconds in
                "\(name) \(report.format(seconds / run.elapsed.inSeconds * 100, 0)) %"
            }
            var sentences = [
                "CPU in % of one core over \(report.format(run.elapsed.inSeconds, 1)) s: " + cpu.joined(separator: ", ")
            ]
            sentences.append(
                "at most \(run.maxCommandsInFlight) commands waited for replies at once; the driver sent at most \(report.format(run.maxDriverLateness, 1)) ms after a command's moment"
            )
            let slow = [100.0, 1000.0].map { limit in
                let counts = [run.commands, run.reads].map { $0.latencies.filter { $0 > limit }.count }
                return "over \(report.format(limit, 0)) ms: \(counts[0]) commands, \(counts[1]) reads"
            }
            sentences.append("replies " + slow.joined(separator: "; "))
            let errors = run.all.errors.sorted { $0.value > $1.value }.map { "\($0.key) × \($0.value)" }
            if !errors.isEmpty { sentences.append("error replies: " + errors.joined(separator: ", ")) }
            allNotes.append("\(run.variant.rawValue): " + (sentences + run.observations).joined(separator: "; ") + ".")
        }
        text += "\nNotes:\n\n" + allNotes.map { "- " + $0 }.joined(separator: "\n") + "\n"
        let problems = runs.flatMap { run in run.problems.map { "\(run.variant.rawValue): \($0)" } }
        if !problems.isEmpty {
            text += "\nWhat did not work:\n\n" + problems.map { "- " + $0 }.joined(separator: "\n") + "\n"
        }
        return text
    }
}

/// The storm's record, shared by the driver's and the readers' tasks (all on the main actor).
@MainActor
final class StormBox {
    /// What was measured so far.
    var run: StormRun
    /// Driver commands sent and not yet answered or timed out.
    var commandsInFlight = 0

    /// Starts from `run`.
    init(_ run: StormRun) { self.run = run }
}
