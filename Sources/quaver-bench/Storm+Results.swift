import Foundation

/// The result of the storms as markdown: the tables, how they were measured and the notes.
extension StormBenchmark {
    /// The tables, how they were measured and the notes.
    func markdown() -> String {
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
