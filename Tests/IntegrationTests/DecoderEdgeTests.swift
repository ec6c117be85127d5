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
    /// A 3-s FLAC that must play after the file under test.
    static func goodTrack(in folder: URL) async throws -> URL {
        let file = folder.appendingPathComponent("good.flac")
        try await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-metadata", "title=Good", file.path])
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
    /// The lines of the two ways GStreamer loses the next track after a file that decodes
    /// nothing, and Quaver mends it (the track ended at once, or its change to PLAYING left
    /// under way), are printed, so that a run shows which path it took.
    /// `knownLoss`: the open part of issue 27 this case met in whole-suite runs (1 of 3 soak
    /// runs, 1 of 2 fresh-clone runs): the good track, loaded afresh after the file that
    /// decoded nothing ended, ended during its own preroll. Quaver now starts it in a new
    /// pipeline; until whole-suite runs show the loss gone, it is recorded as a known issue,
    /// every other check kept.
    func expectGoodTrackPlays(
        after first: URL, within limit: Duration, _ session: Session, knownLoss: Bool = false
    ) async throws {
        let good = try await Self.goodTrack(in: first.deletingLastPathComponent())
        try await session.launch(["--log-level", "debug", first.path, good.path])
        let played = try await Waiter.poll(timeout: limit, every: .milliseconds(200)) {
            guard let metadata = try? await session.metadata(),
                metadata["xesam:url"]?.string == good.absoluteString,
                (try? await session.get("PlaybackStatus").string) == "Playing"
            else { return false }
            return ((try? await session.position()) ?? 0) > 1_000_000
        }
        let reason =
            "the good track after \(first.lastPathComponent) did not play a second (quaver's process \(session.daemon?.pid ?? 0)); log:\n\(session.log())"
        if knownLoss {
            withKnownIssue(
                "the track after a file that decodes nothing can end during its preroll", isIntermittent: true
            ) {
                #expect(played, "\(reason)")
            }
        } else {
            #expect(played, "\(reason)")
        }
        for line in session.log().split(separator: "\n")
        where line.contains("had not confirmed") || line.contains("before its end") || line.contains("early again")
            || line.contains("new pipeline")
        {
            print("\(first.lastPathComponent): \(line)")
        }
        guard played else { return }
        try await session.waitForStatus("Stopped", after: 1, timeout: .seconds(15))
        #expect(!session.log().contains("the audio output failed"), "the output was blamed:\n\(session.log())")
    }

    @Test("a half-second ALAC that decodes to nothing does not swallow the track after it")
    func shortFileBeforeAGoodOne() async throws {
        let session = try await Session()
        defer { session.stop() }
        let short = try Self.mediaFolder(of: session).appendingPathComponent("short.m4a")
        try await Self.ffmpeg([
            "-f", "lavfi", "-i", "sine=duration=0.5:sample_rate=8000", "-ac", "2", "-c:a", "alac", short.path,
        ])
        try await expectGoodTrackPlays(after: short, within: .seconds(20), session, knownLoss: true)
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
