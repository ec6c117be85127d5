import Synchronization

/// How late the test process's main actor runs what is handed to it, sampled every 10 ms
/// from a task off it.
///
/// Every test in the process shares the main actor, and the client's signals are stamped
/// there when they are handled: a signal's stamp is late by as much as the main actor was
/// busy with other tests' work. A timing bound on the daemon adds this lag, so that it
/// measures the daemon, and a failure says how much of the lateness was the test
/// process's own.
final class MainActorLag: Sendable {
    private struct Sample {
        var asked: ContinuousClock.Instant
        var lag: Duration
    }

    private final class Samples: Sendable {
        let list = Mutex<[Sample]>([])
    }

    private let samples: Samples
    private let probe: Task<Void, Never>

    init() {
        let samples = Samples()
        self.samples = samples
        probe = Task.detached {
            while !Task.isCancelled {
                let asked = ContinuousClock.now
                let ran = await MainActor.run { ContinuousClock.now }
                samples.list.withLock { $0.append(Sample(asked: asked, lag: ran - asked)) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    deinit { probe.cancel() }

    /// The longest wait for the main actor among the hops asked for before `instant`, plus
    /// the sampling interval: a main actor held up from some moment before `instant` until
    /// `instant` held a hop up at least that long, less at most one interval.
    func worst(before instant: ContinuousClock.Instant) -> Duration {
        let longest = samples.list.withLock { list in list.filter { $0.asked <= instant }.map(\.lag).max() }
        return (longest ?? .zero) + .milliseconds(10)
    }
}
