import DBus
import Foundation
import TestKit
import Testing

/// What clients see while a fault lasts: Position and PlaybackStatus read every 100 ms, how
/// long each reply took, and how much of the track the sink had played by then (from its
/// monitor), so that the published position can be set against the heard one.
@MainActor
final class FaultProbe {
    struct Reading {
        var at: ContinuousClock.Instant
        /// Position, in seconds.
        var position: Double
        var status: String
        /// The longer of the two replies.
        var reply: Duration
        /// What the sink had played of the track by then, in seconds (nil: not known).
        var heard: Double?
    }

    let session: Session
    /// The recordings of the sinks played to, in order: the track heard is their sum.
    var recordings: [MonitorRecording] = []
    private(set) var readings: [Reading] = []

    init(_ session: Session, recording: MonitorRecording? = nil) {
        self.session = session
        recordings = recording.map { [$0] } ?? []
    }

    /// Added to what the recordings heard to make a place in the track (see ``calibrate()``).
    private var heardOffset = 0.0

    /// Seconds of the track heard so far (nil: nothing records it).
    var heard: Double? {
        recordings.isEmpty ? nil : heardOffset + recordings.reduce(0) { $0 + $1.heardSeconds() }
    }

    /// Where the track is heard when the recordings did not start with it (a seek, a gapless
    /// switch, a server that started later): from now on, what they hear counts from the
    /// position read now. A lead that was there before is then not seen.
    func calibrate() async throws {
        heardOffset = 0
        let position = Double(try await session.position()) / 1e6
        heardOffset = position - (heard ?? 0)
    }

    /// Reads once.
    @discardableResult
    func read() async throws -> Reading {
        let start = ContinuousClock.now
        let position = Double(try await session.position()) / 1e6
        let positionReply = ContinuousClock.now - start
        let statusStart = ContinuousClock.now
        let status = try await session.get("PlaybackStatus").string ?? ""
        let reading = Reading(
            at: start, position: position, status: status,
            reply: max(positionReply, ContinuousClock.now - statusStart), heard: heard)
        readings.append(reading)
        return reading
    }

    /// Reads every 100 ms until `done` holds for a reading (true) or `timeout` passes (false).
    func watch(timeout: Duration, until done: (Reading) -> Bool = { _ in false }) async throws -> Bool {
        try await Waiter.poll(timeout: timeout, every: .milliseconds(100)) { done(try await read()) }
    }

    /// The readings since `start`.
    func readings(since start: ContinuousClock.Instant) -> [Reading] { readings.filter { $0.at >= start } }

    /// The longest reply since `start`.
    func longestReply(since start: ContinuousClock.Instant) -> Duration {
        readings(since: start).map(\.reply).max() ?? .zero
    }

    /// How far the published position ran ahead of the heard one at most since `start`
    /// (negative: it never did), in seconds.
    func largestLead(since start: ContinuousClock.Instant) -> Double {
        readings(since: start).compactMap { reading in reading.heard.map { reading.position - $0 } }.max() ?? -.infinity
    }

    /// The readings since `start`, one `time position/heard status` a reading: for a
    /// failure's message.
    func table(since start: ContinuousClock.Instant) -> String {
        readings(since: start).map { reading in
            let time =
                Double((reading.at - start).components.attoseconds) / 1e18
                + Double((reading.at - start).components.seconds)
            let heard = reading.heard.map { String(format: "%.2f", $0) } ?? "-"
            return String(format: "%.1f:%.2f/", time, reading.position) + heard + " " + reading.status
        }.joined(separator: ", ")
    }

    /// The statuses seen since `start`, each once in the order first seen.
    func statuses(since start: ContinuousClock.Instant) -> [String] {
        readings(since: start).map(\.status).reduce(into: []) { seen, status in
            if seen.last != status { seen.append(status) }
        }
    }

    /// One line for the closing figures: what clients saw, the longest reply and the lead.
    func report(_ fault: String, since start: ContinuousClock.Instant, signalsFrom mark: Int) -> String {
        let seeked = session.signals.dropFirst(mark).filter { $0.member == "Seeked" }.count
        let longest = longestReply(since: start).components
        let reply = Double(longest.seconds) * 1000 + Double(longest.attoseconds) / 1e15
        let lead = largestLead(since: start)
        return
            "\(fault): statuses \(statuses(since: start).joined(separator: " → ")), \(seeked) Seeked, longest reply \(String(format: "%.1f", reply)) ms, Position ahead of the heard audio by at most \(lead.isFinite ? String(format: "%.2f s", lead) : "n/a")"
    }
}
