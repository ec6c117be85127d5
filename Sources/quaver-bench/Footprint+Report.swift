import Foundation
import TestKit

extension FootprintBenchmark {
    /// The table, the memory by mapping, how it was measured, and the notes.
    func markdown() -> String {
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
        /// A figure by round, as the median [lowest–highest] of `scale` times each.
        func byRound(_ values: [Int: UInt64], scale: Double = 1, format: String = "%.0f") -> String {
            let scaled = values.values.map { Double($0) * scale }
            guard let value = middle(scaled), let low = scaled.min(), let high = scaled.max() else { return "–" }
            let one = { (figure: Double) in String(format: format, figure) }
            return scaled.count == 1 ? one(value) : "\(one(value)) [\(one(low))–\(one(high))]"
        }
        /// The median of `values` over the rounds, to the floor's.
        func medianRatio(_ values: [Int: UInt64], _ floor: [Int: UInt64]?) -> String {
            ratio(middle(values.values.map(Double.init)), floor.flatMap { middle($0.values.map(Double.init)) })
        }
        var text =
            "| program | sink | RSS (MiB) | × floor | PSS (MiB) | anonymous (MiB) | start → name owned / PLAYING (ms) | × floor | CPU ticks, first \(Int(seconds)) s playing | × floor | CPU ticks, \(Int(seconds)) s playing on | × floor | context switches / s, playing on | × floor | threads | \(settings.queue)-track queue: RSS (MiB) | start → Playing with it (ms) |\n"
        text += "| --- | --- |" + String(repeating: " ---: |", count: 15) + "\n"
        for row in rows {
            let floor = rows.first { $0.sink == row.sink }
            let startFloor = rows.first { !$0.starts.isEmpty }
            text += "| \(row.label) | \(row.sink.rawValue) | \(mib(row.rss)) | "
            text +=
                "\(ratio(row.rss.map(Double.init), floor?.rss.map(Double.init))) | \(mib(row.pss)) | \(mib(row.anonymous)) | "
            text += "\(median(row.starts)) | \(ratio(middle(row.starts), startFloor.flatMap { middle($0.starts) })) | "
            text += "\(byRound(row.startTicks)) | \(medianRatio(row.startTicks, floor?.startTicks)) | "
            text += "\(byRound(row.cpuTicks)) | \(medianRatio(row.cpuTicks, floor?.cpuTicks)) | "
            text += "\(byRound(row.switches, scale: 1 / seconds, format: "%.1f")) | "
            text += "\(medianRatio(row.switches, floor?.switches)) | \(row.threads.map(String.init) ?? "–") | "
            text += "\(mib(row.queueRSS)) | \(row.queuePlaying.map { String(format: "%.0f", $0) } ?? "–") |\n"
        }
        text +=
            "\nResident by mapping at the end of the last playing window (Rss / Pss in MiB; the 14 largest, then the rest together):\n\n"
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
            "- The floor is `gst-launch-1.0 playbin uri=FILE audio-sink=SINK` on the same FLAC, 10 s longer than the settling and both windows together; Quaver is `quaver --no-resume --audio-sink SINK FILE` on a private dbus-daemon with its own HOME, with its defaults (ReplayGain on, the progress watch running). The FLAC carries ReplayGain tags (a track gain of -6 dB), which Quaver applies; the row of the same track without them shows what measuring it as it plays costs (once per track: the gain is kept for its later plays). SINK is `fakesink sync=true`, then `pulsesink` on a private PipeWire session (pipewire, WirePlumber, pipewire-pulse with a null sink) that both programs play to; × floor is to the floor on the same sink.\n"
        text +=
            "- Start: from just before the process starts to its bus name owned (Quaver, started with `--paused`) or to `New clock` on gst-launch's output (PLAYING reached); \(settings.starts) starts each after a warm-up start; median [lowest–highest].\n"
        text +=
            "- Playing: every program of a sink plays at once (each its own process; Quaver on its own bus), in \(settings.rounds) rounds, each program started afresh for each round in an order turned by one every round. In each round, two windows of \(Int(seconds)) s: the first from 2 s of playing on, in which the start's own work falls (Quaver reads the track's tags and hands back its start-up pages 10 s after its name), and the one after it, playing on. CPU: utime + stime from /proc/PID/stat over a window (\(Int(ProcessProbe.ticksPerSecond)) ticks a second); context switches: voluntary and involuntary, summed over /proc/PID/task/*/status over the second window; each as the median [lowest–highest] of the rounds, and × floor as the median to the floor's median. Within one round, one of the programs playing at once often costs half as much again as its like, for the whole round: each program's median leaves such a round out. Memory: /proc/PID/smaps_rollup (Rss, Pss, Anonymous) at the end of the last round (Pss shares the libraries' pages among the programs playing at once); threads: /proc/PID/task then.\n"

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
