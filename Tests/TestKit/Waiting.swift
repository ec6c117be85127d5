public import Dispatch

/// Lets a test wait for a condition with a deadline, on the main actor, without sleeping.
///
/// A condition is checked again each time `poke()` reports that something happened (a
/// signal arrived, a process exited, an observer was called), and, for conditions nothing
/// announces (a file another process writes, a position), every polling interval. A wait
/// that passes its deadline returns false: the test fails with its own message rather than
/// hanging.
@MainActor
open class Waiter {
    private var pending: [Int: (check: @MainActor () -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextID = 0

    public init() {}

    /// Checks every pending condition again (call after each new event).
    public func poke() {
        for (id, waiter) in pending where waiter.check() {
            pending[id] = nil
            waiter.continuation.resume(returning: true)
        }
    }

    /// True once `check` holds; false when `timeout` passes first. With `interval`, the
    /// condition is also checked that often.
    public func wait(
        timeout: Duration, pollingEvery interval: Duration? = nil, until check: @escaping @MainActor () -> Bool
    ) async -> Bool {
        if check() { return true }
        return await withCheckedContinuation { continuation in
            let id = nextID
            nextID += 1
            pending[id] = (check, continuation)
            DispatchQueue.main.asyncAfter(deadline: .now() + timeout.timeInterval) { [weak self] in
                MainActor.assumeIsolated { self?.finish(id, result: false) }
            }
            if let interval { poll(id, every: interval) }
        }
    }

    /// Lets `duration` of real time pass without blocking the main actor: for checking that
    /// something does NOT happen, never for waiting for something that does.
    public func elapse(_ duration: Duration) async {
        _ = await wait(timeout: duration) { false }
    }

    private func finish(_ id: Int, result: Bool) {
        guard let waiter = pending.removeValue(forKey: id) else { return }
        waiter.continuation.resume(returning: result)
    }

    private func poll(_ id: Int, every interval: Duration) {
        DispatchQueue.main.asyncAfter(deadline: .now() + interval.timeInterval) { [weak self] in
            MainActor.assumeIsolated {
                guard let self, let waiter = self.pending[id] else { return }
                if waiter.check() { self.finish(id, result: true) } else { self.poll(id, every: interval) }
            }
        }
    }
}

extension Waiter {
    /// Polls `check` every `interval` until it holds: true, or false once `timeout` has passed.
    /// For what another process holds and announces to no one a test can hear (a property
    /// read over D-Bus, an inhibitor held): unlike `wait`, the check suspends and may throw,
    /// and each read ends before the next starts.
    public static func poll(
        timeout: Duration, every interval: Duration, until check: () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while try await !check() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: interval)
        }
        return true
    }
}

/// Collects events and lets a test wait, with a deadline, until they satisfy a condition.
@MainActor
public final class EventRecorder<Event> {
    /// Every event recorded, in order.
    public private(set) var events: [Event] = []
    private let waiter = Waiter()

    public init() {}

    /// Records `event` and wakes the waits it satisfies.
    public func record(_ event: Event) {
        events.append(event)
        waiter.poke()
    }

    /// True once `check` holds for the recorded events, false after `timeout`.
    public func wait(timeout: Duration = .seconds(20), until check: @escaping ([Event]) -> Bool) async -> Bool {
        await waiter.wait(timeout: timeout) { [unowned self] in check(events) }
    }

    /// Waits until at least `count` events were recorded.
    public func wait(forCount count: Int, timeout: Duration = .seconds(20)) async -> Bool {
        await wait(timeout: timeout) { $0.count >= count }
    }
}

extension Duration {
    /// The same length as Dispatch takes a deadline's offset.
    public var timeInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }

    /// The length in seconds, as a floating-point number.
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The length in milliseconds, as a floating-point number.
    public var inMilliseconds: Double { inSeconds * 1e3 }
}

extension Optional where Wrapped == Duration {
    /// The length in seconds, nil for none.
    public var inSeconds: Double? { self?.inSeconds }
}
