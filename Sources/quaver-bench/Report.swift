import Foundation
import TestKit

// MARK: - Statistics

extension Array where Element == Double {
    /// The `p`-th percentile (0...100), linearly interpolated between the closest ranks.
    func percentile(_ p: Double) -> Double {
        guard !isEmpty else { return .nan }
        let sorted = self.sorted()
        let rank = p / 100 * Double(sorted.count - 1)
        let lower = Int(rank.rounded(.down))
        let upper = Int(rank.rounded(.up))
        return sorted[lower] + (sorted[upper] - sorted[lower]) * (rank - Double(lower))
    }

    var median: Double { percentile(50) }
}

// MARK: - Table

/// One figure for one player: a value and, when there were rounds, their lowest and highest.
struct Measure {
    var value: Double
    var low: Double?
    var high: Double?

    /// The median of per-round values, with their range as the spread.
    init(rounds: [Double]) {
        value = rounds.median
        low = rounds.min()
        high = rounds.max()
    }

    /// A value from all samples pooled, with the range of the same statistic per round.
    init(value: Double, rounds: [Double]) {
        self.value = value
        low = rounds.count > 1 ? rounds.min() : nil
        high = rounds.count > 1 ? rounds.max() : nil
    }

    init(_ value: Double) { self.value = value }
}

/// One row of the table.
struct Row {
    enum Better { case lower, higher, neither }

    var figure: String
    var unit: String
    var better: Better
    var quaver: Result<Measure, HarnessError>?
    var mpv: Result<Measure, HarnessError>?
    /// Digits after the decimal point.
    var decimals: Int = 1
    /// Shown instead of the ratio (for figures where a ratio means nothing, such as 0 vs 0).
    var ratioOverride: String?

    subscript(kind: PlayerKind) -> Result<Measure, HarnessError>? {
        get { kind == .quaver ? quaver : mpv }
        set { if kind == .quaver { quaver = newValue } else { mpv = newValue } }
    }
}

/// The rows of the run, in the order the figures were measured, plus notes for the reader.
@MainActor
final class Report {
    private(set) var rows: [Row] = []
    private(set) var notes: [String] = []
    private(set) var problems: [String] = []

    func add(_ row: Row) { rows.append(row) }
    func note(_ text: String) { notes.append(text) }

    /// Records a failed figure so that the table says so instead of stopping the run.
    func problem(_ text: String) {
        problems.append(text)
        log("problem: \(text)")
    }

    /// The markdown table with its legend and notes.
    func markdown() -> String {
        var lines: [String] = []
        lines.append("| figure | unit | \(PlayerKind.quaver.title) | \(PlayerKind.mpv.title) | Quaver / mpv |")
        lines.append("| --- | --- | ---: | ---: | ---: |")
        for row in rows {
            let hint =
                switch row.better {
                case .lower: " (lower is better)"
                case .higher: " (higher is better)"
                case .neither: ""
                }
            lines.append(
                "| \(row.figure)\(hint) | \(row.unit) | \(cell(row.quaver, row.decimals)) | \(cell(row.mpv, row.decimals)) | \(ratio(row)) |"
            )
        }
        var text = lines.joined(separator: "\n") + "\n"
        text +=
            "\nValues are medians, or percentiles of all samples pooled; brackets give the lowest and highest "
            + "value of the same statistic across rounds (for 30 s windows: across their three 10 s thirds, scaled to 30 s).\n"
        if !notes.isEmpty {
            text += "\nNotes:\n\n" + notes.map { "- " + $0 }.joined(separator: "\n") + "\n"
        }
        if !problems.isEmpty {
            text += "\nWhat did not work:\n\n" + problems.map { "- " + $0 }.joined(separator: "\n") + "\n"
        }
        return text
    }

    private func cell(_ result: Result<Measure, HarnessError>?, _ decimals: Int) -> String {
        switch result {
        case nil: return "not measured"
        case .failure: return "failed (see below)"
        case .success(let measure):
            var text = format(measure.value, decimals)
            if let low = measure.low, let high = measure.high {
                text += " [\(format(low, decimals))–\(format(high, decimals))]"
            }
            return text
        }
    }

    private func ratio(_ row: Row) -> String {
        if let text = row.ratioOverride { return text }
        guard case .success(let q) = row.quaver, case .success(let m) = row.mpv else { return "–" }
        guard m.value != 0, q.value.isFinite, m.value.isFinite else { return "–" }
        let ratio = q.value / m.value
        return ratio >= 100
            ? String(format: "%.0f", ratio)
            : ratio >= 10 ? String(format: "%.1f", ratio) : String(format: "%.2f", ratio)
    }

    /// A number with `decimals` digits, and thousands grouped with a thin space for big ones.
    func format(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "–" }
        let text = String(format: "%.\(decimals)f", value)
        guard abs(value) >= 10_000 else { return text }
        let parts = text.split(separator: ".", maxSplits: 1)
        var integer = String(parts[0])
        let negative = integer.hasPrefix("-")
        if negative { integer.removeFirst() }
        var grouped = ""
        for (index, character) in integer.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { grouped.append(" ") }
            grouped.append(character)
        }
        return (negative ? "-" : "") + String(grouped.reversed()) + (parts.count > 1 ? "." + parts[1] : "")
    }
}

/// Progress for the person watching, on stderr (stdout carries the table only).
func log(_ text: String) {
    FileHandle.standardError.write(Data(("quaver-bench: " + text + "\n").utf8))
}
