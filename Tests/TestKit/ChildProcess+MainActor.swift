public import ChildProcess
import Dispatch
public import Foundation

extension ChildProcess {
    /// Calls `handler` on the main actor, on a later turn of the main queue, when the child
    /// ends (soon, if it has): for a test or a measurement that keeps its state there.
    public func onExitOnMainActor(_ handler: @escaping @Sendable @MainActor (Int32) -> Void) {
        onExit { status in
            DispatchQueue.main.async { MainActor.assumeIsolated { handler(status) } }
        }
    }

    /// `readLines(copyingTo:_:)` with each line handed to `handler` on the main actor, in
    /// order; its time stays the moment the line was read, not handled.
    public func readLinesOnMainActor(
        copyingTo copy: FileHandle? = nil,
        _ handler: @escaping @Sendable @MainActor (String, ContinuousClock.Instant) -> Void
    ) {
        readLines(copyingTo: copy) { line, time in
            DispatchQueue.main.async { MainActor.assumeIsolated { handler(line, time) } }
        }
    }
}
