public import ChildProcess
public import Foundation

/// What a test reports instead of hanging or crashing: a step that could not be done.
public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A throwaway `dbus-daemon --session` for one test, killed by `stop()` or when released.
@MainActor
public final class PrivateBus {
    /// The daemon.
    public let process: ChildProcess
    /// Its address, for `DBUS_SESSION_BUS_ADDRESS` or `Connection(address:)`.
    public let address: String
    /// The bus's own folder, which holds its socket; removed by `stop()`.
    public let directory: URL

    /// Starts the daemon and reads its address without blocking the main actor.
    /// - Parameters:
    ///   - errorLog: a file for what the daemon says on standard error (dropped without it).
    ///   - prepare: called with the bus's folder before the daemon starts; returns extra
    ///     environment for it (where to find activatable services, for instance).
    public init(errorLog: URL? = nil, prepare: (URL) throws -> [String: String] = { _ in [:] }) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard let daemon = Tools.find("dbus-daemon") else { throw HarnessError("dbus-daemon is not installed") }
        let extra = try prepare(directory)
        process = try ChildProcess(
            // The socket lives in the bus's folder, removed with it: the session default
            // (`unix:tmpdir=/tmp`) leaves a socket file in /tmp for every bus that is killed.
            daemon.path,
            ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:dir=\(directory.path)"],
            environment: ProcessInfo.processInfo.environment.merging(extra) { $1 }, output: .pipe,
            error: errorLog.map { .file($0.path) } ?? .null)
        // The address line is the first thing it prints; if the daemon fails, its exit ends
        // the read. It is read on a thread of its own: when many tests start at once, dozens
        // of buses start together, and blocking reads on the main actor add up to seconds.
        address = await process.firstLine()
        guard address.hasPrefix("unix:") else {
            process.killAndWait()
            try? FileManager.default.removeItem(at: directory)
            throw HarnessError("dbus-daemon printed no address (got '\(address)')")
        }
    }

    /// Kills the bus and removes its folder.
    public func stop() {
        process.killAndWait()
        try? FileManager.default.removeItem(at: directory)
    }

    isolated deinit { stop() }
}
