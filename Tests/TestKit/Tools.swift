import ChildProcess
public import Foundation

/// The programs tests run: found on `PATH`, or built beside the test bundle.
public enum Tools {
    /// `name` from `PATH` (or the usual folders), nil when it is not installed.
    public static func find(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// The executable `name` that the package builds beside this test bundle.
    public static func built(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name)
    }

    /// The `quaver` executable built beside this test bundle (or `$QUAVER_BINARY`).
    public static var quaver: URL {
        if let explicit = ProcessInfo.processInfo.environment["QUAVER_BINARY"] { return URL(fileURLWithPath: explicit) }
        return built("quaver")
    }

    /// Runs a program to completion without blocking the main actor.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws
        -> (status: Int32, output: String, error: String)
    {
        try await ChildProcess.run(executable.path, arguments, environment: environment)
    }
}
