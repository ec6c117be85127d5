import DBus
import TestKit

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
        guard case .propertiesChanged(let interface, let changed) = kind, interface == MPRISNames.player else {
            return nil
        }
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

    fileprivate init(what: String, match: @escaping (BusEvent) -> Bool) {
        self.what = what
        self.match = match
    }
}

/// Hands posted events to the expectations waiting for them. Waits end on the event or on a
/// deadline (TestKit's `Waiter`), never on a timer that polls.
@MainActor
final class EventHub {
    private var open: [Expectation] = []
    private let waiter = Waiter()

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
            return true
        }
        waiter.poke()
    }

    /// The event `expectation` caught, waiting for it until `timeout` has passed.
    func wait(_ expectation: Expectation, timeout: Duration) async throws -> BusEvent {
        guard await waiter.wait(timeout: timeout, until: { expectation.caught != nil }), let event = expectation.caught
        else {
            open.removeAll { $0 === expectation }
            throw HarnessError("no \(expectation.what) within \(timeout)")
        }
        return event
    }

    /// Shorthand: expect and wait in one step (only for events that cannot already have happened).
    func next(_ what: String, timeout: Duration, _ match: @escaping (BusEvent) -> Bool) async throws -> BusEvent {
        try await wait(expect(what, match), timeout: timeout)
    }
}
