import Dispatch
import Glibc

/// The signals the daemon answers, each on the main actor in place of its default action
/// (the end of the process at once, with nothing saved).
@MainActor
final class Signals {
    /// Kept for the life of the daemon: a source let go of stops answering.
    private var sources: [any DispatchSourceSignal] = []

    /// Answers `signalNumber` with `handler`, on the main queue, from now on.
    func answer(_ signalNumber: Int32, with handler: @escaping @MainActor @Sendable () -> Void) {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
        source.setEventHandler { MainActor.assumeIsolated { handler() } }
        source.resume()
        sources.append(source)
    }
}
