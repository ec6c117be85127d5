import DBus
import Foundation
import SeededRandom
import TestKit

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
    private(set) var runs: [StormRun] = []
    /// Sentences for the notes that concern every storm.
    private(set) var notes: [String] = []

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
        let quaver = try quaverBinary(settings.quaver)
        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench-storm")
        programs = Programs(
            quaver: quaver, mpv: "", mprisPlugin: "", gstLaunch: "", tracks: [],
            workDir: workDir)
        log("generating \(settings.tracks) tagged FLAC tracks of 0.5 s")
        programs.tracks = try await programs.makeTracks(settings.tracks, seconds: "0.5")
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
}
