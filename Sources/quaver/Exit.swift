import ArgumentParser
import Dispatch
import Glibc

/// The one way the process ends once a command runs on the main queue (the player, `quaver
/// doctor`): reading this file is enough to know what runs last and with which status.
///
/// What fails before that, synchronously inside `run()`, is thrown instead and ends through
/// ArgumentParser: an `ExitCode` with its status (2: invalid configuration; 1: a running
/// Quaver refused every path handed to it), any other error with its message and 1, a
/// command line it rejects with its usage and 64.
///
/// The statuses of the daemon: 0 when asked to quit (D-Bus `Quit`, SIGINT, SIGTERM) or when
/// another process owns the name; 1 when the session bus goes away or the name cannot be
/// owned. `quaver doctor`: 1 when a check fails, else 0.
enum Exit {
    /// Ends the process now with `status`, through the C library's exit (not `_exit`), so
    /// that standard output is flushed (doctor's report) and its exit handlers run.
    static func now(_ status: ExitCode) -> Never {
        Glibc.exit(status.rawValue)
    }

    /// Ends the process with `status` once `release` has called back, or after `fallback`
    /// whatever it does: GStreamer can trip its assertions when the process exits under its
    /// streaming threads, and a pipeline that never lets go must not keep the process alive.
    /// - Parameter release: starts freeing what must be freed first and calls its argument,
    ///   on the main actor, when that is done.
    @MainActor
    static func after(
        _ release: (@escaping @MainActor @Sendable () -> Void) -> Void, status: ExitCode,
        fallback: DispatchTimeInterval = .seconds(1)
    ) {
        // The last warnings reach problems.log first, unless the disk takes past `fallback`.
        release { ProblemLog.afterPendingWrites { now(status) } }
        DispatchQueue.main.asyncAfter(deadline: .now() + fallback) { now(status) }
    }
}
