import DBus
import Dispatch

/// A failure that ends a measurement, with a sentence saying what went wrong.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Something a player (or its process) did, stamped with the moment the benchmark saw it.
struct BusEvent {
    enum Kind {
        /// `org.freedesktop.DBus.Properties.PropertiesChanged` from `/org/mpris/MediaPlayer2`.
        case propertiesChanged(interface: String, changed: [String: Value])
        /// `org.mpris.MediaPlayer2.Player.Seeked`, position in microseconds.
        case seeked(position: Int64)
        /// The bus's `NameOwnerChanged`; `newOwner` is empty when the name was released.
        case nameOwnerChanged(name: String, newOwner: String)
        /// The player process ended.
        case exited(status: Int32)
        /// One line the player printed (only when launched with `watchOutput`).
        case output(line: String)
    }

    var kind: Kind
    var time: ContinuousClock.Instant

    /// The new `PlaybackStatus` if this is a Player `PropertiesChanged` carrying one.
    var playbackStatus: String? {
        guard case .propertiesChanged(let interface, let changed) = kind, interface == MPRIS.player else { return nil }
        return changed["PlaybackStatus"]?.unwrapped.string
    }

    var isSeeked: Bool {
        if case .seeked = kind { return true }
        return false
    }
}

/// One awaited event: it catches the first matching event posted after it was created, even
/// one that arrives before anybody waits for it (a signal can overtake a method reply).
@MainActor
final class Expectation {
    let what: String
    fileprivate let match: (BusEvent) -> Bool
    fileprivate(set) var caught: BusEvent?
    fileprivate var continuation: CheckedContinuation<BusEvent?, Never>?
    fileprivate var deadline: DispatchWorkItem?

    fileprivate init(what: String, match: @escaping (BusEvent) -> Bool) {
        self.what = what
        self.match = match
    }
}

/// Hands posted events to the expectations waiting for them. Waits end on the event or on a
/// deadline, never on a timer that polls.
@MainActor
final class EventHub {
    private var open: [Expectation] = []

    /// Starts watching for an event matching `match`; pass the result to `wait`.
    func expect(_ what: String, _ match: @escaping (BusEvent) -> Bool) -> Expectation {
        let expectation = Expectation(what: what, match: match)
        open.append(expectation)
        return expectation
    }

    /// Delivers an event to every open expectation it matches.
    func post(_ event: BusEvent) {
        guard !open.isEmpty else { return }
        open.removeAll { expectation in
            guard expectation.match(event) else { return false }
            expectation.caught = event
            expectation.deadline?.cancel()
            if let continuation = expectation.continuation {
                expectation.continuation = nil
                continuation.resume(returning: event)
            }
            return true
        }
    }

    /// The event `expectation` caught, waiting for it until `timeout` has passed.
    func wait(_ expectation: Expectation, timeout: Duration) async throws -> BusEvent {
        if let caught = expectation.caught { return caught }
        let event: BusEvent? = await withCheckedContinuation { continuation in
            expectation.continuation = continuation
            let deadline = DispatchWorkItem { [weak self] in
                MainActor.assumeIsolated {
                    guard let continuation = expectation.continuation else { return }
                    expectation.continuation = nil
                    self?.open.removeAll { $0 === expectation }
                    continuation.resume(returning: nil)
                }
            }
            expectation.deadline = deadline
            DispatchQueue.main.asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: deadline)
        }
        guard let event else { throw BenchError("no \(expectation.what) within \(timeout)") }
        return event
    }

    /// Shorthand: expect and wait in one step (only for events that cannot already have happened).
    func next(_ what: String, timeout: Duration, _ match: @escaping (BusEvent) -> Bool) async throws -> BusEvent {
        try await wait(expect(what, match), timeout: timeout)
    }
}

/// Names of the MPRIS interfaces and object.
enum MPRIS {
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let path = ObjectPath("/org/mpris/MediaPlayer2")!
    static let properties = "org.freedesktop.DBus.Properties"
}

extension Duration {
    /// Milliseconds as a floating-point number.
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e3 + Double(attoseconds) * 1e-15
    }

    var seconds: Double { milliseconds / 1e3 }

    /// The same length as a `DispatchTimeInterval` (nanosecond resolution).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
