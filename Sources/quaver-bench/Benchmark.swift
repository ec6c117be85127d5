import Foundation
import TestKit

/// One run: sets up, measures every figure and returns the markdown table.
@MainActor
final class Benchmark {
    let settings: Settings
    let report = Report()
    private(set) var programs: Programs!
    private(set) var sessions: [PlayerKind: PlayerSession] = [:]

    init(_ settings: Settings) { self.settings = settings }

    func run() async throws -> String {
        let began = ContinuousClock.now
        programs = try await setUp()
        defer { for session in sessions.values { session.close() } }
        for kind in PlayerKind.allCases {
            sessions[kind] = try await PlayerSession(kind, programs: programs, label: "daemon")
        }
        var phases: [String] = []
        func phase(_ figure: QuaverBench.Figure, _ body: () async throws -> Void) async {
            guard !settings.skip.contains(figure) else { return }
            let start = ContinuousClock.now
            log("\(figure.rawValue)…")
            do {
                try await body()
            } catch {
                report.problem("\(figure.rawValue): \(error)")
            }
            phases.append("\(figure.rawValue) \(Int((ContinuousClock.now - start).inSeconds.rounded())) s")
        }

        await phase(.startup) { try await startup() }
        let needDaemons = [.idle, .toggles, .getall, .seek].contains { !settings.skip.contains($0) }
        if needDaemons {
            do {
                try await launchDaemons()
                await phase(.idle) { try await idle() }
                await phase(.toggles) { try await toggleLatency() }
                await phase(.getall) { try await getAllThroughput() }
                await phase(.seek) { try await seekLatency() }
            } catch {
                report.problem("starting the players as daemons: \(error)")
            }
            for session in sessions.values { await session.stop() }
        }
        await phase(.gapless) { try await gapless() }
        await phase(.callgrind) { try await callgrind() }

        let took = ContinuousClock.now - began
        report.note(
            "The run took \(Int(took.inSeconds.rounded())) s (\(phases.joined(separator: ", "))), on a private bus per player; work files in \(programs.workDir.path)."
        )
        return report.markdown()
    }

    // MARK: Set-up

    /// Finds the programs, empties the work folder and generates the tracks.
    private func setUp() async throws -> Programs {
        let quaver = try quaverBinary(settings.quaver)
        guard let mpv = Tools.find(settings.mpv)?.path else {
            throw HarnessError("mpv is not installed (apt-get install mpv mpv-mpris)")
        }
        let pluginCandidates =
            [settings.mprisPlugin].compactMap { $0 } + [
                "/usr/lib/mpv-mpris/mpris.so", "/usr/lib/x86_64-linux-gnu/mpv-mpris/mpris.so",
                "/etc/mpv/scripts/mpris.so",
            ]
        guard let plugin = pluginCandidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw HarnessError("mpv-mpris's plugin is not installed (apt-get install mpv-mpris)")
        }
        guard let gstLaunch = Tools.find("gst-launch-1.0")?.path else {
            throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
        }

        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench")
        var programs = Programs(
            quaver: quaver, mpv: mpv, mprisPlugin: plugin, gstLaunch: gstLaunch, tracks: [],
            workDir: workDir)

        log("generating 3 tagged FLAC tracks of 60 s")
        programs.tracks = try await programs.makeTracks(3, seconds: "60")

        let quaverVersion = try await Tools.run([quaver, "--version"]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let mpvVersion =
            try await Tools.run([mpv, "--no-config", "--version"]).output
            .split(separator: "\n").first.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } ?? "mpv ?"
        let pluginVersion =
            (try? await Tools.run(["/usr/bin/dpkg-query", "-W", "-f", "${Version}", "mpv-mpris"]))
            .flatMap { $0.status == 0 ? $0.output : nil } ?? "unknown version"
        report.note("Quaver \(quaverVersion) (\(quaver)); \(mpvVersion); mpv-mpris \(pluginVersion) (\(plugin)).")
        return programs
    }

    /// Starts both players as daemons, paused on the first track, looping the playlist (so
    /// that no figure runs into the end of the queue), and waits until each shows its track.
    private func launchDaemons() async throws {
        for kind in PlayerKind.allCases {
            let session = sessions[kind]!
            try await session.start(programs.daemonCommand(kind, paused: true))
            try await session.waitForTrack()
            try await session.set("LoopStatus", .string("Playlist"))
            try await session.settle("Paused")
        }
    }
}
