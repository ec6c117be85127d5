import Foundation
import SeededRandom
import TestKit

/// Figures 1 to 6, measured on both players running as daemons, paused on the first track.
extension Benchmark {
    /// Figure 4: process start → bus name owned and GetAll answered.
    func startup() async throws {
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
    func idle() async throws {
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
    func toggleLatency() async throws {
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
        addLatencyRows(
            "PlayPause → PropertiesChanged(PlaybackStatus)", [("p50", 50), ("p99", 99), ("max", 100)], all: all,
            byRound: byRound)
        report.note(
            "PlayPause: \(count) toggles per player per round, \(settings.rounds) rounds (\(count * settings.rounds) per player), each sent after a random think time uniform in 0–\(Int(settings.thinkTime.inMilliseconds)) ms (the same sequence for both players) and timed from the call to the PropertiesChanged that carries the new PlaybackStatus. Percentiles are over all toggles; brackets give the per-round range. mpv-mpris sends property changes from a 100 ms timer (it batches them), so its latency is spread evenly over 0–100 ms by design."
        )
    }

    /// Figure 2: GetAll(org.mpris.MediaPlayer2.Player) answered per second, several in flight,
    /// and the player's CPU time per call (which does not depend on who else needs the CPU).
    func getAllThroughput() async throws {
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
    func seekLatency() async throws {
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
        addLatencyRows("Seek → Seeked", [("p50", 50), ("p99", 99)], all: all, byRound: byRound)
        var cpuRow = Row(figure: "player CPU time per Seek (playing)", unit: "ms", better: .lower, decimals: 2)
        for kind in PlayerKind.allCases { cpuRow[kind] = .success(Measure(rounds: cpuPerSeek[kind] ?? [])) }
        report.add(cpuRow)
        report.note(
            "Seek: \(settings.seeks) seeks per player per round, \(settings.rounds) rounds, while playing: SetPosition to 20 s, then relative seeks of alternately +5 s and −5 s, each sent once the previous Seeked arrived."
        )
    }

    /// A row of latencies in milliseconds for each percentile: of every sample of a player
    /// pooled, with the range of each round's own percentile.
    private func addLatencyRows(
        _ figure: String, _ percentiles: [(label: String, p: Double)], all: [PlayerKind: [Double]],
        byRound: [PlayerKind: [[Double]]]
    ) {
        for (label, p) in percentiles {
            var row = Row(figure: "\(figure), \(label)", unit: "ms", better: .lower, decimals: 2)
            for kind in PlayerKind.allCases {
                row[kind] = .success(
                    Measure(
                        value: (all[kind] ?? []).percentile(p), rounds: (byRound[kind] ?? []).map { $0.percentile(p) }))
            }
            report.add(row)
        }
    }
}
