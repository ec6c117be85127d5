import AudioCheck
import DBus
import Foundation
import TestKit
import Testing

/// Media that is not plain audio, through the real binary: a file whose cover is stored as a
/// video track plays its audio for its whole length (counted in rendered samples), and the pipeline quaver builds for it
/// (named in its debug log once the track plays) has no picture or video decoder. (A file
/// with no audio stream at all is in the hostile-media corpus, `HostileMediaTests`.)
@Suite("media that is not plain audio")
@MainActor
struct CoverAsVideoTests {
    static let seconds = 3

    /// Makes each kind of file into `folder`, and checks that playbin on its own (as
    /// `gst-launch-1.0` runs it) does decode its picture: the file really has a video track.
    static func makeFiles(in folder: URL) async throws -> [(kind: CoverAsVideo, file: URL)] {
        guard let gstLaunch = Tools.find("gst-launch-1.0") else {
            throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 }
        var files: [(CoverAsVideo, URL)] = []
        for kind in CoverAsVideo.allCases {
            let file = folder.appendingPathComponent("cover \(kind.rawValue).\(kind.fileExtension)")
            let made = try await Tools.run(
                gstLaunch, kind.gstLaunchArguments(file: file, seconds: seconds), environment: environment)
            guard made.status == 0 else { throw HarnessError("gst-launch-1.0 could not make \(kind): \(made.error)") }
            let plain = try await Tools.run(
                gstLaunch,
                ["-v", "playbin", "uri=\(file.absoluteString)", "audio-sink=fakesink", "video-sink=fakesink"],
                environment: environment)
            // The decoder's own line, or decoded pictures reaching playsink's video bin: under
            // load gst-launch can stop at the end before it prints the decoder's caps.
            let decoded =
                plain.output.contains(":\(kind.pictureDecoder)")
                || plain.output.contains(
                    "GstBin:vbin/GstPlaySinkVideoConvert:vconv.GstGhostPad:sink: caps = video/x-raw")
            #expect(
                plain.status == 0 && decoded,
                "playbin alone does not decode the picture of \(kind), so the test proves nothing: \(plain.output.suffix(2000))"
            )
            files.append((kind, file))
        }
        return files
    }

    @Test("a cover stored as a video track plays its audio to the end; no picture or video decoder is made")
    func coverAsVideoPlaysAudioOnly() async throws {
        let session = try await Session()
        defer { session.stop() }
        let files = try await Self.makeFiles(in: session.bus.directory.appendingPathComponent("media"))
        // Rendered in real time as raw samples appended to one file (each file gets a pipeline
        // of its own, which opens the file anew): how much audio played is counted in
        // samples, which a busy machine cannot skew the way it delays a client's signals.
        let output = session.bus.directory.appendingPathComponent("rendered.raw")
        try await session.launch(
            ["--log-level", "debug"] + files.map(\.file.path),
            sink: "audioconvert ! \(Gapless.renderCaps) ! filesink location=\(output.path) append=true sync=true")

        // Each file becomes current while Playing, with its audio's length.
        var starts: [Int] = []
        for (kind, file) in files {
            let found = await session.waiter.wait(timeout: .seconds(30)) {
                Self.playing(file, in: session.signals) != nil
            }
            #expect(
                found, "\(kind) never played; signals: \(session.signals.map(\.description))\nlog:\n\(session.log())")
            guard found, let (metadata, index) = Self.playing(file, in: session.signals) else { continue }
            starts.append(index)
            let length = metadata["mpris:length"]?.int64 ?? 0
            #expect(
                abs(length - Int64(Self.seconds) * 1_000_000) < 100_000,
                "\(kind): mpris:length \(length) µs for \(Self.seconds) s of audio")
        }
        #expect(starts == starts.sorted(), "the files did not play in order: signals \(starts)")
        let last = try #require(starts.last)
        try await session.waitForSignal(after: last, "the end of the queue") {
            $0.changed["PlaybackStatus"] == .string("Stopped")
        }
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)

        // Every file's audio played to its end: the rendering holds all of them. (A file whose
        // audio stopped early, or was skipped, leaves a second or more out.)
        let bytes = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int ?? 0
        let played = Double(bytes / 2) / Double(Gapless.sampleRate)  // 16-bit mono
        let expected = Double(files.count * Self.seconds)
        print(
            "cover as video: \(String(format: "%.3f", played)) s rendered for \(files.count) files of \(Self.seconds) s"
        )
        #expect(
            abs(played - expected) < 0.1 * Double(files.count),
            "\(played) s of audio rendered for \(expected) s in \(files.count) files")

        let log = session.log()
        let lines = log.split(separator: "\n").map(String.init)
        for (kind, file) in files {
            let prefix = "quaver[debug]: pipeline for \(file.path): "
            let described = lines.filter { $0.hasPrefix(prefix) }
            #expect(described.count == 1, "\(kind): \(described.count) pipeline lines\n\(log)")
            guard let line = described.first else { continue }
            let names = line.dropFirst(prefix.count).split(separator: " ").map(String.init)
            #expect(names.contains("uridecodebin") && names.contains(kind.audioDecoder), "\(kind): \(names)")
            #expect(!names.contains(kind.pictureDecoder), "\(kind): the picture is decoded: \(names)")
            #expect(
                !names.contains {
                    $0.contains("video") || $0.contains("image") || $0 == "deinterlace" || $0.hasSuffix("jpegdec")
                        || $0.hasSuffix("pngdec")
                },
                "\(kind): a video or picture element: \(names)")
        }
        // Nothing to warn about in playing them: the picture is left alone on purpose.
        let problems = lines.filter {
            ($0.hasPrefix("quaver[warning]") || $0.hasPrefix("quaver[error]")) && !$0.contains("playlist")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The Metadata of `file` and the index of the signal that made it current while Playing
    /// (the one with its Metadata, or a later PlaybackStatus Playing), if one did.
    static func playing(_ file: URL, in signals: [Session.RecordedSignal]) -> ([String: Value], Int)? {
        var status = "Stopped"
        var metadata: [String: Value] = [:]
        for (index, signal) in signals.enumerated()
        where signal.member == "PropertiesChanged" && signal.changedInterface == MPRISNames.player {
            if let new = signal.changed["Metadata"]?.stringVariantDictionary { metadata = new }
            if let new = signal.changed["PlaybackStatus"]?.string { status = new }
            if status == "Playing", metadata["xesam:url"]?.string == file.absoluteString { return (metadata, index) }
        }
        return nil
    }
}
