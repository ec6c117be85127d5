import Foundation
import Testing

/// Starts `/bin/sh -c script` with posix_spawn. (Foundation's Process was seen here to miss
/// the end of a short-lived child while a long-lived one ran, leaving its caller waiting.)
private func spawnShell(_ script: String) throws -> pid_t {
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { throw HarnessError("cannot run: \(script)") }
    return pid
}

/// Waits for a child started by `spawnShell` and returns its exit status.
private func reap(_ pid: pid_t) async -> Int32 {
    await Task.detached {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }.value
}

private func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// A PulseAudio server of the test's own: a null sink, its socket in a private folder, no
/// other clients. Quaver plays to it as it would to a desktop's sound server.
@MainActor
final class PulseServer {
    let directory: URL
    let socket: String
    private var pid: pid_t = 0

    init() async throws {
        guard let pulseaudio = Tools.find("pulseaudio"), Tools.find("pactl") != nil else {
            throw HarnessError("pulseaudio and pactl are needed (scripts/setup installs them)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-pulse-\(UUID().uuidString.prefix(8))")
        let runtime = directory.appendingPathComponent("rt")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        socket = runtime.appendingPathComponent("native").path
        let script = directory.appendingPathComponent("server.pa")
        try """
            load-module module-native-protocol-unix socket=\(socket) auth-anonymous=1
            load-module module-null-sink sink_name=quaver_test_sink
            set-default-sink quaver_test_sink
            """.write(to: script, atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("pulseaudio.log")
        let environment = "HOME=\(quoted(directory.path)) XDG_RUNTIME_DIR=\(quoted(runtime.path)) XDG_CONFIG_HOME=\(quoted(directory.path))"
        pid = try spawnShell("\(environment) exec \(quoted(pulseaudio.path)) -n -F \(quoted(script.path)) --daemonize=no --exit-idle-time=-1 --use-pid-file=no --disable-shm=yes --log-target=stderr > \(quoted(log.path)) 2>&1")
        // Ready once it answers (a server has no signal to wait for; a short poll, bounded).
        let deadline = ContinuousClock.now + .seconds(20)
        while try await pactl(["info"]).status != 0 {
            guard kill(pid, 0) == 0, ContinuousClock.now < deadline else {
                stop()
                throw HarnessError("pulseaudio did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    var environment: [String: String] { ["PULSE_SERVER": "unix:" + socket] }

    /// Runs pactl against this server.
    func pactl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let output = directory.appendingPathComponent("pactl-\(UUID().uuidString.prefix(8)).out")
        let command = ([Tools.find("pactl")!.path] + arguments).map(quoted).joined(separator: " ")
        let child = try spawnShell("PULSE_SERVER=\(quoted("unix:" + socket)) exec \(command) > \(quoted(output.path)) 2>&1")
        let status = await reap(child)
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: output)
        return (status, text)
    }

    /// The properties of every stream playing to the server, one dictionary per stream.
    func sinkInputProperties() async throws -> [[String: String]] {
        let listing = try await pactl(["list", "sink-inputs"])
        guard listing.status == 0 else { throw HarnessError("pactl list sink-inputs: \(listing.output)") }
        var streams: [[String: String]] = []
        for line in listing.output.split(separator: "\n") {
            if line.hasPrefix("Sink Input #") { streams.append([:]); continue }
            let parts = line.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !streams.isEmpty else { continue }
            let value = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            streams[streams.count - 1][parts[0].trimmingCharacters(in: .whitespaces)] = value
        }
        return streams
    }

    func stop() {
        if pid > 0 {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            pid = 0
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Quaver against a real sound server (PulseAudio, started by the test with a null sink).
@Suite("a real sound server")
@MainActor
struct SoundServerTests {
    @Test("the stream is music and says whose it is: media.role, application.name, .id and .icon_name")
    func streamProperties() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 10)
        let server = try await PulseServer()
        defer { server.stop() }
        let session = try Session()
        defer { session.stop() }
        session.extraEnvironment = server.environment
        try await session.launch([tracks[0].path], sink: "pulsesink")
        try await session.waitForStatus("Playing")
        let streams = try await server.sinkInputProperties()
        let ours = streams.filter { $0["application.process.id"] == session.daemon.map { String($0.processIdentifier) } }
        #expect(ours.count == 1, "\(streams)")
        let stream = try #require(ours.first)
        #expect(stream["media.role"] == "music")
        #expect(stream["application.name"] == "Quaver")
        #expect(stream["application.id"] == "quaver")
        #expect(stream["application.icon_name"] == "quaver")
    }
}
