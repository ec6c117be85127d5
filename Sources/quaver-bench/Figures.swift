import DBus
import Foundation
import SeededRandom
import TestKit

/// The measurements themselves, each on one player.
extension PlayerSession {
    /// Sends `PlayPause` `count` times, each once the previous one's `PropertiesChanged` with
    /// the new `PlaybackStatus` has arrived, and returns each latency (call sent to signal
    /// received) in milliseconds.
    ///
    /// Before each command it waits a random think time, uniform in `0..<thinkTime`: a
    /// player that publishes changes from a periodic timer (mpv-mpris uses a 100 ms one)
    /// would otherwise phase-lock with a client that sends right after each signal, and
    /// every command would wait the whole period. A person presses keys at random moments.
    ///
    /// Also returns how long the player was playing in all (from each Playing signal to the
    /// next command).
    func toggleLatencies(count: Int, thinkTime: Duration, random: inout SplitMix) async throws
        -> (latencies: [Double], playing: Duration)
    {
        var status = try await playbackStatus()
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        var playing = Duration.zero
        var playingSince: ContinuousClock.Instant?
        let thinkNanoseconds = UInt64(max(thinkTime.inMilliseconds * 1e6, 1))
        for _ in 0..<count {
            let target = status == "Playing" ? "Paused" : "Playing"
            let gap = Duration.nanoseconds(Int64(random.next() % thinkNanoseconds))
            if thinkTime > .zero { try await Task.sleep(for: gap) }
            let changed = events.expect("PlaybackStatus \(target) from \(kind.title)") { $0.playbackStatus == target }
            let start = ContinuousClock.now
            if let since = playingSince { playing += start - since }
            _ = try await call("PlayPause")
            let event = try await events.wait(changed, timeout: .seconds(5))
            latencies.append((event.time - start).inMilliseconds)
            playingSince = target == "Playing" ? event.time : nil
            status = target
        }
        if let since = playingSince { playing += .now - since }
        return (latencies, playing)
    }

    /// Calls `GetAll(org.mpris.MediaPlayer2.Player)` with `inFlight` calls outstanding at
    /// every moment for `duration`; returns how many were answered and in what time.
    func getAllRun(duration: Duration, inFlight: Int) async throws -> (calls: Int, elapsed: Duration) {
        let start = ContinuousClock.now
        let end = start + duration
        let workers = (0..<inFlight).map { _ in
            Task { @MainActor in
                var count = 0
                while ContinuousClock.now < end {
                    _ = try await self.call("GetAll", interface: MPRISNames.properties, [.string(MPRISNames.player)])
                    count += 1
                }
                return count
            }
        }
        var completed = 0
        for worker in workers { completed += try await worker.value }
        return (completed, ContinuousClock.now - start)
    }

    /// Plays, jumps to 20 s with `SetPosition`, then sends `count` relative `Seek`s of
    /// alternately +5 s and −5 s, each once the previous one's `Seeked` has arrived, and
    /// returns each latency (call sent to `Seeked` received) in milliseconds, and the CPU
    /// time the player used over the seeks, in seconds. Pauses after.
    func seekLatencies(count: Int) async throws -> (latencies: [Double], cpu: Double) {
        try await settle("Playing")
        guard let track = try await get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath else {
            throw HarnessError("\(kind.title) shows no mpris:trackid")
        }
        let placed = events.expect("Seeked after SetPosition from \(kind.title)") { $0.isSeeked }
        _ = try await call("SetPosition", [.objectPath(track), .int64(20_000_000)])
        _ = try await events.wait(placed, timeout: .seconds(5))

        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        let before = try ProcessProbe.Sample(of: try pid)
        for index in 0..<count {
            let offset: Int64 = index.isMultiple(of: 2) ? 5_000_000 : -5_000_000
            let seeked = events.expect("Seeked from \(kind.title)") { $0.isSeeked }
            let start = ContinuousClock.now
            _ = try await call("Seek", [.int64(offset)])
            let event = try await events.wait(seeked, timeout: .seconds(5))
            latencies.append((event.time - start).inMilliseconds)
        }
        let cpu = try ProcessProbe.Sample(of: try pid).cpuSeconds(since: before)
        try await settle("Paused")
        return (latencies, cpu)
    }
}

/// CPU, context switches and memory of several players over one window, sampled at its start
/// and at the end of each of its `parts` equal parts.
struct WindowCost {
    /// CPU seconds over the whole window, and over each part.
    var cpu: Double
    var cpuParts: [Double]
    var switches: Double
    var switchesParts: [Double]
    /// VmRSS at the end of the window, KiB.
    var rssKiB: UInt64

    /// A table value for a whole-window total; the spread is the parts scaled to the window.
    static func measure(total: Double, parts: [Double]) -> Measure {
        let scaled = parts.map { $0 * Double(parts.count) }
        var measure = Measure(total)
        measure.low = scaled.min()
        measure.high = scaled.max()
        return measure
    }

    /// Watches every session's process over the same window of `duration`.
    @MainActor
    static func measure(_ sessions: [PlayerSession], duration: Duration, parts: Int = 3) async throws -> [PlayerKind:
        WindowCost]
    {
        var samples: [PlayerKind: [ProcessProbe.Sample]] = [:]
        for session in sessions { samples[session.kind] = [try ProcessProbe.Sample(of: try session.pid)] }
        for _ in 0..<parts {
            try await Task.sleep(for: duration / parts)
            for session in sessions { samples[session.kind]!.append(try ProcessProbe.Sample(of: try session.pid)) }
        }
        var result: [PlayerKind: WindowCost] = [:]
        for (kind, list) in samples {
            let pairs = zip(list.dropLast(), list.dropFirst())
            result[kind] = WindowCost(
                cpu: list.last!.cpuSeconds(since: list.first!),
                cpuParts: pairs.map { $1.cpuSeconds(since: $0) },
                switches: Double(list.last!.contextSwitches(since: list.first!)),
                switchesParts: pairs.map { Double($1.contextSwitches(since: $0)) },
                rssKiB: list.last!.rssKiB)
        }
        return result
    }
}
