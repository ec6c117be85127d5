import Foundation
import TestKit
import Testing
import ToneGenerator

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

@Suite("TrackGenerator and Discoverer")
struct DiscovererTests {
    @Test func generatedTracksCarryTheirTagsAndDuration() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 1, in: folder)
        #expect(files.map(\.lastPathComponent) == ["01 Track 1.flac", "02 Track 2.flac"])

        for (offset, file) in files.enumerated() {
            let n = offset + 1
            let info = try Discoverer.discoverNow(file.absoluteString).get()
            #expect(info.title == "Track \(n)")
            #expect(info.artists == ["Artist \(n)"])
            #expect(info.album == "Test Album")
            #expect(info.genres == ["Test Tones"])
            #expect(info.trackNumber == n)
            #expect(info.discNumber == nil)
            #expect(info.albumArtists.isEmpty)
            let seconds = try #require(info.duration).inSeconds
            #expect(abs(seconds - 1) < 0.05, "duration \(seconds)")
            #expect(info.audioStreams == 1)
            #expect(info.videoStreams == 0)
            #expect(info.isSeekable)
            #expect(!info.isLive)
        }
    }

    @Test func customTagsSurviveUnicodeAndQuotes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let track = TrackGenerator.Track(
            fileName: "Ünïcødé.flac", title: "Çafé – \"Ünï\" 曲", artist: "Sigur Rós", album: "Ágætis byrjun",
            genre: "Post-Rock", trackNumber: 7, frequency: 330, seconds: 0.5)
        let files = try TrackGenerator.generate([track], into: folder.url)
        let info = try Discoverer.discoverNow(files[0].absoluteString).get()
        // The generator drops quotes (they would break its tag syntax); everything else is kept.
        #expect(info.title == "Çafé – Ünï 曲")
        #expect(info.artists == ["Sigur Rós"])
        #expect(info.album == "Ágætis byrjun")
        #expect(info.genres == ["Post-Rock"])
        #expect(info.trackNumber == 7)
        let seconds = try #require(info.duration).inSeconds
        #expect(abs(seconds - 0.5) < 0.05, "duration \(seconds)")
    }

    @Test func generateKeepsExistingFilesAndLeavesNoPartialFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let tracks = TrackGenerator.numbered(count: 2, seconds: 0.2)
        let first = try TrackGenerator.generate(tracks, into: folder.url)
        try Data("placeholder".utf8).write(to: first[1])  // an existing file is not rendered again
        let second = try TrackGenerator.generate(tracks, into: folder.url)
        #expect(first == second)
        #expect(try Data(contentsOf: second[1]) == Data("placeholder".utf8))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(names == ["01 Track 1.flac", "02 Track 2.flac"])
    }

    @Test func numberedTracksAreDistinctAndInNaturalOrder() {
        let tracks = TrackGenerator.numbered(count: 12, seconds: 2)
        #expect(tracks.count == 12)
        #expect(tracks.map(\.fileName) == tracks.map(\.fileName).sorted(by: MediaSources.naturalOrder))
        #expect(Set(tracks.map(\.frequency)).count == 12)
        #expect(tracks.allSatisfy { $0.seconds == 2 && $0.album == "Test Album" })
        #expect(tracks[11].title == "Track 12" && tracks[11].trackNumber == 12 && tracks[11].artist == "Artist 12")
        #expect(TrackGenerator.numbered(count: 0, seconds: 1).count == 1)
        #expect(TrackGenerator.demo.map(\.trackNumber) == [1, 2, 3])
    }

    @Test func asynchronousDiscoveryAnswersOnTheMainActor() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 0.3, in: folder)
        let discoverer = Discoverer()
        // The main queue (which the main actor runs on) is marked, to tell it from the
        // discoverer's queue; on Linux it need not be drained by the main thread.
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        defer { DispatchQueue.main.setSpecific(key: key, value: nil) }
        let (result, onMain) = await withCheckedContinuation { continuation in
            discoverer.discover(files[0].absoluteString) { result in
                continuation.resume(returning: (result, DispatchQueue.getSpecific(key: key) == "main"))
            }
        }
        #expect(onMain)
        #expect(try result.get().title == "Track 1")
        let missing = await withCheckedContinuation { continuation in
            discoverer.discover(folder.uri("missing.flac")) { continuation.resume(returning: $0) }
        }
        #expect(throws: MediaError.self) { try missing.get() }
    }

    @Test func garbageFileIsAnError() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = try folder.write("garbage.flac", data: garbageBytes)
        let error = try #require(Discoverer.discoverNow(file.absoluteString).failure)
        #expect(!error.reason.trimmingCharacters(in: .whitespaces).isEmpty)
        #expect(error.description == error.reason)
    }

    @Test func textFileIsAnError() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = try folder.write("notes.mp3", String(repeating: "This is not music at all.\n", count: 200))
        let error = try #require(Discoverer.discoverNow(file.absoluteString).failure)
        #expect(!error.reason.isEmpty)
    }

    @Test func zeroByteFileIsAnError() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = try folder.write("empty.flac", data: Data())
        let error = try #require(Discoverer.discoverNow(file.absoluteString).failure)
        #expect(!error.reason.isEmpty)
    }

    @Test func missingFileIsAnError() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let error = try #require(Discoverer.discoverNow(folder.uri("not-there.flac")).failure)
        #expect(!error.reason.isEmpty)
    }

    @Test func invalidURIIsAnError() throws {
        let error = try #require(Discoverer.discoverNow("this is not a uri").failure)
        #expect(!error.reason.isEmpty)
    }

    @Test
    func videoStreamsAreCounted() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.path("clip.ogv")
        try await Media.videoWithAudio(file)
        let info = try Discoverer.discoverNow(file.absoluteString).get()
        #expect(info.audioStreams == 1)
        #expect(info.videoStreams == 1)
    }

    @Test
    func fileWithoutAudioIsAnError() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.path("silent.ogv")
        try await Media.videoOnly(file)
        let error = try #require(Discoverer.discoverNow(file.absoluteString).failure)
        #expect(error.reason.contains("no audio"))
    }

    @Test func supportedMediaTypesIncludeTheGeneratedFormat() {
        let types = MediaTypes.supported()
        #expect(types.contains("audio/flac"))
        #expect(types.contains("audio/x-flac"))
        #expect(types == types.sorted())
        #expect(Set(types).count == types.count)
        #expect(types.allSatisfy { $0.hasPrefix("audio/") || $0 == "application/ogg" })
        #expect(!types.contains("audio/x-raw"))
    }

    @Test func mediaTypeAliases() {
        #expect(MediaTypes.aliases("audio/x-raw").isEmpty)
        #expect(MediaTypes.aliases("video/quicktime") == ["audio/mp4", "audio/x-m4a"])
        #expect(MediaTypes.aliases("audio/x-flac") == ["audio/flac", "audio/x-flac"])
        #expect(MediaTypes.aliases("audio/mpeg") == ["audio/mpeg"])
        #expect(MediaTypes.aliases("video/x-h264").isEmpty)
        #expect(MediaTypes.aliases("image/png").isEmpty)
    }

    @Test func gstreamerReportsItsVersion() {
        // gst_version_string() gives "GStreamer 1.22.0" (the doc comment's example says "1.22.0").
        let version = GStreamer.version
        #expect(version.contains(" 1.") || version.hasPrefix("1."), "\(version)")
        GStreamer.initialize()  // repeated initialisation is harmless
        #expect(GStreamer.version == version)
    }
}

@Suite("TagReader.clean")
struct TagCleaningTests {
    @Test(arguments: [
        ("  Title  ", "Title"),
        ("", ""),
        ("   ", ""),
        ("\t\n", ""),
        ("Line\nbreak", "Line break"),
        ("tab\tbed", "tab bed"),
        ("nul\u{0}inside", "nul inside"),
        ("bell\u{7}", "bell"),
        ("del\u{7F}ete", "del ete"),
        ("\u{1B}[31mred\u{1B}[0m", "[31mred [0m"),
        ("Ünïcødé 曲 🎵", "Ünïcødé 曲 🎵"),
    ])
    func controlsBecomeSpacesAndTextIsTrimmed(input: String, expected: String) {
        #expect(TagReader.clean(input) == expected)
    }

    @Test func longTagsAreBounded() {
        let cleaned = TagReader.clean(String(repeating: "é", count: 5000))
        #expect(cleaned.unicodeScalars.count == 1024)
        #expect(cleaned.unicodeScalars.allSatisfy { $0 == "é" })
        #expect(TagReader.clean(String(repeating: "a", count: 1024)).count == 1024)
    }

    @Test func noControlCharactersRemain() {
        // Every C0 and C1 control character and DEL, each between two letters.
        let controls = (0..<0x20).map { $0 } + [0x7F] + (0x80...0x9F).map { $0 }
        let input = controls.map { "a" + String(UnicodeScalar(UInt8($0))) + "b" }.joined()
        let cleaned = TagReader.clean(input)
        #expect(cleaned.unicodeScalars.filter { $0.value < 0x20 || $0.value == 0x7F }.isEmpty)
        #expect(cleaned.unicodeScalars.filter { $0.properties.generalCategory == .control }.isEmpty)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
