import ArgumentParser
import DBus
import Foundation

/// Recording the figures and the problems, and the markdown of the result.
extension ScaleBenchmark {

    func record(_ figure: ScaleFigure, _ source: ScaleSource, _ value: Double, pooled: [Double] = []) {
        results[figure, default: [:]][source, default: ScaleSamples()].rounds.append(value)
        results[figure, default: [:]][source, default: ScaleSamples()].pooled += pooled
    }

    func fail(_ figures: [ScaleFigure], _ source: ScaleSource, round: Int, _ message: String) {
        for figure in figures { results[figure, default: [:]][source, default: ScaleSamples()].failures += 1 }
        let names =
            figures.count > 4 ? "every figure of the run" : figures.map { "“\($0.title)”" }.joined(separator: ", ")
        problem(source, round: round, "\(names): \(message)")
    }

    func problem(_ source: ScaleSource, round: Int, _ message: String) {
        let text = "\(source.title): \(message)"
        if let index = problems.firstIndex(where: { $0.text == text }) {
            problems[index].rounds.append(round + 1)
        } else {
            problems.append((text, [round + 1]))
            log("problem: \(text)")
        }
    }

    func observe(_ key: String, _ note: String) {
        guard observed.insert(key).inserted else { return }
        report.note(note)
    }

    func markdown() -> String {
        var lines = [
            "| figure | unit | \(ScaleSource.folder.title) | \(ScaleSource.playlist.title) | target |",
            "| --- | --- | ---: | ---: | --- |",
        ]
        for figure in ScaleFigure.allCases {
            let hint = figure == .getCount ? "" : figure.higherIsBetter ? " (higher is better)" : " (lower is better)"
            var cells: [String] = []
            var medians: [ScaleSource: Double] = [:]
            for source in ScaleSource.allCases {
                let samples = results[figure]?[source] ?? ScaleSamples()
                guard !samples.rounds.isEmpty else {
                    cells.append(samples.failures > 0 ? "failed (see below)" : "not measured")
                    continue
                }
                let measure =
                    figure.isPooled
                    ? Measure(value: figure.pooledStatistic(samples.pooled), rounds: samples.rounds)
                    : Measure(rounds: samples.rounds)
                medians[source] = measure.value
                var text = report.format(measure.value, figure.decimals)
                if let low = measure.low, let high = measure.high, samples.rounds.count > 1 {
                    text += " [\(report.format(low, figure.decimals))–\(report.format(high, figure.decimals))]"
                }
                if samples.failures > 0 {
                    text += " (\(samples.failures) of \(samples.rounds.count + samples.failures) rounds failed)"
                }
                cells.append(text)
            }
            var target = ""
            if let limit = figure.target {
                target = "< \(report.format(limit, 0))"
                let missed = ScaleSource.allCases.filter { medians[$0].map { !($0 < limit) } ?? false }
                if !missed.isEmpty {
                    target += ": missed (\(missed.map(\.rawValue).joined(separator: ", ")))"
                } else if medians.count == ScaleSource.allCases.count {
                    target += ": met"
                } else {
                    target += ": not measured"
                }
            }
            lines.append("| \(figure.title)\(hint) | \(figure.unit) | \(cells.joined(separator: " | ")) | \(target) |")
        }
        var text = lines.joined(separator: "\n") + "\n"
        text +=
            "\n\(report.format(Double(settings.tracks), 0)) tracks, \(settings.rounds) round\(settings.rounds == 1 ? "" : "s") per source, the sources alternating which goes first. "
            + "Values are medians over the rounds, or for p50/p99/max a percentile of all samples of every round pooled; "
            + "brackets give the lowest and highest value of the same statistic across rounds. A target is met when the median of both sources is under it.\n"
        let method = [
            "First sound: from just before the process was started to the first PropertiesChanged of org.mpris.MediaPlayer2.Player carrying PlaybackStatus Playing, or the first Get(PlaybackStatus) answered with Playing, whichever came first (the sink is fakesink sync=true: it plays in real time).",
            "Load time: from the same moment to the benchmark reading a line containing `queue loaded:` on Quaver's output (stderr, read through a pipe as it comes).",
            "Responsiveness: from the moment the bus name was owned (NameOwnerChanged) until that line, one client sent org.freedesktop.DBus.Properties.Get(org.mpris.MediaPlayer2.Player, PlaybackStatus) back to back, one in flight, and timed each call; the count is the calls answered in that window. The same went on for 1 s after the line (its own row).",
            "Memory: VmRSS of the Quaver process after the load, Pause answered with PlaybackStatus Paused and 1 s of rest; the baseline is the same command with a folder or playlist of 1 track, run just before in the same round; the difference divided by \(report.format(Double(settings.tracks), 0)).",
            "TrackList: the ids are read from the Tracks property (its prefix is then used); GetTracksMetadata asks \(settings.metadataCalls) times for the \(settings.metadataBatch) consecutive ids from the middle of the queue, one call at a time, and each reply is checked to hold \(settings.metadataBatch) maps each with mpris:trackid; the row is the median call. AddTrack: \(settings.addTrackCalls) calls, \(settings.addTrackInFlight) in flight, adding \(media.sampleTrack.absoluteString) with AfterTrack alternately /org/mpris/MediaPlayer2/TrackList/NoTrack (the start) and the current track, SetAsCurrent false, all after the memory figure (paused).",
        ]
        text += "\nHow:\n\n" + method.map { "- " + $0 }.joined(separator: "\n") + "\n"
        if !report.notes.isEmpty {
            text += "\nNotes:\n\n" + report.notes.map { "- " + $0 }.joined(separator: "\n") + "\n"
        }
        if !problems.isEmpty {
            text +=
                "\nWhat did not work:\n\n"
                + problems.map { problem in
                    let rounds =
                        problem.rounds.count == settings.rounds && settings.rounds > 1
                        ? "every round"
                        : "round" + (problem.rounds.count > 1 ? "s " : " ")
                            + problem.rounds.map(String.init).joined(separator: ", ")
                    return "- \(problem.text) (\(rounds))"
                }.joined(separator: "\n") + "\n"
        }
        return text
    }
}
