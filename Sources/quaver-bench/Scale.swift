import ArgumentParser
import DBus
import Foundation
import TestKit

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
    let report = Report()
    var programs: Programs!
    var media: ScaleMedia!
    var results: [ScaleFigure: [ScaleSource: ScaleSamples]] = [:]
    /// Problems by text, with the rounds they happened in, in order of first appearance.
    var problems: [(text: String, rounds: [Int])] = []
    /// Observations made once (the shape of replies), by key.
    var observed: Set<String> = []

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
        report.note(
            "The run took \(Int(took.inSeconds.rounded())) s, each Quaver on its own private dbus-daemon with its own HOME and XDG folders, on a machine of \(ProcessInfo.processInfo.activeProcessorCount) cores shared by Quaver, its dbus-daemon and the benchmark client; work files and Quaver's logs in \(programs.workDir.path)."
        )
        return markdown()
    }

    // MARK: Set-up

    func setUp() async throws {
        let quaver = try quaverBinary(settings.quaver)
        log("emptying the work folder")
        let workDir = try prepareWorkDir(settings.workDir, default: "quaver-bench-scale")
        programs = Programs(
            quaver: quaver, mpv: "", mprisPlugin: "", gstLaunch: "", tracks: [],
            workDir: workDir)
        media = try await generate()
        let version = try await Tools.run([quaver, "--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        report.note(
            "Quaver \(version) (\(quaver)), started as `quaver --no-resume --audio-sink \"fakesink sync=true\" --name \(Self.playerName) SOURCE`, SOURCE being \(media.folder.path) or \(media.playlist.path)."
        )
    }

    /// One short FLAC, hard-linked `tracks` times into one flat folder, and a playlist of them
    /// all by absolute path; a folder and a playlist of one track for the memory baseline.
    func generate() async throws -> ScaleMedia {
        let workDir = programs.workDir
        let count = settings.tracks
        log("generating \(count) tracks")
        let began = ContinuousClock.now
        let made = try await Tools.makeTestTracks(
            programs.quaver, into: workDir.appendingPathComponent("seed"),
            ["--track-count", "1", "--track-seconds", "0.5"],
            registry: programs.gstRegistry)
        guard let seedPath = made.first else { throw HarnessError("quaver --make-test-tracks made no track") }
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
            throw HarnessError("cannot hard-link \(source.path) to \(target.path): \(String(cString: strerror(errno)))")
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
        let long = try await Tools.makeTestTracks(
            programs.quaver, into: workDir.appendingPathComponent("seed-long"),
            ["--track-count", "1", "--track-seconds", "60"], registry: programs.gstRegistry)
        guard let longPath = long.first else { throw HarnessError("quaver --make-test-tracks made no track") }
        let oneFolder = workDir.appendingPathComponent("one", isDirectory: true)
        try FileManager.default.createDirectory(at: oneFolder, withIntermediateDirectories: true)
        let oneTrack = oneFolder.appendingPathComponent(name(1))
        guard link(longPath, oneTrack.path) == 0 else {
            throw HarnessError("cannot hard-link \(longPath) to \(oneTrack.path): \(String(cString: strerror(errno)))")
        }
        let onePlaylist = workDir.appendingPathComponent("one.m3u8")
        try ("#EXTM3U\n" + oneTrack.path + "\n").write(to: onePlaylist, atomically: false, encoding: .utf8)

        let size = (try? FileManager.default.attributesOfItem(atPath: seed.path)[.size] as? Int) ?? 0
        report.note(
            String(
                format:
                    "Generation (not a figure): %.2f s in all — one tagged 0.5 s FLAC of %d bytes made by `quaver --make-test-tracks` in %.2f s, hard-linked %d times into %@ (%@) with its playlist in %.2f s. (The 1-track baseline plays another track of 60 s, made after.)",
                total.inSeconds, size, seedTime.inSeconds, count, folder.path,
                copies == 0 ? "one file" : "\(copies + 1) identical files, the file system capping the links of one",
                linkTime.inSeconds))
        log(String(format: "generated in %.2f s", total.inSeconds))
        return ScaleMedia(
            folder: folder, playlist: playlist, oneFolder: oneFolder, onePlaylist: onePlaylist,
            sampleTrack: folder.appendingPathComponent(name(count / 2)))
    }

    /// Starts and stops Quaver once with one track, so that the first measured start does not
    /// pay for cold caches.
    func warmUp() async {
        log("warm-up start")
        guard let run = try? await launch(media.path(.folder, oneTrack: true), label: "warm-up") else { return }
        defer { run.session.close() }
        _ = try? await run.session.events.wait(run.owned, timeout: .seconds(20))
        await run.session.stop()
    }

    // MARK: One Quaver

    /// A started Quaver and what the benchmark watches for from its start.
    struct Launched {
        let session: PlayerSession
        let start: ContinuousClock.Instant
        /// The bus name taken, or the process ended.
        let owned: Expectation
        let playing: Expectation
        let loaded: Expectation
    }

    func command(_ source: String) -> [String] {
        [programs.quaver, "--no-resume", "--audio-sink", "fakesink sync=true", "--name", Self.playerName, source]
    }

    func launch(_ source: String, label: String) async throws -> Launched {
        let session = try await PlayerSession(.quaver, programs: programs, label: label, busName: Self.busName)
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
    func waitOwned(_ run: Launched, deadline: ContinuousClock.Instant) async throws -> BusEvent {
        let event = try await run.session.events.wait(run.owned, timeout: max(deadline - .now, .milliseconds(1)))
        if case .exited(let status) = event.kind {
            throw HarnessError(
                "Quaver exited with status \(status) before taking \(Self.busName); see \(run.session.logFile.path)")
        }
        return event
    }

    /// Quaver with one track: paused once playing, VmRSS after 1 s. Returns it in KiB.
    func oneTrackRun(_ source: ScaleSource, round: Int) async -> UInt64? {
        let run: Launched
        do {
            run = try await launch(
                media.path(source, oneTrack: true), label: "\(source.rawValue)-round\(round + 1)-one-track")
        } catch {
            fail([.rssOneTrack, .bytesPerTrack], source, round: round, "starting Quaver with 1 track: \(error)")
            return nil
        }
        defer { run.session.close() }
        do {
            let deadline = ContinuousClock.now + .seconds(20)
            _ = try await waitOwned(run, deadline: deadline)
            let playing = try await Waiter.poll(timeout: deadline - .now, every: .milliseconds(10)) {
                if run.playing.caught != nil { return true }
                return try await run.session.playbackStatus() == "Playing"
            }
            guard playing else { throw HarnessError("PlaybackStatus did not become Playing within 20 s") }
            // A daemon that reports its load says so at once for one track; one that does not is done.
            _ = try? await run.session.events.wait(run.loaded, timeout: .seconds(2))
            let (kiB, before) = try await settledRSS(run.session)
            if before != "Playing" {
                problem(
                    source, round: round, "Quaver with 1 track was \(before), not Playing, when it was to be paused")
            }
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
    func settledRSS(_ session: PlayerSession) async throws -> (kiB: UInt64, statusBefore: String) {
        let settled: Set<String> = ["Paused", "Stopped"]
        let before = try await session.playbackStatus()
        if !settled.contains(before) {
            let reached = session.events.expect("PlaybackStatus Paused") {
                $0.playbackStatus.map(settled.contains) ?? false
            }
            _ = try await session.call("Pause")
            if try await !settled.contains(session.playbackStatus()) {
                _ = try await session.events.wait(reached, timeout: .seconds(10))
            }
        }
        try await Task.sleep(for: .seconds(1))
        return (try ProcessProbe.Sample(of: try session.pid).rssKiB, before)
    }

    /// Quaver with every track: every figure of one round.
    func fullRun(_ source: ScaleSource, round: Int, baselineKiB: UInt64?) async {
        let startFigures: [ScaleFigure] = [
            .firstSound, .nameOwned, .loadTime, .loadCPU, .getP50, .getP99, .getMax, .getCount, .getAfterLoadMax,
            .rssLoaded, .bytesPerTrack,
            .tracksProperty, .metadata, .addTrackRate, .addTrackP99, .quit,
        ]
        let run: Launched
        do {
            run = try await launch(media.path(source, oneTrack: false), label: "\(source.rawValue)-round\(round + 1)")
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
        record(.nameOwned, source, (ownedAt - run.start).inMilliseconds)

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
                cpuAtLoad = (try? ProcessProbe.Sample(of: try session.pid)).map {
                    Double($0.cpuTicks) / ProcessProbe.ticksPerSecond
                }
            }
            let playingKnown = run.playing.caught != nil || playingByGet != nil
            if let tailEnd, playingKnown, ContinuousClock.now >= tailEnd { break }
            guard session.isRunning else {
                loopProblem = "Quaver exited with status \(session.exitStatus ?? -1) during the load; see \(logPath)"
                break
            }
            // Past the tail, only waiting for Playing.
            if let tailEnd, ContinuousClock.now >= tailEnd { try? await Task.sleep(for: .milliseconds(5)) }
            let sent = ContinuousClock.now
            do {
                let reply = try await session.call(
                    "Get", interface: MPRISNames.properties, [.string(MPRISNames.player), .string("PlaybackStatus")],
                    timeout: max(deadline - sent, .seconds(1)))
                let answered = ContinuousClock.now
                if let tailEnd {
                    if sent < tailEnd { tail.append((answered - sent).inMilliseconds) }
                } else {
                    latencies.append((answered - sent).inMilliseconds)
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
            record(.firstSound, source, (playingAt - run.start).inMilliseconds)
        } else {
            fail(
                [.firstSound], source, round: round,
                "PlaybackStatus did not become Playing within \(timeout) of the start (neither PropertiesChanged nor Get said so)"
            )
        }

        let loadedEvent = run.loaded.caught
        if let loadedEvent {
            record(.loadTime, source, (loadedEvent.time - run.start).inSeconds)
            if let cpuAtLoad { record(.loadCPU, source, cpuAtLoad) }
            if case .output(let line) = loadedEvent.kind {
                let words = line.split(separator: " ")
                let count = words.firstIndex(of: "loaded:").flatMap {
                    words.indices.contains($0 + 1) ? Int(words[$0 + 1]) : nil
                }
                if count != settings.tracks {
                    problem(
                        source, round: round,
                        "the load line says \(count.map(String.init) ?? "no count"), not \(settings.tracks) tracks: “\(line)”"
                    )
                }
                observe("load line", "Quaver's load line (\(source.title), round \(round + 1)): “\(line)”.")
            }
        } else {
            fail(
                [.loadTime, .loadCPU], source, round: round,
                "no line containing `queue loaded:` on Quaver's output within \(timeout) of the start (see player.log in each run's folder)"
            )
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
            fail(
                getFigures, source, round: round,
                String(
                    format:
                        "no Get(PlaybackStatus) was answered during the load: the queue was loaded %.2f s after the start, the bus name owned %.2f s after it",
                    (loadedEvent.time - run.start).inSeconds, (ownedAt - run.start).inSeconds))
        } else {
            let window = (loopEnd - ownedAt).inSeconds
            fail(
                getFigures, source, round: round,
                latencies.isEmpty
                    ? "the end of the load is unknown (no `queue loaded:` line), and no Get was answered"
                    : String(
                        format:
                            "the end of the load is unknown (no `queue loaded:` line); over the %.1f s from the bus name to the deadline: %d calls, p50 %.2f ms, p99 %.2f ms, max %.1f ms",
                        window, latencies.count, latencies.percentile(50), latencies.percentile(99), latencies.max()!))
        }

        // Memory.
        do {
            let (kiB, before) = try await settledRSS(session)
            if before != "Playing" {
                let track = try? await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath
                problem(
                    source, round: round,
                    "Quaver was \(before), not Playing, when it was to be paused once loaded (current track \(track.map { "\($0)" } ?? "none"), each 0.5 s long): it stopped on its own"
                )
            }
            record(.rssLoaded, source, Double(kiB) / 1024)
            if loadedEvent == nil {
                problem(
                    source, round: round,
                    "memory was measured \(Int((loopEnd - run.start).inSeconds.rounded())) s after the start without knowing whether the load was complete"
                )
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
            record(.quit, source, (ContinuousClock.now - quitStart).inMilliseconds)
        } else {
            fail(
                [.quit], source, round: round,
                "Quaver did not exit cleanly after Quit within 30 s (status \(session.exitStatus ?? -1); -1: killed); see \(logPath)"
            )
        }
    }
}
