import Foundation
import SeededRandom
import TestKit

/// Instructions per PlayPause round trip, counted by valgrind's callgrind inside the player.
///
/// Each player runs under callgrind on its own bus. After a warm-up, the counters are zeroed
/// (`callgrind_control -z`), N toggles are made back to back and the counters dumped
/// (`callgrind_control -d`); then the counters are zeroed again, the player is left paused for
/// a window of the same length and dumped again. The `summary:` lines of the two dumps give
/// the instructions with N toggles and with none; their difference over N is the figure.
/// A third window with the player playing gives its instructions per second of playback.
enum Callgrind {
    struct Result {
        var toggles: Int
        var window: Duration
        /// Time spent playing during the toggle window (Playing signalled → next PlayPause sent).
        var playing: Duration
        var withToggles: UInt64
        var idle: UInt64
        var playingPerSecond: Double
        /// The dump of the toggle window, for `callgrind_annotate`.
        var toggleDump: URL

        var perToggle: Double { (Double(withToggles) - Double(idle)) / Double(toggles) }
    }

    /// valgrind 3.19 (Debian 12) writes into the signal mask a program passes to
    /// `rt_sigsuspend` (it takes its own kill signal out of it), and `dispatch_main()`, which
    /// Quaver parks its main thread in, passes a mask in read-only memory: valgrind then dies
    /// with SIGSEGV. Preloading this hands the kernel a writable copy; it changes nothing else.
    static let sigsuspendShim = """
        /* Built by quaver-bench: see Callgrind.swift. */
        #define _GNU_SOURCE
        #include <signal.h>
        #include <sys/syscall.h>
        #include <unistd.h>

        int sigsuspend(const sigset_t *mask) {
            sigset_t copy = *mask;
            return (int)syscall(SYS_rt_sigsuspend, &copy, 8);
        }
        """

    /// What running Quaver under valgrind needs, made in `folder`.
    struct Preparation {
        /// A copy of quaver without debug info: valgrind 3.19 cannot read the DWARF 5 that
        /// Swift 6 emits ("unhandled dwarf2 abbrev form code 0x25") and gives up on the binary.
        var quaver: String
        var shim: String
        var valgrind: String
        var callgrindControl: String
    }

    /// Finds valgrind, makes the copy of quaver without debug info and builds the shim.
    @MainActor
    static func prepare(programs: Programs, folder: URL) async throws -> Preparation {
        guard let valgrind = Tools.find("valgrind")?.path, let control = Tools.find("callgrind_control")?.path else {
            throw HarnessError("valgrind is not installed (apt-get install valgrind)")
        }
        guard let objcopy = Tools.find("objcopy")?.path else {
            throw HarnessError("objcopy is not installed (binutils)")
        }
        guard let compiler = Tools.find("cc")?.path ?? Tools.find("clang")?.path ?? Tools.find("gcc")?.path else {
            throw HarnessError("no C compiler (cc, clang or gcc) to build the sigsuspend shim for valgrind")
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let copy = folder.appendingPathComponent("quaver-without-debug-info").path
        let log = folder.appendingPathComponent("prepare.log")
        let stripped = try await Tools.run([objcopy, "--strip-debug", programs.quaver, copy], log: log)
        guard stripped.status == 0 else { throw HarnessError("objcopy --strip-debug failed: \(stripped.output)") }
        let source = folder.appendingPathComponent("sigsuspend-shim.c")
        let shim = folder.appendingPathComponent("sigsuspend-shim.so").path
        try sigsuspendShim.write(to: source, atomically: true, encoding: .utf8)
        let built = try await Tools.run([compiler, "-O2", "-shared", "-fPIC", "-o", shim, source.path], log: log)
        guard built.status == 0 else { throw HarnessError("cannot build the sigsuspend shim: \(built.output)") }
        return Preparation(quaver: copy, shim: shim, valgrind: valgrind, callgrindControl: control)
    }

    /// Runs `session`'s player under callgrind and measures it (see the type's comment). The
    /// player is left running: stop it with `session.stop`.
    @MainActor
    static func measure(
        _ session: PlayerSession, programs: Programs, preparation: Preparation, folder: URL,
        toggles: Int, warmUp: Int = 10, playingWindow: Duration = .seconds(4)
    ) async throws -> Result {
        let kind = session.kind
        var command = programs.daemonCommand(kind, paused: true)
        var environment: [String: String] = [:]
        if kind == .quaver {
            command[0] = preparation.quaver
            environment["LD_PRELOAD"] = preparation.shim
        }
        let prefix = "callgrind.\(kind.rawValue)"
        let valgrind = [
            preparation.valgrind, "--tool=callgrind", "--dump-instr=no",
            "--callgrind-out-file=\(folder.appendingPathComponent(prefix).path).%p",
        ]
        try await session.start(valgrind + command, environment: environment, timeout: .seconds(180))
        try await session.waitForTrack(timeout: .seconds(60))
        try await session.settle("Paused", timeout: .seconds(60))
        let pid = try session.pid

        // Warm up (the first toggles run code for the first time), ending paused.
        var random = SplitMix(seed: 1)
        _ = try await session.toggleLatencies(count: warmUp + warmUp % 2, thinkTime: .zero, random: &random)

        try await control(preparation, "-z", pid: pid)
        let start = ContinuousClock.now
        let run = try await session.toggleLatencies(count: toggles + toggles % 2, thinkTime: .zero, random: &random)
        let window = ContinuousClock.now - start
        let toggleDump = try await dump(preparation, pid: pid, folder: folder, prefix: prefix)

        try await control(preparation, "-z", pid: pid)
        try await Task.sleep(for: window)  // the same window, paused
        let idleDump = try await dump(preparation, pid: pid, folder: folder, prefix: prefix)

        try await session.settle("Playing", timeout: .seconds(60))
        try await control(preparation, "-z", pid: pid)
        let playStart = ContinuousClock.now
        try await Task.sleep(for: playingWindow)
        let playingDump = try await dump(preparation, pid: pid, folder: folder, prefix: prefix)
        let played = ContinuousClock.now - playStart
        try await session.settle("Paused", timeout: .seconds(60))

        return Result(
            toggles: toggles + toggles % 2, window: window, playing: run.playing,
            withToggles: try summary(of: toggleDump.file), idle: try summary(of: idleDump.file),
            playingPerSecond: Double(try summary(of: playingDump.file)) / played.inSeconds, toggleDump: toggleDump.file)
    }

    /// Runs `callgrind_control <option> <pid>`.
    @MainActor
    private static func control(_ preparation: Preparation, _ option: String, pid: Int32) async throws {
        let result = try await Tools.run([preparation.callgrindControl, option, String(pid)], timeout: .seconds(60))
        guard result.status == 0 else {
            throw HarnessError(
                "callgrind_control \(option) \(pid) failed: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
    }

    /// Asks callgrind for a dump and returns the file it wrote (`<prefix>.<pid>.<n>`).
    @MainActor
    private static func dump(_ preparation: Preparation, pid: Int32, folder: URL, prefix: String) async throws -> (
        file: URL, index: Int
    ) {
        try await control(preparation, "-d", pid: pid)
        let stem = "\(prefix).\(pid)."
        let dumps = (try FileManager.default.contentsOfDirectory(atPath: folder.path))
            .filter { $0.hasPrefix(stem) }
            .compactMap { name in Int(name.dropFirst(stem.count)).map { (folder.appendingPathComponent(name), $0) } }
        guard let newest = dumps.max(by: { $0.1 < $1.1 }) else {
            throw HarnessError("callgrind wrote no dump for pid \(pid)")
        }
        return newest
    }

    /// The `summary:` line of a callgrind dump: instructions executed (Ir).
    static func summary(of file: URL) throws -> UInt64 {
        let text = try String(contentsOf: file, encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") {
            if let value = line.dropFirst("summary:".count).split(separator: " ").first.flatMap({ UInt64($0) }) {
                return value
            }
        }
        throw HarnessError("no summary line in \(file.lastPathComponent)")
    }
}

extension Benchmark {
    /// Figure 8: instructions per PlayPause round trip under callgrind.
    func callgrind() async throws {
        let folder = programs.workDir.appendingPathComponent("callgrind")
        let preparation = try await Callgrind.prepare(programs: programs, folder: folder)
        var perToggle = Row(
            figure: "instructions per PlayPause round trip (callgrind)", unit: "instructions", better: .lower,
            decimals: 0)
        var playing = Row(
            figure: "instructions per second of playback (callgrind)", unit: "instructions/s", better: .lower,
            decimals: 0)
        for kind in PlayerKind.allCases {
            do {
                let session = try await PlayerSession(kind, programs: programs, label: "callgrind")
                defer { session.close() }
                let result: Callgrind.Result
                do {
                    result = try await Callgrind.measure(
                        session, programs: programs, preparation: preparation, folder: folder,
                        toggles: settings.callgrindToggles)
                } catch {
                    await session.stop(timeout: .seconds(60))
                    throw error
                }
                await session.stop(timeout: .seconds(60))
                perToggle[kind] = .success(Measure(result.perToggle))
                playing[kind] = .success(Measure(result.playingPerSecond))
                report.note(
                    "Callgrind, \(kind.title): \(result.toggles) toggles in \(String(format: "%.1f", result.window.inSeconds)) s (\(String(format: "%.1f", result.playing.inSeconds)) s of it playing): \(report.format(Double(result.withToggles), 0)) instructions, the same window paused \(report.format(Double(result.idle), 0)), playing \(report.format(result.playingPerSecond, 0)) per second; dump \(result.toggleDump.path)."
                )
            } catch let error as HarnessError {
                perToggle[kind] = .failure(error)
                playing[kind] = .failure(error)
                report.problem("callgrind, \(kind.title): \(error)")
            }
        }
        report.add(perToggle)
        report.add(playing)
        report.note(
            "Callgrind: each player under valgrind --tool=callgrind on its own bus, 10 warm-up toggles, then counters zeroed (callgrind_control -z), \(settings.callgrindToggles) toggles back to back, dumped (-d); zeroed again, the same window paused, dumped; (with toggles − paused) / toggles. The toggles run back to back, so the player hardly plays in between (the time it did is given above; at the rate of the playing row it is negligible). The second row is a further window with the player playing. Quaver runs as a copy without debug info (valgrind 3.19 cannot read Swift's DWARF 5) with a sigsuspend shim preloaded (valgrind 3.19 writes into the read-only signal mask dispatch_main passes to rt_sigsuspend and crashes)."
        )
    }
}
