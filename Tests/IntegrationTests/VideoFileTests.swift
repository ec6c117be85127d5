import DBus
import Foundation
import TestKit
import Testing

/// Music videos through the real binary, under whichever plugin set the run has. With
/// plugins-bad, playbin made every video sink it could find to try each, and DirectFB's
/// killed the process (before it owned its bus name when a video came first). What Quaver
/// loads is read from its own process: no plugin of a video sink, and no plugin that holds
/// only elements of video, images or subtitles, is mapped into it.
@Suite("music videos")
@MainActor
struct VideoFileTests {
    @Test("video files first in the queue, skipped through quickly and played: no crash, no video plugin loaded")
    func videoFilesLoadNoVideoPlugin() async throws {
        let session = try await Session()
        defer { session.stop() }
        let folder = session.bus.directory.appendingPathComponent("videos")
        let (samples, _) = try await FormatLibrary.make(in: folder)
        let videos = samples.filter { $0.format.contains("video") }
        let audio = try #require(samples.first { $0.format == "FLAC" })
        try #require(videos.count == 3, "\(samples.map(\.format))")

        try await session.launch(["--log-level", "debug"] + videos.map(\.file.path) + [audio.file.path])
        // Next, Previous and Next again, each before the track before it has settled.
        for member in ["Next", "Previous", "Next", "Next", "Previous"] {
            _ = try await session.call(member)
        }
        try await session.waitForStatus("Stopped", after: 1, timeout: .seconds(60))
        #expect(session.daemonStatus == nil, "quaver exited (\(session.daemonStatus ?? 0)); log:\n\(session.log())")
        let played = session.signals.contains {
            $0.changed["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string == audio.file.absoluteString
        }
        #expect(played, "the track after the videos never became current; log:\n\(session.log())")

        let pid = try #require(session.daemon?.pid)
        let maps = try #require(try ProcessProbe.memoryMaps(of: pid))
        let plugins = Set(
            maps.split(separator: "\n").compactMap { line -> String? in
                guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last,
                    path.contains("/gstreamer-1.0/"), path.hasSuffix(".so")
                else { return nil }
                return String(path)
            })
        #expect(!plugins.isEmpty, "no GStreamer plugin in quaver's mappings:\n\(maps)")
        var offending: [String] = []
        for plugin in plugins.sorted() {
            let klasses = try await Self.klasses(ofPlugin: plugin)
            let videoSink = klasses.contains { $0.contains("Sink") && $0.contains("Video") }
            let onlyPictures =
                !klasses.isEmpty
                && klasses.allSatisfy {
                    !$0.contains("Audio") && !$0.contains("Demuxer")
                        && ($0.contains("Video") || $0.contains("Image") || $0.contains("Subtitle"))
                }
            if videoSink || onlyPictures { offending.append("\(plugin): \(klasses)") }
        }
        print("video files: quaver loaded \(plugins.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted())")
        #expect(offending.isEmpty, "quaver loaded plugins of video: \(offending)")
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)
    }

    /// The klass of each element in the plugin file at `path`, as gst-inspect-1.0 gives it.
    static func klasses(ofPlugin path: String) async throws -> [String] {
        guard let inspect = Tools.find("gst-inspect-1.0") else {
            throw HarnessError("gst-inspect-1.0 is not installed")
        }
        let environment = ProcessInfo.processInfo.environment
        let plugin = try await Tools.run(inspect, [path], environment: environment)
        // Its features are listed as "  name: description" after a blank line.
        let names = plugin.output.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            return name.contains(" ") || name.isEmpty ? nil : name
        }
        var klasses: [String] = []
        for name in names {
            let element = try await Tools.run(inspect, [name], environment: environment)
            if let line = element.output.split(separator: "\n").first(where: { $0.contains("Klass") }) {
                klasses.append(line.replacingOccurrences(of: "Klass", with: "").trimmingCharacters(in: .whitespaces))
            }
        }
        return klasses
    }
}
