import ArgumentParser
import DBus
import Foundation

/// The options of the scale benchmark (`quaver-bench --scale`).
struct ScaleOptions: ParsableArguments {
    @Flag(help: """
        Instead of the comparison with mpv: measure Quaver alone with a queue of --scale-tracks generated tracks, \
        named as one folder and as one .m3u8 playlist (first sound, load time, D-Bus latency during the load, \
        memory per queued track, TrackList calls). --rounds, --quaver, --work-dir and --output apply; the \
        comparison's other options do not.
        """)
    var scale = false

    @Option(help: "Tracks in the queue (hard links of one 0.5 s FLAC).")
    var scaleTracks = 100_000

    @Option(help: "Seconds from process start within which the queue must be loaded and playing, or those figures fail.")
    var scaleTimeout = 60.0

    @Option(help: "GetTracksMetadata calls per round.")
    var metadataCalls = 20

    @Option(help: "Track ids asked for in each GetTracksMetadata call.")
    var metadataBatch = 1000

    @Option(help: "AddTrack calls per round.")
    var addtrackCalls = 2000

    @Option(help: "AddTrack calls kept in flight.")
    var addtrackInFlight = 4

    func check() throws {
        guard scaleTracks >= 2, metadataCalls >= 1, metadataBatch >= 1, addtrackCalls >= 2, addtrackInFlight >= 1 else {
            throw ValidationError("scale counts must be positive (--scale-tracks and --addtrack-calls at least 2)")
        }
        guard metadataBatch <= scaleTracks else { throw ValidationError("--metadata-batch must not exceed --scale-tracks") }
        guard scaleTimeout >= 1 else { throw ValidationError("--scale-timeout must be at least 1 s") }
    }

    func settings(quaver: String?, workDir: String?, rounds: Int) -> ScaleSettings {
        ScaleSettings(
            quaver: quaver, workDir: workDir, rounds: rounds, tracks: scaleTracks,
            timeout: .milliseconds(Int(scaleTimeout * 1000)), metadataCalls: metadataCalls, metadataBatch: metadataBatch,
            addTrackCalls: addtrackCalls, addTrackInFlight: addtrackInFlight)
    }
}

struct ScaleSettings: Sendable {
    var quaver: String?
    var workDir: String?
    var rounds: Int
    var tracks: Int
    var timeout: Duration
    var metadataCalls: Int
    var metadataBatch: Int
    var addTrackCalls: Int
    var addTrackInFlight: Int
}

/// How the queue is named on Quaver's command line.
enum ScaleSource: String, CaseIterable, Sendable {
    case folder, playlist

    var title: String {
        switch self {
        case .folder: "folder"
        case .playlist: "playlist (.m3u8)"
        }
    }

    /// Alternates which source goes first, round after round.
    static func order(round: Int) -> [ScaleSource] { round.isMultiple(of: 2) ? [.folder, .playlist] : [.playlist, .folder] }
}

/// The rows of the scale table, in order.
enum ScaleFigure: CaseIterable {
    case firstSound, nameOwned, loadTime, loadCPU
    case getP50, getP99, getMax, getCount, getAfterLoadMax
    case rssLoaded, rssOneTrack, bytesPerTrack
    case tracksProperty, metadata
    case addTrackRate, addTrackP99
    case quit

    var title: String {
        switch self {
        case .firstSound: "time to first sound: process start → PlaybackStatus Playing"
        case .nameOwned: "process start → bus name owned"
        case .loadTime: "total load time: process start → `queue loaded:` line"
        case .loadCPU: "Quaver CPU time, process start → queue loaded"
        case .getP50: "Get(PlaybackStatus) during the load, one in flight: p50"
        case .getP99: "Get(PlaybackStatus) during the load: p99"
        case .getMax: "Get(PlaybackStatus) during the load: max"
        case .getCount: "Get(PlaybackStatus) calls answered during the load"
        case .getAfterLoadMax: "Get(PlaybackStatus) in the 1 s after the `queue loaded:` line: max"
        case .rssLoaded: "VmRSS, queue loaded, paused"
        case .rssOneTrack: "VmRSS, the same command with 1 track, paused"
        case .bytesPerTrack: "memory per queued track: (VmRSS − VmRSS with 1 track) / tracks"
        case .tracksProperty: "Get(TrackList.Tracks)"
        case .metadata: "GetTracksMetadata, 1 call"
        case .addTrackRate: "AddTrack answered per second"
        case .addTrackP99: "AddTrack latency, p99"
        case .quit: "Quit → process exit (queue of all tracks and the added ones)"
        }
    }

    var unit: String {
        switch self {
        case .firstSound, .nameOwned, .getP50, .getP99, .getMax, .getAfterLoadMax, .tracksProperty, .metadata, .addTrackP99, .quit: "ms"
        case .loadTime, .loadCPU: "s"
        case .getCount: "calls"
        case .rssLoaded, .rssOneTrack: "MiB"
        case .bytesPerTrack: "bytes"
        case .addTrackRate: "calls/s"
        }
    }

    var decimals: Int {
        switch self {
        case .firstSound, .nameOwned, .getCount, .bytesPerTrack, .addTrackRate, .quit: 0
        case .loadTime, .loadCPU, .getP50, .getP99, .addTrackP99: 2
        case .getMax, .getAfterLoadMax, .rssLoaded, .rssOneTrack, .tracksProperty, .metadata: 1
        }
    }

    var higherIsBetter: Bool { self == .addTrackRate }

    /// The value each median must stay under, in the row's unit.
    var target: Double? {
        switch self {
        case .firstSound: 500
        case .loadTime: 3
        case .getP99: 5
        case .bytesPerTrack: 1024
        default: nil
        }
    }

    /// Rows whose value is a statistic of all samples of every round pooled (the spread is
    /// the same statistic per round).
    var isPooled: Bool { [.getP50, .getP99, .getMax, .getAfterLoadMax, .addTrackP99].contains(self) }

    /// The statistic of a pooled row.
    func pooledStatistic(_ samples: [Double]) -> Double {
        switch self {
        case .getP50: samples.percentile(50)
        case .getMax, .getAfterLoadMax: samples.max() ?? .nan
        default: samples.percentile(99)
        }
    }
}

/// What was measured for one figure and one source, over the rounds.
struct ScaleSamples {
    var rounds: [Double] = []
    var pooled: [Double] = []
    var failures = 0
}

/// The generated media of the run.
struct ScaleMedia {
    /// The folder of all the tracks, and a playlist naming them.
    var folder: URL
    var playlist: URL
    /// A folder and a playlist with one track (the memory baseline).
    var oneFolder: URL
    var onePlaylist: URL
    /// One of the generated files.
    var sampleTrack: URL

    func path(_ source: ScaleSource, oneTrack: Bool) -> String {
        switch (source, oneTrack) {
        case (.folder, false): folder.path
        case (.playlist, false): playlist.path
        case (.folder, true): oneFolder.path
        case (.playlist, true): onePlaylist.path
        }
    }
}

/// Quaver alone with a queue of many tracks: start-up, background loading, memory and the
/// TrackList interface at that size. Prints a markdown table of its own.
@MainActor
final class ScaleBenchmark {
    static let playerName = "quaverbench"
    static let busName = "org.mpris.MediaPlayer2.\(playerName)"
    static let trackList = "org.mpris.MediaPlayer2.TrackList"
    static let noTrack = ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!
    static let expectedPrefix = "/\(playerName)/track"

    let settings: ScaleSettings
    private let report = Report()
    private var programs: Programs!
    private var media: ScaleMedia!
    private var results: [ScaleFigure: [ScaleSource: ScaleSamples]] = [:]
    /// Problems by text, with the rounds they happened in, in order of first appearance.
    private var problems: [(text: String, rounds: [Int])] = []
    /// Observations made once (the shape of replies), by key.
    private var observed: Set<String> = []

    init(_ settings: ScaleSettings) { self.settings = settings }

    func run() async throws -> String {
        let began = ContinuousClock.now
        try await setUp()
        await warmUp()
        for round in 0..<settings.rounds {
            for source in ScaleSource.order(round: round) {
                log("round \(round + 1) of \(settings.rounds), \(source.title): 1 track (memory baseline)")
                let baseline = await oneTrackRun(source, round: round)
                log("round \(round + 1) of \(settings.rounds), \(source.title): \(settings.tracks) tracks")
                await fullRun(source, round: round, baselineKiB: baseline)
            }
        }
        let took = ContinuousClock.now - began
        report.note("The run took \(Int(took.seconds.rounded())) s, each Quaver on its own private dbus-daemon with its own HOME and XDG folders, on a machine of \(ProcessInfo.processInfo.activeProcessorCount) cores shared by Quaver, its dbus-daemon and the benchmark client; work files and Quaver's logs in \(programs.workDir.path).")
        return markdown()
    }

    // MARK: Set-up

    private func setUp() async throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let quaver = settings.quaver ?? me.deletingLastPathComponent().appendingPathComponent("quaver").path
        guard FileManager.default.isExecutableFile(atPath: quaver) else {
            throw BenchError("no quaver binary at \(quaver) (build it, or pass --quaver)")
        }
        guard let dbusDaemon = findProgram("dbus-daemon") else { throw BenchError("dbus-daemon is not installed") }
        log("emptying the work folder")
        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench-scale")
        programs = Programs(quaver: quaver, mpv: "", mprisPlugin: "", dbusDaemon: dbusDaemon, gstLaunch: "", tracks: [], workDir: workDir)
        media = try await generate()
        let version = try await runProgram([quaver, "--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        report.note("Quaver \(version) (\(quaver)), started as `quaver --no-resume --audio-sink \"fakesink sync=true\" --name \(Self.playerName) SOURCE`, SOURCE being \(media.folder.path) or \(media.playlist.path).")
    }

    /// One short FLAC, hard-linked `tracks` times into one flat folder, and a playlist of them
    /// all by absolute path; a folder and a playlist of one track for the memory baseline.
    private func generate() async throws -> ScaleMedia {
        let workDir = programs.workDir
        let count = settings.tracks
        log("generating \(count) tracks")
        let began = ContinuousClock.now
        let made = try await runProgram(
            [programs.quaver, "--make-test-tracks", workDir.appendingPathComponent("seed").path, "--track-count", "1", "--track-seconds", "0.5"],
            environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": programs.gstRegistry]) { $1 })
        guard made.status == 0, let seedPath = made.output.split(separator: "\n").map(String.init).first(where: { $0.hasSuffix(".flac") })
        else { throw BenchError("quaver --make-test-tracks made no track: \(made.output)") }
        let seed = URL(fileURLWithPath: seedPath)
        let seedTime = ContinuousClock.now - began

        let width = max(6, String(count).count)
        func name(_ number: Int) -> String {
            let digits = String(number)
            return "track" + String(repeating: "0", count: width - digits.count) + digits + ".flac"
        }
        // A file system caps the links of one file (ext4: 65,000): past that, link a fresh copy.
        var source = seed
        var copies = 0
        func hardLink(_ target: URL) throws {
            if link(source.path, target.path) == 0 { return }
            if errno == EMLINK {
                copies += 1
                let copy = seed.deletingLastPathComponent().appendingPathComponent("copy-\(copies).flac")
                try FileManager.default.copyItem(at: seed, to: copy)
                source = copy
                if link(source.path, target.path) == 0 { return }
            }
            throw BenchError("cannot hard-link \(source.path) to \(target.path): \(String(cString: strerror(errno)))")
        }
        let folder = workDir.appendingPathComponent("library", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var playlistText = "#EXTM3U\n"
        playlistText.reserveCapacity(count * (folder.path.count + width + 12))
        for number in 1...count {
            let file = folder.appendingPathComponent(name(number))
            try hardLink(file)
            playlistText += file.path + "\n"
        }
        let linkTime = ContinuousClock.now - began - seedTime
        let playlist = workDir.appendingPathComponent("library.m3u8")
        try playlistText.write(to: playlist, atomically: false, encoding: .utf8)
        let total = ContinuousClock.now - began

        // The baseline's one track is longer, so that it still plays (not Stopped at the end
        // of its queue) when it is paused.
        let long = try await runProgram(
            [programs.quaver, "--make-test-tracks", workDir.appendingPathComponent("seed-long").path, "--track-count", "1", "--track-seconds", "60"],
            environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": programs.gstRegistry]) { $1 })
        guard long.status == 0, let longPath = long.output.split(separator: "\n").map(String.init).first(where: { $0.hasSuffix(".flac") })
        else { throw BenchError("quaver --make-test-tracks made no track: \(long.output)") }
        let oneFolder = workDir.appendingPathComponent("one", isDirectory: true)
        try FileManager.default.createDirectory(at: oneFolder, withIntermediateDirectories: true)
        let oneTrack = oneFolder.appendingPathComponent(name(1))
        guard link(longPath, oneTrack.path) == 0 else {
            throw BenchError("cannot hard-link \(longPath) to \(oneTrack.path): \(String(cString: strerror(errno)))")
        }
        let onePlaylist = workDir.appendingPathComponent("one.m3u8")
        try ("#EXTM3U\n" + oneTrack.path + "\n").write(to: onePlaylist, atomically: false, encoding: .utf8)

        let size = (try? FileManager.default.attributesOfItem(atPath: seed.path)[.size] as? Int) ?? 0
        report.note(String(
            format: "Generation (not a figure): %.2f s in all — one tagged 0.5 s FLAC of %d bytes made by `quaver --make-test-tracks` in %.2f s, hard-linked %d times into %@ (%@) with its playlist in %.2f s. (The 1-track baseline plays another track of 60 s, made after.)",
            total.seconds, size, seedTime.seconds, count, folder.path,
            copies == 0 ? "one file" : "\(copies + 1) identical files, the file system capping the links of one", linkTime.seconds))
        log(String(format: "generated in %.2f s", total.seconds))
        return ScaleMedia(
            folder: folder, playlist: playlist, oneFolder: oneFolder, onePlaylist: onePlaylist,
            sampleTrack: folder.appendingPathComponent(name(count / 2)))
    }

    /// Starts and stops Quaver once with one track, so that the first measured start does not
    /// pay for cold caches.
    private func warmUp() async {
        log("warm-up start")
        guard let run = try? launch(media.path(.folder, oneTrack: true), label: "warm-up") else { return }
        defer { run.session.close() }
        _ = try? await run.session.events.wait(run.owned, timeout: .seconds(20))
        await run.session.stop()
    }

    // MARK: One Quaver

    /// A started Quaver and what the benchmark watches for from its start.
    private struct Launched {
        let session: PlayerSession
        let start: ContinuousClock.Instant
        /// The bus name taken, or the process ended.
        let owned: Expectation
        let playing: Expectation
        let loaded: Expectation
    }

    private func command(_ source: String) -> [String] {
        [programs.quaver, "--no-resume", "--audio-sink", "fakesink sync=true", "--name", Self.playerName, source]
    }

    private func launch(_ source: String, label: String) throws -> Launched {
        let session = try PlayerSession(.quaver, programs: programs, label: label, busName: Self.busName)
        let busName = Self.busName
        let owned = session.events.expect("\(busName) owned") { event in
            switch event.kind {
            case .nameOwnerChanged(let name, let owner): name == busName && !owner.isEmpty
            case .exited: true
            default: false
            }
        }
        let playing = session.events.expect("PlaybackStatus Playing") { $0.playbackStatus == "Playing" }
        let loaded = session.events.expect("`queue loaded:` line") { event in
            if case .output(let line) = event.kind { line.contains("queue loaded:") } else { false }
        }
        let start = ContinuousClock.now
        do {
            try session.launch(command(source), watchOutput: true)
        } catch {
            session.close()
            throw error
        }
        return Launched(session: session, start: start, owned: owned, playing: playing, loaded: loaded)
    }

    /// Waits until the bus name is owned; throws when Quaver exits first or the deadline passes.
    private func waitOwned(_ run: Launched, deadline: ContinuousClock.Instant) async throws -> BusEvent {
        let event = try await run.session.events.wait(run.owned, timeout: max(deadline - .now, .milliseconds(1)))
        if case .exited(let status) = event.kind {
            throw BenchError("Quaver exited with status \(status) before taking \(Self.busName); see \(run.session.logFile.path)")
        }
        return event
    }

    /// Quaver with one track: paused once playing, VmRSS after 1 s. Returns it in KiB.
    private func oneTrackRun(_ source: ScaleSource, round: Int) async -> UInt64? {
        let run: Launched
        do {
            run = try launch(media.path(source, oneTrack: true), label: "\(source.rawValue)-round\(round + 1)-one-track")
        } catch {
            fail([.rssOneTrack, .bytesPerTrack], source, round: round, "starting Quaver with 1 track: \(error)")
            return nil
        }
        defer { run.session.close() }
        do {
            let deadline = ContinuousClock.now + .seconds(20)
            _ = try await waitOwned(run, deadline: deadline)
            while run.playing.caught == nil, try await run.session.playbackStatus() != "Playing" {
                guard ContinuousClock.now < deadline else { throw BenchError("PlaybackStatus did not become Playing within 20 s") }
                try await Task.sleep(for: .milliseconds(10))
            }
            // A daemon that reports its load says so at once for one track; one that does not is done.
            _ = try? await run.session.events.wait(run.loaded, timeout: .seconds(2))
            let (kiB, before) = try await settledRSS(run.session)
            if before != "Playing" { problem(source, round: round, "Quaver with 1 track was \(before), not Playing, when it was to be paused") }
            record(.rssOneTrack, source, Double(kiB) / 1024)
            await run.session.stop()
            return kiB
        } catch {
            fail([.rssOneTrack, .bytesPerTrack], source, round: round, "Quaver with 1 track: \(error)")
            await run.session.stop()
            return nil
        }
    }

    /// Pauses, waits 1 s and returns VmRSS in KiB, and the status Quaver was in before (a
    /// player that has stopped on its own is left stopped).
    private func settledRSS(_ session: PlayerSession) async throws -> (kiB: UInt64, statusBefore: String) {
        let settled: Set<String> = ["Paused", "Stopped"]
        let before = try await session.playbackStatus()
        if !settled.contains(before) {
            let reached = session.events.expect("PlaybackStatus Paused") { $0.playbackStatus.map(settled.contains) ?? false }
            _ = try await session.call("Pause")
            if try await !settled.contains(session.playbackStatus()) {
                _ = try await session.events.wait(reached, timeout: .seconds(10))
            }
        }
        try await Task.sleep(for: .seconds(1))
        return (try ProcSample(pid: try session.pid).rssKiB, before)
    }

    /// Quaver with every track: every figure of one round.
    private func fullRun(_ source: ScaleSource, round: Int, baselineKiB: UInt64?) async {
        let startFigures: [ScaleFigure] = [
            .firstSound, .nameOwned, .loadTime, .loadCPU, .getP50, .getP99, .getMax, .getCount, .getAfterLoadMax, .rssLoaded, .bytesPerTrack,
            .tracksProperty, .metadata, .addTrackRate, .addTrackP99, .quit,
        ]
        let run: Launched
        do {
            run = try launch(media.path(source, oneTrack: false), label: "\(source.rawValue)-round\(round + 1)")
        } catch {
            fail(startFigures, source, round: round, "starting Quaver: \(error)")
            return
        }
        defer { run.session.close() }
        let session = run.session
        let timeout = settings.timeout
        let deadline = run.start + timeout
        let logPath = session.logFile.path

        // The bus name.
        let ownedAt: ContinuousClock.Instant
        do {
            ownedAt = try await waitOwned(run, deadline: deadline).time
        } catch {
            fail(startFigures, source, round: round, "no bus name: \(error)")
            await session.stop()
            return
        }
        record(.nameOwned, source, (ownedAt - run.start).milliseconds)

        // Get(PlaybackStatus) back to back until the load is done and Quaver plays.
        // Then 1 s more (what the daemon does once the queue is in, such as saving it, may
        // hold up its main queue).
        var latencies: [Double] = []
        var tail: [Double] = []
        var playingByGet: ContinuousClock.Instant?
        var loopProblem: String?
        var cpuAtLoad: Double?
        while ContinuousClock.now < deadline {
            let tailEnd = run.loaded.caught.map { $0.time + .seconds(1) }
            if tailEnd != nil, cpuAtLoad == nil {
                cpuAtLoad = (try? ProcSample(pid: try session.pid)).map { Double($0.cpuTicks) / ProcSample.ticksPerSecond }
            }
            let playingKnown = run.playing.caught != nil || playingByGet != nil
            if let tailEnd, playingKnown, ContinuousClock.now >= tailEnd { break }
            guard session.isRunning else {
                loopProblem = "Quaver exited with status \(session.exitStatus ?? -1) during the load; see \(logPath)"
                break
            }
            if let tailEnd, ContinuousClock.now >= tailEnd { try? await Task.sleep(for: .milliseconds(5)) }  // only waiting for Playing now
            let sent = ContinuousClock.now
            do {
                let reply = try await session.call(
                    "Get", interface: MPRIS.properties, [.string(MPRIS.player), .string("PlaybackStatus")],
                    timeout: max(deadline - sent, .seconds(1)))
                let answered = ContinuousClock.now
                if let tailEnd {
                    if sent < tailEnd { tail.append((answered - sent).milliseconds) }
                } else {
                    latencies.append((answered - sent).milliseconds)
                }
                if playingByGet == nil, reply.first?.unwrapped.string == "Playing" { playingByGet = answered }
            } catch {
                loopProblem = "Get(PlaybackStatus) failed after \(latencies.count) answers: \(error)"
                break
            }
        }
        let loopEnd = ContinuousClock.now
        if let loopProblem { problem(source, round: round, loopProblem) }

        let playingAt = [run.playing.caught?.time, playingByGet].compactMap { $0 }.min()
        if let playingAt {
            record(.firstSound, source, (playingAt - run.start).milliseconds)
        } else {
            fail([.firstSound], source, round: round, "PlaybackStatus did not become Playing within \(timeout) of the start (neither PropertiesChanged nor Get said so)")
        }

        let loadedEvent = run.loaded.caught
        if let loadedEvent {
            record(.loadTime, source, (loadedEvent.time - run.start).seconds)
            if let cpuAtLoad { record(.loadCPU, source, cpuAtLoad) }
            if case .output(let line) = loadedEvent.kind {
                let words = line.split(separator: " ")
                let count = words.firstIndex(of: "loaded:").flatMap { words.indices.contains($0 + 1) ? Int(words[$0 + 1]) : nil }
                if count != settings.tracks {
                    problem(source, round: round, "the load line says \(count.map(String.init) ?? "no count"), not \(settings.tracks) tracks: “\(line)”")
                }
                observe("load line", "Quaver's load line (\(source.title), round \(round + 1)): “\(line)”.")
            }
        } else {
            fail([.loadTime, .loadCPU], source, round: round, "no line containing `queue loaded:` on Quaver's output within \(timeout) of the start (see player.log in each run's folder)")
        }

        // Responsiveness during the load.
        if !tail.isEmpty { record(.getAfterLoadMax, source, tail.max()!, pooled: tail) }
        let getFigures: [ScaleFigure] = [.getP50, .getP99, .getMax, .getCount]
        if let loadedEvent, !latencies.isEmpty {
            record(.getP50, source, latencies.percentile(50), pooled: latencies)
            record(.getP99, source, latencies.percentile(99), pooled: latencies)
            record(.getMax, source, latencies.max()!, pooled: latencies)
            record(.getCount, source, Double(latencies.count))
            _ = loadedEvent
        } else if let loadedEvent {
            fail(getFigures, source, round: round, String(
                format: "no Get(PlaybackStatus) was answered during the load: the queue was loaded %.2f s after the start, the bus name owned %.2f s after it",
                (loadedEvent.time - run.start).seconds, (ownedAt - run.start).seconds))
        } else {
            let window = (loopEnd - ownedAt).seconds
            fail(getFigures, source, round: round, latencies.isEmpty
                ? "the end of the load is unknown (no `queue loaded:` line), and no Get was answered"
                : String(
                    format: "the end of the load is unknown (no `queue loaded:` line); over the %.1f s from the bus name to the deadline: %d calls, p50 %.2f ms, p99 %.2f ms, max %.1f ms",
                    window, latencies.count, latencies.percentile(50), latencies.percentile(99), latencies.max()!))
        }

        // Memory.
        do {
            let (kiB, before) = try await settledRSS(session)
            if before != "Playing" {
                let track = try? await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath
                problem(source, round: round, "Quaver was \(before), not Playing, when it was to be paused once loaded (current track \(track.map { "\($0)" } ?? "none"), each 0.5 s long): it stopped on its own")
            }
            record(.rssLoaded, source, Double(kiB) / 1024)
            if loadedEvent == nil {
                problem(source, round: round, "memory was measured \(Int((loopEnd - run.start).seconds.rounded())) s after the start without knowing whether the load was complete")
            }
            if let baselineKiB {
                record(.bytesPerTrack, source, (Double(kiB) - Double(baselineKiB)) * 1024 / Double(settings.tracks))
            } else {
                fail([.bytesPerTrack], source, round: round, "no 1-track baseline in this round")
            }
        } catch {
            fail([.rssLoaded, .bytesPerTrack], source, round: round, "pausing and reading VmRSS: \(error)")
        }

        await trackListFigures(session, source: source, round: round)

        let quitStart = ContinuousClock.now
        await session.stop(timeout: .seconds(30))
        if session.exitStatus == 0 {
            record(.quit, source, (ContinuousClock.now - quitStart).milliseconds)
        } else {
            fail([.quit], source, round: round, "Quaver did not exit cleanly after Quit within 30 s (status \(session.exitStatus ?? -1); -1: killed); see \(logPath)")
        }
    }

    // MARK: TrackList

    private func trackListFigures(_ session: PlayerSession, source: ScaleSource, round: Int) async {
        // The Tracks property: the id prefix, and the length of the list it shows.
        var prefix = Self.expectedPrefix
        do {
            let sent = ContinuousClock.now
            let reply = try await session.call(
                "Get", interface: MPRIS.properties, [.string(Self.trackList), .string("Tracks")], timeout: .seconds(30))
            let took = ContinuousClock.now - sent
            guard case .array(.objectPath, let items) = reply.first?.unwrapped else {
                throw BenchError("Tracks is not an array of object paths: \(reply.first.map { "\($0.unwrapped.type)" } ?? "no value")")
            }
            let ids = items.compactMap(\.objectPath)
            guard let first = ids.first, let slash = first.rawValue.lastIndex(of: "/") else { throw BenchError("Tracks is empty") }
            record(.tracksProperty, source, took.milliseconds)
            prefix = String(first.rawValue[..<slash])
            observe("tracks", "Tracks (\(source.title), round \(round + 1), paused on the current track) lists \(ids.count) ids, from \(first) to \(ids.last!).")
            if prefix != Self.expectedPrefix {
                problem(source, round: round, "track ids have the prefix \(prefix), not \(Self.expectedPrefix) (using \(prefix))")
            }
        } catch {
            fail([.tracksProperty], source, round: round, "Get(TrackList.Tracks): \(error)")
        }

        // GetTracksMetadata for ids from the middle of the queue.
        do {
            let batch = settings.metadataBatch
            let firstNumber = max(1, settings.tracks / 2 - batch / 2 + 1)
            let ids = try (firstNumber..<firstNumber + batch).map { number in
                guard let id = ObjectPath(prefix + "/\(number)") else { throw BenchError("\(prefix)/\(number) is not an object path") }
                return id
            }
            let argument = Value.array(.objectPath, ids.map(Value.objectPath))
            var times: [Double] = []
            for _ in 0..<settings.metadataCalls {
                let sent = ContinuousClock.now
                let reply = try await session.call("GetTracksMetadata", interface: Self.trackList, [argument], timeout: .seconds(30))
                times.append((ContinuousClock.now - sent).milliseconds)
                try checkMetadata(reply, asked: ids, source: source, round: round)
            }
            record(.metadata, source, times.median)
        } catch {
            fail([.metadata], source, round: round, "GetTracksMetadata: \(error)")
        }

        // AddTrack, alternately at the start and after the current track.
        do {
            guard let current = try await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath,
                current != Self.noTrack
            else { throw BenchError("Metadata has no current mpris:trackid") }
            let uri = media.sampleTrack.absoluteString
            let run = try await addTracks(session, uri: uri, current: current)
            record(.addTrackRate, source, Double(settings.addTrackCalls) / run.elapsed.seconds)
            record(.addTrackP99, source, run.latencies.percentile(99), pooled: run.latencies)
            let after = try await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath
            if after != current {
                problem(source, round: round, "the current track changed from \(current) to \(after.map { "\($0)" } ?? "none") during AddTrack with SetAsCurrent false")
            }
            // Where the added tracks went: ids that go on counting would be the next ones.
            let next = (settings.tracks + 1...settings.tracks + settings.addTrackCalls).compactMap { ObjectPath(prefix + "/\($0)") }
            let reply = try await session.call(
                "GetTracksMetadata", interface: Self.trackList, [.array(.objectPath, next.map(Value.objectPath))], timeout: .seconds(30))
            if case .array(_, let maps) = reply.first {
                observe("added ids", "After \(report.format(Double(settings.addTrackCalls), 0)) AddTrack calls (\(source.title), round \(round + 1)), GetTracksMetadata finds \(maps.count) of the ids \(next.first!)…\(settings.tracks + settings.addTrackCalls).")
            }
        } catch {
            fail([.addTrackRate, .addTrackP99], source, round: round, "AddTrack: \(error)")
        }
    }

    /// Each reply must be one map per id asked for, each with `mpris:trackid`.
    private func checkMetadata(_ reply: [Value], asked ids: [ObjectPath], source: ScaleSource, round: Int) throws {
        guard case .array(_, let maps) = reply.first else {
            throw BenchError("the reply is not an array of maps: \(reply.map { "\($0.type)" }.joined(separator: ", "))")
        }
        guard maps.count == ids.count else { throw BenchError("\(maps.count) maps for \(ids.count) ids") }
        var returned: [ObjectPath] = []
        returned.reserveCapacity(maps.count)
        for (index, map) in maps.enumerated() {
            guard let dictionary = map.stringVariantDictionary else { throw BenchError("item \(index) of the reply is not an a{sv} map (\(map.type))") }
            guard let id = dictionary["mpris:trackid"]?.unwrapped.objectPath else { throw BenchError("map \(index) has no mpris:trackid object path") }
            returned.append(id)
            if index == 0 {
                observe("metadata keys", "A GetTracksMetadata map carries: \(dictionary.keys.sorted().joined(separator: ", ")).")
            }
        }
        if returned != ids {
            let missing = Set(ids).subtracting(returned).count
            problem(source, round: round, missing == 0
                ? "GetTracksMetadata returns the ids asked for in another order"
                : "GetTracksMetadata returns \(missing) of the \(ids.count) ids asked for under other ids (first asked \(ids[0]), first returned \(returned[0]))")
        }
    }

    /// Shared by the AddTrack workers.
    private final class AddTrackState {
        var next = 0
        var latencies: [Double] = []
        var failure: (any Error)?
    }

    private func addTracks(_ session: PlayerSession, uri: String, current: ObjectPath) async throws
        -> (latencies: [Double], elapsed: Duration)
    {
        let calls = settings.addTrackCalls
        let state = AddTrackState()
        state.latencies.reserveCapacity(calls)
        let start = ContinuousClock.now
        let workers = (0..<settings.addTrackInFlight).map { _ in
            Task { @MainActor in
                while state.next < calls, state.failure == nil {
                    let index = state.next
                    state.next += 1
                    let after = index.isMultiple(of: 2) ? Self.noTrack : current
                    let sent = ContinuousClock.now
                    do {
                        _ = try await session.call(
                            "AddTrack", interface: Self.trackList, [.string(uri), .objectPath(after), .boolean(false)],
                            timeout: .seconds(30))
                    } catch {
                        if state.failure == nil {
                            state.failure = BenchError("AfterTrack \(after == Self.noTrack ? "NoTrack" : "the current track"): \(error)")
                        }
                        return
                    }
                    state.latencies.append((ContinuousClock.now - sent).milliseconds)
                }
            }
        }
        for worker in workers { await worker.value }
        if let failure = state.failure { throw failure }
        return (state.latencies, ContinuousClock.now - start)
    }

    // MARK: Results

    private func record(_ figure: ScaleFigure, _ source: ScaleSource, _ value: Double, pooled: [Double] = []) {
        results[figure, default: [:]][source, default: ScaleSamples()].rounds.append(value)
        results[figure, default: [:]][source, default: ScaleSamples()].pooled += pooled
    }

    private func fail(_ figures: [ScaleFigure], _ source: ScaleSource, round: Int, _ message: String) {
        for figure in figures { results[figure, default: [:]][source, default: ScaleSamples()].failures += 1 }
        let names = figures.count > 4 ? "every figure of the run" : figures.map { "“\($0.title)”" }.joined(separator: ", ")
        problem(source, round: round, "\(names): \(message)")
    }

    private func problem(_ source: ScaleSource, round: Int, _ message: String) {
        let text = "\(source.title): \(message)"
        if let index = problems.firstIndex(where: { $0.text == text }) {
            problems[index].rounds.append(round + 1)
        } else {
            problems.append((text, [round + 1]))
            log("problem: \(text)")
        }
    }

    private func observe(_ key: String, _ note: String) {
        guard observed.insert(key).inserted else { return }
        report.note(note)
    }

    private func markdown() -> String {
        var lines = [
            "| figure | unit | \(ScaleSource.folder.title) | \(ScaleSource.playlist.title) | target |",
            "| --- | --- | ---: | ---: | --- |",
        ]
        for figure in ScaleFigure.allCases {
            let hint = figure == .getCount ? "" : figure.higherIsBetter ? " (higher is better)" : " (lower is better)"
            var cells: [String] = []
            var medians: [ScaleSource: Double] = [:]
            for source in ScaleSource.allCases {
                let samples = results[figure]?[source] ?? ScaleSamples()
                guard !samples.rounds.isEmpty else {
                    cells.append(samples.failures > 0 ? "failed (see below)" : "not measured")
                    continue
                }
                let measure = figure.isPooled
                    ? Measure(value: figure.pooledStatistic(samples.pooled), rounds: samples.rounds)
                    : Measure(rounds: samples.rounds)
                medians[source] = measure.value
                var text = report.format(measure.value, figure.decimals)
                if let low = measure.low, let high = measure.high, samples.rounds.count > 1 {
                    text += " [\(report.format(low, figure.decimals))–\(report.format(high, figure.decimals))]"
                }
                if samples.failures > 0 { text += " (\(samples.failures) of \(samples.rounds.count + samples.failures) rounds failed)" }
                cells.append(text)
            }
            var target = ""
            if let limit = figure.target {
                target = "< \(report.format(limit, 0))"
                let missed = ScaleSource.allCases.filter { medians[$0].map { !($0 < limit) } ?? false }
                if !missed.isEmpty {
                    target += ": missed (\(missed.map(\.rawValue).joined(separator: ", ")))"
                } else if medians.count == ScaleSource.allCases.count {
                    target += ": met"
                } else {
                    target += ": not measured"
                }
            }
            lines.append("| \(figure.title)\(hint) | \(figure.unit) | \(cells.joined(separator: " | ")) | \(target) |")
        }
        var text = lines.joined(separator: "\n") + "\n"
        text += "\n\(report.format(Double(settings.tracks), 0)) tracks, \(settings.rounds) round\(settings.rounds == 1 ? "" : "s") per source, the sources alternating which goes first. "
            + "Values are medians over the rounds, or for p50/p99/max a percentile of all samples of every round pooled; "
            + "brackets give the lowest and highest value of the same statistic across rounds. A target is met when the median of both sources is under it.\n"
        let method = [
            "First sound: from just before the process was started to the first PropertiesChanged of org.mpris.MediaPlayer2.Player carrying PlaybackStatus Playing, or the first Get(PlaybackStatus) answered with Playing, whichever came first (the sink is fakesink sync=true: it plays in real time).",
            "Load time: from the same moment to the benchmark reading a line containing `queue loaded:` on Quaver's output (stderr, read through a pipe as it comes).",
            "Responsiveness: from the moment the bus name was owned (NameOwnerChanged) until that line, one client sent org.freedesktop.DBus.Properties.Get(org.mpris.MediaPlayer2.Player, PlaybackStatus) back to back, one in flight, and timed each call; the count is the calls answered in that window. The same went on for 1 s after the line (its own row).",
            "Memory: VmRSS of the Quaver process after the load, Pause answered with PlaybackStatus Paused and 1 s of rest; the baseline is the same command with a folder or playlist of 1 track, run just before in the same round; the difference divided by \(report.format(Double(settings.tracks), 0)).",
            "TrackList: the ids are read from the Tracks property (its prefix is then used); GetTracksMetadata asks \(settings.metadataCalls) times for the \(settings.metadataBatch) consecutive ids from the middle of the queue, one call at a time, and each reply is checked to hold \(settings.metadataBatch) maps each with mpris:trackid; the row is the median call. AddTrack: \(settings.addTrackCalls) calls, \(settings.addTrackInFlight) in flight, adding \(media.sampleTrack.absoluteString) with AfterTrack alternately /org/mpris/MediaPlayer2/TrackList/NoTrack (the start) and the current track, SetAsCurrent false, all after the memory figure (paused).",
        ]
        text += "\nHow:\n\n" + method.map { "- " + $0 }.joined(separator: "\n") + "\n"
        if !report.notes.isEmpty {
            text += "\nNotes:\n\n" + report.notes.map { "- " + $0 }.joined(separator: "\n") + "\n"
        }
        if !problems.isEmpty {
            text += "\nWhat did not work:\n\n" + problems.map { problem in
                let rounds = problem.rounds.count == settings.rounds && settings.rounds > 1
                    ? "every round" : "round" + (problem.rounds.count > 1 ? "s " : " ") + problem.rounds.map(String.init).joined(separator: ", ")
                return "- \(problem.text) (\(rounds))"
            }.joined(separator: "\n") + "\n"
        }
        return text
    }
}
