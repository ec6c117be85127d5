import ChildProcess
public import Foundation

/// The programs tests and the benchmark run: found on `PATH`, or built beside the running
/// executable.
public enum Tools {
    /// `name` from `PATH` (or the usual folders), nil when it is not installed. A name with a
    /// slash is a path: itself, if it is executable.
    public static func find(_ name: String) -> URL? {
        if name.contains("/") {
            return FileManager.default.isExecutableFile(atPath: name) ? URL(fileURLWithPath: name) : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/bin"] {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// The package's folder (where `scripts/` is), found from this file's place in it.
    public static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

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

    /// HOME and every XDG base folder (config, cache, state, data) inside `home`: the
    /// environment that keeps a program's files in a folder of the caller's.
    public static func privateHome(_ home: URL) -> [String: String] {
        [
            "HOME": home.path,
            "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_STATE_HOME": home.appendingPathComponent(".local/state").path,
            "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
        ]
    }

    /// Runs a program to completion without blocking the main actor.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws
        -> (status: Int32, output: String, error: String)
    {
        try await ChildProcess.run(executable.path, arguments, environment: environment)
    }

    /// Runs `command` (program first) to its end without blocking the main actor: its exit
    /// status and everything it printed, standard output and error together (kept in `log`
    /// when given). A program still running at `timeout` is killed and reported.
    public static func run(
        _ command: [String], environment: [String: String]? = nil, log: URL? = nil, timeout: Duration = .seconds(120)
    ) async throws -> (status: Int32, output: String) {
        let child: ChildProcess
        do {
            child = try ChildProcess(
                command[0], Array(command.dropFirst()), environment: environment,
                output: log.map { .file($0.path, append: false) } ?? .pipe, error: .output)
        } catch {
            throw HarnessError("cannot run \(command[0]): \(error)")
        }
        async let piped = child.output?.readAll()
        guard let status = await child.exit(timeout: timeout) else {
            child.killAndWait()
            _ = await piped
            throw HarnessError("\(command[0]) did not finish within \(timeout)")
        }
        let output = await piped.map { String(decoding: $0, as: UTF8.self) }
        return (status, output ?? log.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? "")
    }

    /// Runs `quaver --make-test-tracks FOLDER ARGUMENTS` (tagged tracks of a tone) with
    /// `registry` as GStreamer's plugin registry, and returns the lines it printed: a track's
    /// path each (then a tab and its cover's path, with `--track-covers`).
    public static func makeTestTracks(
        _ quaver: String, into folder: URL, _ arguments: [String], registry: String
    ) async throws -> [String] {
        let result = try await ChildProcess.run(
            quaver, ["--make-test-tracks", folder.path] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": registry]) { $1 })
        guard result.status == 0 else {
            throw HarnessError("quaver --make-test-tracks failed (status \(result.status)): \(result.error)")
        }
        return result.output.split(separator: "\n").map(String.init)
    }
}
