import ChildProcess
import Foundation
import TestKit

/// A program of the footprint benchmark: gst-launch-1.0 (the floor) or a Quaver build.
struct FootprintPlayer {
    /// The name in the table.
    var label: String
    /// The Quaver binary; nil: gst-launch-1.0.
    var binary: String?
    /// Another track than the tagged one.
    var track: String?
}

extension FootprintBenchmark {
    /// A program playing in a window.
    @MainActor
    private enum Running {
        case floor(LineWatcher)
        case quaver(PlayerSession)

        var pid: Int32 {
            get throws {
                switch self {
                case .floor(let watcher): watcher.pid
                case .quaver(let session): try session.pid
                }
            }
        }

        func stop() async {
            switch self {
            case .floor(let watcher): watcher.kill()
            case .quaver(let session):
                await session.stop()
                session.close()
            }
        }
    }

    // MARK: Playing

    /// Every program plays the track into `sink` at once, in `settings.rounds` rounds, each
    /// program started afresh for each in an order turned by one every round: the machine is
    /// the same for all of them within a round, and how one start happens to fall (its
    /// threads' CPUs, its timers' phase) differs from round to round. CPU is counted over two
    /// windows of each round: the first from 2 s of playing on (the start's own work, as the
    /// first tag reading and the start-up page hand-back, falls in it), and the one after
    /// (playing on); context switches over the second, memory at the end of the last round.
    func playTogether(
        _ players: [FootprintPlayer], sink: FootprintSink, environment: [String: String],
        into rows: inout [FootprintRow]
    ) async {
        for round in 0..<settings.rounds {
            let load = machineLoad()
            log("round \(round + 1) of \(settings.rounds): \(players.count) programs into \(sink.rawValue) at once")
            notes.append("Load average (1, 5, 15 min) before round \(round + 1) into \(sink.rawValue): \(load).")
            var running: [(index: Int, program: Running)] = []
            for step in players.indices {
                let index = (step + round) % players.count
                do {
                    let label = "footprint-\(sink.rawValue)-\(round + 1)-\(index)"
                    running.append(
                        (index, try await start(players[index], sink: sink, environment: environment, label: label)))
                } catch {
                    rows[index].problems.append("\(players[index].label), round \(round + 1): \(error)")
                }
            }
            try? await Task.sleep(for: .seconds(2))
            var samples: [[Int: ProcessProbe.Sample]] = []
            for window in 0...2 {
                if window > 0 { try? await Task.sleep(for: settings.window) }
                var taken: [Int: ProcessProbe.Sample] = [:]
                for (index, program) in running { taken[index] = try? ProcessProbe.Sample(of: try program.pid) }
                samples.append(taken)
            }
            for (index, program) in running {
                do {
                    guard let start = samples[0][index], let middle = samples[1][index], let end = samples[2][index]
                    else { throw HarnessError("it stopped playing") }
                    rows[index].startTicks[round] = middle.cpuTicks &- start.cpuTicks
                    rows[index].cpuTicks[round] = end.cpuTicks &- middle.cpuTicks
                    rows[index].switches[round] = end.contextSwitches(since: middle)
                    if round == settings.rounds - 1 {
                        rows[index].threads = end.switchesByThread.count
                        try Self.recordMemory(of: try program.pid, into: &rows[index])
                    }
                } catch {
                    rows[index].problems.append("\(players[index].label), round \(round + 1): \(error)")
                }
            }
            for (_, program) in running { await program.stop() }
        }
    }

    /// Starts `player` playing into `sink`, and returns once it plays; a Quaver's files go
    /// in a folder named after `label`.
    private func start(
        _ player: FootprintPlayer, sink: FootprintSink, environment: [String: String], label: String
    ) async throws -> Running {
        guard let binary = player.binary else {
            let watcher = try LineWatcher(floorCommand(sink: sink), environment: floorEnvironment(extra: environment))
            _ = try await watcher.wait(forLineContaining: "New clock", timeout: .seconds(20))
            return .floor(watcher)
        }
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw HarnessError("no quaver binary at \(binary)")
        }
        var programs = self.programs!
        programs.quaver = binary
        if let track = player.track { programs.tracks = [track] }
        let session = try await PlayerSession(.quaver, programs: programs, label: label)
        do {
            let command = programs.daemonCommand(.quaver, paused: false).map {
                $0 == FootprintSink.fake.element ? sink.element : $0
            }
            try await session.start(command, environment: environment)
            try await session.settle("Playing")
            return .quaver(session)
        } catch {
            session.close()
            throw error
        }
    }

    /// Rss, Pss and Anonymous of `pid` now, and by mapping.
    private static func recordMemory(of pid: Int32, into row: inout FootprintRow) throws {
        guard let rollup = ProcessProbe.read("smaps_rollup", of: pid) else {
            throw HarnessError("cannot read /proc/\(pid)/smaps_rollup")
        }
        row.rss = ProcessProbe.field("Rss", in: rollup)
        row.pss = ProcessProbe.field("Pss", in: rollup)
        row.anonymous = ProcessProbe.field("Anonymous", in: rollup)
        row.mappings = try mappings(pid: pid)
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
