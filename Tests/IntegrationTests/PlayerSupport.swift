import DBus
import Foundation
import TestKit
import Testing

// Helpers for tests that drive the Player interface: calls sent without waiting for their
// replies, the Player properties as a client sees them, and playback speed measured
// against the clock.

/// How a method call was answered.
enum CallOutcome: Equatable, CustomStringConvertible {
    case ok
    case error(String)
    var description: String {
        switch self {
        case .ok: "a reply"
        case .error(let name): name
        }
    }
}

extension Session {
    /// Sends every message at once, in order on the client's one connection, without
    /// waiting for a reply before sending the next (each task sends its call when it first
    /// runs, and the main actor runs them in the order they were made; the serials libdbus
    /// gave them are checked to say so); returns how each was answered.
    func sendPipelined(_ messages: [Message], sourceLocation: SourceLocation = #_sourceLocation) async -> [CallOutcome]
    {
        let client = self.client
        let calls = messages.map { message in
            Task { @MainActor () -> CallOutcome in
                do {
                    _ = try await client.call(message, timeout: .seconds(30))
                    return .ok
                } catch let error as BusError {
                    return .error(error.name.rawValue)
                } catch {
                    return .error("\(error)")
                }
            }
        }
        var outcomes: [CallOutcome] = []
        for call in calls { outcomes.append(await call.value) }
        let serials = messages.map(\.serial)
        #expect(
            zip(serials, serials.dropFirst()).allSatisfy { $0 < $1 },
            "the calls were not sent in order: serials \(serials)", sourceLocation: sourceLocation)
        return outcomes
    }

    /// A call of a Player method, or a Set of a Player property.
    func playerMessage(_ member: String, _ arguments: [Value] = []) throws -> Message {
        try Message.methodCall(
            destination: busName, path: ObjectPath("/org/mpris/MediaPlayer2")!, interface: MPRISNames.player,
            member: member, arguments: arguments)
    }

    func setMessage(_ property: String, _ value: Value) throws -> Message {
        try Message.methodCall(
            destination: busName, path: ObjectPath("/org/mpris/MediaPlayer2")!,
            interface: "org.freedesktop.DBus.Properties", member: "Set",
            arguments: [.string(MPRISNames.player), .string(property), .variant(value)])
    }
}

/// The Player interface's properties as a client that applies every PropertiesChanged to
/// one GetAll sees them.
@MainActor
struct PlayerMirror {
    private(set) var properties: [String: Value]
    private var applied: Int

    /// Starts from a GetAll, and applies the signals recorded from the moment it was sent:
    /// some of them may be older than its answer (a change a moment behind it), none newer
    /// is missed. `Session.waitForPlayerState` confirms what the mirror shows with a GetAll.
    init(_ session: Session) async throws {
        applied = session.signals.count
        let reply = try await session.call(
            "GetAll", interface: "org.freedesktop.DBus.Properties", [.string(MPRISNames.player)])
        properties = reply.first?.stringVariantDictionary ?? [:]
    }

    mutating func update(_ signals: [Session.RecordedSignal]) {
        guard signals.count > applied else { return }
        for signal in signals[applied...]
        where signal.member == "PropertiesChanged" && signal.changedInterface == MPRISNames.player {
            properties.merge(signal.changed) { $1 }
        }
        applied = signals.count
    }

    nonisolated static func describe(_ value: Value) -> String {
        switch value {
        case .string(let text): return text
        case .double(let number): return "\(number)"
        case .boolean(let flag): return "\(flag)"
        default: return "\(value)"
        }
    }

    nonisolated static func describe(_ properties: [String: Value]) -> String {
        let metadata = properties["Metadata"]?.stringVariantDictionary ?? [:]
        let shown = [
            "PlaybackStatus", "Rate", "Volume", "LoopStatus", "Shuffle", "CanGoNext", "CanGoPrevious", "CanSeek",
            "CanPlay", "CanPause",
        ]
        return
            "\(metadata["xesam:title"].map(describe) ?? "no title") (\(metadata["mpris:trackid"]?.objectPath?.rawValue ?? "no id")), "
            + shown.map { "\($0) \(properties[$0].map(describe) ?? "-")" }.joined(separator: ", ")
    }
}

extension Session {
    /// Waits until the Player properties, as GetAll answers them, satisfy `check`: re-checked
    /// at each PropertiesChanged (applied to a GetAll), and confirmed by a fresh GetAll (also
    /// made every 2 s without a match).
    /// Returns whether they did within `timeout`, and the last GetAll.
    func waitForPlayerState(timeout: Duration = .seconds(30), _ check: @escaping ([String: Value]) -> Bool) async throws
        -> (matched: Bool, properties: [String: Value])
    {
        let deadline = ContinuousClock.now + timeout
        var mirror = try await PlayerMirror(self)
        while true {
            // Re-checked at each signal; after 2 s without a match, a GetAll starts afresh.
            let remaining = min(deadline - ContinuousClock.now, .seconds(2))
            if remaining > .zero {
                _ = await waiter.wait(timeout: remaining) { [unowned self] in
                    mirror.update(signals)
                    return check(mirror.properties)
                }
            }
            let fresh = try await PlayerMirror(self)
            if check(fresh.properties) { return (true, fresh.properties) }
            if ContinuousClock.now >= deadline { return (false, fresh.properties) }
            mirror = fresh
        }
    }
}

/// Media time against wall time: the error is how far the media time is from `rate` times
/// the wall time between the two Position reads (their midpoints); `slack` is how much the
/// calls' latency could account for.
struct PlaybackProgress: CustomStringConvertible {
    var media: Double
    var wall: Double
    var rate: Double
    var slack: Double
    var error: Double { media - rate * wall }
    var description: String {
        String(
            format: "%.3f s of media in %.3f s at %.2fx: error %+.1f ms (call latency allows ±%.1f ms)", media, wall,
            rate, error * 1000, slack * 1000)
    }
}

extension Session {
    /// Position, and when it was read: the midpoint of the call, give or take `halfWidth`
    /// (half its round trip). The call is made and timed by the session's `TimedReader`, off
    /// the main actor: it is repeated (up to 5 times, for at most 0.2 s) until one comes back
    /// within 4 ms, else the quickest is taken.
    func bracketedPosition() async throws -> TimedReader.Reading {
        try await timedReader().position(of: busName)
    }

    /// Reads Position, lets playback run for `interval`, reads it again.
    func progress(rate: Double, over interval: Duration) async throws -> PlaybackProgress {
        let start = try await bracketedPosition()
        // A measured interval of real playback.
        try await Task.sleep(until: start.at + interval, clock: ContinuousClock())
        let end = try await bracketedPosition()
        return PlaybackProgress(
            media: Double(end.microseconds - start.microseconds) / 1_000_000, wall: (end.at - start.at).inSeconds,
            rate: rate,
            slack: rate * (start.halfWidth + end.halfWidth).inSeconds)
    }

    /// When the current track's start was heard, at rate 1: when Position was read less the
    /// position it answered, give or take `uncertainty` (seconds). A reference that does not
    /// depend on how soon the daemon got to announce Playing.
    func currentTrackStart() async throws -> (instant: ContinuousClock.Instant, uncertainty: Double) {
        let read = try await bracketedPosition()
        return (read.at - .microseconds(read.microseconds), read.halfWidth.inSeconds)
    }
}
