import DBus
import Foundation
import TestKit
import Testing

/// Files that the desktop plugin set (plugins-bad and libav) decodes differently from the
/// minimal one, each before a good track: whatever the set, the good track plays. Under the
/// minimal set both files are skipped as undecodable; under the desktop set libav claims them.
@Suite("decoder edges of the desktop plugin set")
@MainActor
struct DecoderEdgeTests {
    /// A 10-s FLAC that must play after the file under test. The test reads the daemon's
    /// state every 0.2 s until the track has played a second: its length leaves nine seconds
    /// to see it in, however busy the test process is when the run's suites all start.
    static func goodTrack(in folder: URL) async throws -> URL {
        let file = folder.appendingPathComponent("good.flac")
        try await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=10", "-metadata", "title=Good", file.path])
        return file
    }

    /// A folder for the test's files, in the session's own.
    static func mediaFolder(of session: Session) throws -> URL {
        let folder = session.bus.directory.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func ffmpeg(_ arguments: [String]) async throws {
        guard let ffmpeg = Tools.find("ffmpeg") else { throw HarnessError("ffmpeg is not installed (scripts/setup)") }
        let made = try await Tools.run(
            ffmpeg, ["-loglevel", "error", "-y"] + arguments, environment: ProcessInfo.processInfo.environment)
        guard made.status == 0 else { throw HarnessError("ffmpeg \(arguments): \(made.error)") }
    }

    /// Plays `first` then the good track, and waits until the good track has played a second.
    /// The lines of the ways GStreamer loses the next track after a file that decodes nothing,
    /// and Quaver mends it (the track ended at once, or its change to PLAYING left under way),
    /// are printed, so that a run shows which path it took.
    /// On failure the test also prints the player's signals as the client received them, in
    /// seconds from the launch: they tell a track that played unseen from one that never played.
    func expectGoodTrackPlays(after first: URL, within limit: Duration, _ session: Session) async throws {
        let good = try await Self.goodTrack(in: first.deletingLastPathComponent())
        let launched = ContinuousClock.now
        try await session.launch(["--log-level", "debug", first.path, good.path])
        let played = try await Waiter.poll(timeout: limit, every: .milliseconds(200)) {
            guard let metadata = try? await session.metadata(),
                metadata["xesam:url"]?.string == good.absoluteString,
                (try? await session.get("PlaybackStatus").string) == "Playing"
            else { return false }
            return ((try? await session.position()) ?? 0) > 1_000_000
        }
        #expect(
            played,
            """
            the good track after \(first.lastPathComponent) did not play a second (quaver's process \(session.daemon?.pid ?? 0)); signals:
            \(Self.timeline(of: session.signals, from: launched))
            log:
            \(session.log())
            """)
        for line in session.log().split(separator: "\n")
        where line.contains("had not confirmed") || line.contains("before its end") || line.contains("early again") {
            print("\(first.lastPathComponent): \(line)")
        }
        guard played else { return }
        try await session.waitForStatus("Stopped", after: 1, timeout: .seconds(20))
        #expect(!session.log().contains("the audio output failed"), "the output was blamed:\n\(session.log())")
    }

    /// The player's PlaybackStatus and Metadata changes, one a line, each with the seconds
    /// from `start` at which the client handled it.
    static func timeline(of signals: [Session.RecordedSignal], from start: ContinuousClock.Instant) -> String {
        signals.compactMap { signal -> String? in
            let changed = signal.changed
            var parts: [String] = []
            if let status = changed["PlaybackStatus"]?.string { parts.append(status) }
            if let url = changed["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string {
                parts.append("Metadata \(URL(string: url)?.lastPathComponent ?? url)")
            }
            guard !parts.isEmpty else { return nil }
            return String(format: "  %7.3f s: ", (signal.received - start).inSeconds) + parts.joined(separator: ", ")
        }.joined(separator: "\n")
    }

    @Test("a half-second ALAC that decodes to nothing does not swallow the track after it")
    func shortFileBeforeAGoodOne() async throws {
        let session = try await Session()
        defer { session.stop() }
        let short = try Self.mediaFolder(of: session).appendingPathComponent("short.m4a")
        try await Self.ffmpeg([
            "-f", "lavfi", "-i", "sine=duration=0.5:sample_rate=8000", "-ac", "2", "-c:a", "alac", short.path,
        ])
        try await expectGoodTrackPlays(after: short, within: .seconds(20), session)
    }

    @Test("a picture that libav claims and never prerolls is skipped as the file's fault; the next track plays")
    func fileThatNeverStarts() async throws {
        let session = try await Session()
        defer { session.stop() }
        let picture = try Self.mediaFolder(of: session).appendingPathComponent("picture.aiff")
        try Self.iffPicture().write(to: picture)
        // The preroll limit (15 s) once, and the good track's second: never the output's
        // second try and pause.
        try await expectGoodTrackPlays(after: picture, within: .seconds(30), session)
        let lines = session.log().split(separator: "\n").filter {
            $0.contains("picture.aiff") && $0.contains("[warning]")
        }
        #expect(lines.count == 1, "not one warning naming the picture:\n\(session.log())")
    }

    /// An IFF ILBM picture of 320 × 200 in two colours: a file of the IFF family that AIFF
    /// also belongs to, which libav's type finder claims as its own (it needs 8 KiB to look).
    static func iffPicture() -> Data {
        func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            withUnsafeBytes(of: value.bigEndian) { Array($0) }
        }
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            Array(type.utf8) + bigEndian(UInt32(body.count)) + body + (body.count % 2 == 1 ? [0] : [])
        }
        let width: UInt16 = 320
        let height: UInt16 = 200
        let header =
            bigEndian(width) + bigEndian(height) + bigEndian(Int16(0)) + bigEndian(Int16(0))
            + [1, 0, 0, 0] + bigEndian(UInt16(0)) + [1, 1] + bigEndian(Int16(width)) + bigEndian(Int16(height))
        let form =
            Array("ILBM".utf8) + chunk("BMHD", header) + chunk("CMAP", [0, 0, 0, 255, 255, 255])
            + chunk("BODY", [UInt8](repeating: 0, count: Int(width / 8) * Int(height)))
        return Data(Array("FORM".utf8) + bigEndian(UInt32(form.count)) + form)
    }
}
