import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

@Suite("MediaSources: natural order")
struct NaturalOrderTests {
    func sorted(_ names: [String]) -> [String] { names.sorted(by: MediaSources.naturalOrder) }

    @Test func numbersCompareByValue() {
        #expect(
            sorted(["10.flac", "2.flac", "1.flac", "100.flac", "20.flac"]) == [
                "1.flac", "2.flac", "10.flac", "20.flac", "100.flac",
            ])
        #expect(sorted(["Track 10", "Track 9", "Track 1"]) == ["Track 1", "Track 9", "Track 10"])
        #expect(sorted(["x10y", "x9y", "x9z"]) == ["x9y", "x9z", "x10y"])
    }

    @Test func numbersLongerThanAnIntegerStillCompare() {
        #expect(MediaSources.naturalOrder("99999999999999999999", "100000000000000000000"))
        #expect(!MediaSources.naturalOrder("100000000000000000000", "99999999999999999999"))
    }

    @Test func caseIsIgnoredAndTiesAreStable() {
        #expect(
            sorted(["banana", "Apple", "cherry", "apple2", "Banana1"]) == [
                "Apple", "apple2", "banana", "Banana1", "cherry",
            ])
        #expect(sorted(["track 2", "Track 10", "TRACK 1"]) == ["TRACK 1", "track 2", "Track 10"])
        // Names equal but for case get a fixed order, whichever way round they are compared.
        #expect(MediaSources.naturalOrder("A", "a") != MediaSources.naturalOrder("a", "A"))
        #expect(sorted(["a", "A", "a", "A"]) == sorted(["A", "a", "A", "a"]))
    }

    @Test func leadingZerosDoNotChangeTheValue() {
        #expect(sorted(["010", "9", "0011"]) == ["9", "010", "0011"])
        #expect(sorted(["02 b", "1 a", "003 c"]) == ["1 a", "02 b", "003 c"])
        // Equal values with different zero padding are still strictly ordered.
        #expect(MediaSources.naturalOrder("01", "1") != MediaSources.naturalOrder("1", "01"))
    }

    @Test func prefixesComeFirst() {
        #expect(sorted(["Track 1 (live)", "Track 1", "Track"]) == ["Track", "Track 1", "Track 1 (live)"])
        #expect(MediaSources.naturalOrder("", "a"))
        #expect(!MediaSources.naturalOrder("a", ""))
    }

    @Test func isAStrictWeakOrder() {
        let names = [
            "a", "A", "a1", "a01", "a2", "a10", "A10", "b", "10", "9", "", " ", "Ünï", "z9", "z09", "track.flac",
            "track 1.flac",
        ]
        for a in names {
            #expect(!MediaSources.naturalOrder(a, a), "irreflexive: \(a)")
            for b in names where a != b {
                #expect(
                    MediaSources.naturalOrder(a, b) != MediaSources.naturalOrder(b, a),
                    "total on distinct strings: \(a) / \(b)")
                for c in names where MediaSources.naturalOrder(a, b) && MediaSources.naturalOrder(b, c) {
                    #expect(MediaSources.naturalOrder(a, c), "transitive: \(a) < \(b) < \(c)")
                }
            }
        }
    }
}

@Suite("MediaSources: schemes and names")
struct SchemeTests {
    @Test(arguments: [
        ("file:///music/a.flac", "file"),
        ("http://example.com/a.mp3", "http"),
        ("HTTPS://example.com/a.mp3", "https"),
        ("ftp://example.com/a.mp3", "ftp"),
        ("a+b-c.d://x", "a+b-c.d"),
        ("data:audio/wav;base64,AAAA", "data"),
    ])
    func recognisesSchemes(text: String, scheme: String) {
        #expect(MediaSources.scheme(of: text) == scheme)
    }

    @Test(arguments: [
        "/music/a.flac", "music/a.flac", "a.flac", ":foo", "1abc://x", "C:\\Music\\a.mp3", "C:music.mp3",
        "dir/with:colon.flac", "/abs/path:x.flac", "audiotestsrc ! autoaudiosink", "",
    ])
    func plainPathsHaveNoScheme(text: String) {
        #expect(MediaSources.scheme(of: text) == nil)
    }

    @Test func displayNameIsThePathForFilesAndTheURIOtherwise() {
        #expect(MediaSources.displayName("file:///tmp/My%20Music/a%23b.flac") == "/tmp/My Music/a#b.flac")
        #expect(MediaSources.displayName("http://example.com/a%20b.mp3") == "http://example.com/a%20b.mp3")
        #expect(MediaSources.displayName("not a uri at all") == "not a uri at all")
    }
}

@Suite("MediaSources: folders")
struct FolderExpansionTests {
    @Test func recursesInNaturalOrderSkippingHiddenAndNonAudio() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        for name in [
            "10 Ten.flac", "2 Two.mp3", "Disc 10/1.flac", "Disc 2/10.ogg", "Disc 2/9.opus", "LOUD.FLAC",
            "cover.jpg", "notes.txt", "list.m3u", "noextension", ".hidden.flac", ".secret/inside.flac",
            "Disc 2/.DS_Store", "Deep/er/est/x.m4a",
        ] {
            try folder.write(name, "x")
        }
        let log = LogCapture()
        let files = MediaSources.mediaFiles(in: folder.url, logger: log.logger)
        #expect(
            files.map { $0.path.replacingOccurrences(of: folder.url.path + "/", with: "") } == [
                "2 Two.mp3", "10 Ten.flac", "Deep/er/est/x.m4a", "Disc 2/9.opus", "Disc 2/10.ogg", "Disc 10/1.flac",
                "LOUD.FLAC",
            ])

        let uris = MediaSources.expand([folder.url.path], logger: log.logger)
        #expect(uris == files.map(\.absoluteString))
        #expect(uris.allSatisfy { $0.hasPrefix("file:///") })
    }

    @Test func symlinkLoopsTerminate() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("music/a.flac", "x")
        try FileManager.default.createSymbolicLink(
            at: folder.path("music/loop"), withDestinationURL: folder.path("music"))
        let files = MediaSources.mediaFiles(in: folder.path("music"), logger: LogCapture().logger)
        #expect(files.map(\.lastPathComponent) == ["a.flac"])
    }

    @Test func emptyFolderIsReported() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("empty/readme.txt", "x")
        let log = LogCapture()
        #expect(MediaSources.expand([folder.path("empty").path], logger: log.logger).isEmpty)
        #expect(!log.lines(containing: "no media files").isEmpty, "\(log.messages)")
    }
}

@Suite("MediaSources: arguments")
struct ArgumentExpansionTests {
    @Test func filesPathsAndURIsKeepTheirOrder() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b c.flac", "x")
        try folder.write("sub/d.mp3", "x")
        let log = LogCapture()
        let result = MediaSources.expand(
            [
                folder.path("a.flac").path,
                "http://example.com/stream.mp3",
                folder.path("b c.flac").standardizedFileURL.absoluteString,  // a file URI (percent-encoded)
                "sub/../sub/d.mp3",  // relative to the base
                "HTTPS://Example.com/Live",
            ], relativeTo: folder.url, logger: log.logger)
        #expect(
            result == [
                folder.uri("a.flac"), "http://example.com/stream.mp3", folder.uri("b c.flac"), folder.uri("sub/d.mp3"),
                "HTTPS://Example.com/Live",
            ])
        #expect(log.messages(atLeast: .warning).isEmpty, "\(log.messages)")
    }

    @Test func anExplicitFileIsTakenOnlyWithAMediaExtensionAsInAFolder() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("recording.unknownext", "x")
        try folder.write("Recording.MKV", "x")
        let log = LogCapture()
        #expect(
            MediaSources.expand(["recording.unknownext", "Recording.MKV"], relativeTo: folder.url, logger: log.logger)
                == [folder.uri("Recording.MKV")])
        #expect(log.lines(containing: "recording.unknownext", "not named as a media file").count == 1)
    }

    @Test func missingPathsAreDroppedAndNamed() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b.flac", "x")
        let log = LogCapture()
        let missing = folder.path("missing.flac").path
        let result = MediaSources.expand(
            ["a.flac", missing, "file:///nonexistent/quaver/x.flac", "b.flac"], relativeTo: folder.url,
            logger: log.logger)
        #expect(result == [folder.uri("a.flac"), folder.uri("b.flac")])
        #expect(log.lines(containing: missing, "no such file").count == 1, "\(log.messages)")
        #expect(
            log.lines(containing: "file:///nonexistent/quaver/x.flac", "no such file").count == 1, "\(log.messages)")
    }

    @Test(arguments: [
        "ftp://example.com/a.mp3",
        "fd://0",
        "appsrc://",
        "data:audio/wav;base64,UklGRg==",
        "smb://server/share/a.flac",
        "javascript:alert(1)",
    ])
    func unsupportedSchemesAreRejected(argument: String) {
        let log = LogCapture()
        #expect(MediaSources.expand([argument], logger: log.logger).isEmpty)
        let warnings = log.lines(containing: argument, "unsupported URI scheme")
        #expect(warnings.count == 1, "\(log.messages)")
    }

    @Test(arguments: [
        "audiotestsrc ! autoaudiosink",
        "filesrc location=/etc/passwd ! decodebin ! autoaudiosink",
        "playbin uri=file:///etc/passwd",
        "souphttpsrc location=http://example.com ! fakesink",
    ])
    func gstreamerPipelineDescriptionsAreNotPlayed(argument: String) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let log = LogCapture()
        #expect(MediaSources.expand([argument], relativeTo: folder.url, logger: log.logger).isEmpty)
        #expect(log.lines(containing: argument).count == 1, "one warning naming it: \(log.messages)")
    }
}

@Suite("MediaSources: playlists")
struct PlaylistTests {
    @Test func m3uWithCommentsRelativeAbsoluteURIsAndCRLF() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("lists/near.flac", "x")
        try folder.write("lists/sub/deep.ogg", "x")
        try folder.write("far.mp3", "x")
        try folder.write("abs.flac", "x")
        try folder.write("with space.flac", "x")
        let lines = [
            "#EXTM3U",
            "#EXTINF:123,Artist - Title",
            "near.flac",
            "",
            "   sub/deep.ogg   ",
            "# a comment with a path: far.mp3",
            "../far.mp3",
            folder.path("abs.flac").path,
            "http://radio.example.com/stream",
            folder.path("with space.flac").absoluteString,
            "missing.flac",
            "ftp://example.com/x.mp3",
        ]
        let playlist = try folder.write("lists/mix.m3u", lines.joined(separator: "\r\n") + "\r\n")
        let log = LogCapture()
        // The base (here a folder elsewhere) does not matter: entries are relative to the playlist.
        let result = MediaSources.expand([playlist.path], relativeTo: URL(fileURLWithPath: "/"), logger: log.logger)
        #expect(
            result == [
                folder.uri("lists/near.flac"), folder.uri("lists/sub/deep.ogg"), folder.uri("far.mp3"),
                folder.uri("abs.flac"),
                "http://radio.example.com/stream", folder.uri("with space.flac"),
            ])
        #expect(log.lines(containing: "missing.flac", "no such file").count == 1, "\(log.messages)")
        #expect(log.lines(containing: "ftp://example.com/x.mp3", "unsupported").count == 1, "\(log.messages)")
    }

    @Test func m3u8KeepsUnicodeNamesAndOldMacLineEndings() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("Ünïcødé – 曲.flac", "x")
        try folder.write("plain.flac", "x")
        let playlist = try folder.write("list.M3U8", "#EXTM3U\rÜnïcødé – 曲.flac\rplain.flac")
        let result = MediaSources.expand([playlist.path], logger: LogCapture().logger)
        #expect(result == [folder.uri("Ünïcødé – 曲.flac"), folder.uri("plain.flac")])
    }

    @Test func m3u8WithAByteOrderMark() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("first.flac", "x")
        try folder.write("second.flac", "x")
        // Playlists saved by Windows tools start with a UTF-8 byte order mark; here on the first entry.
        let playlist = try folder.write(
            "bom.m3u8", data: Data([0xEF, 0xBB, 0xBF]) + Data("first.flac\nsecond.flac\n".utf8))
        let log = LogCapture()
        let result = MediaSources.expand([playlist.path], logger: log.logger)
        #expect(result == [folder.uri("first.flac"), folder.uri("second.flac")])
        #expect(log.messages(atLeast: .warning).isEmpty, "\(log.messages)")
        #expect(result.contains(folder.uri("second.flac")))
    }

    @Test func plsOrdersByFileNumberAndIgnoresOtherKeys() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b.flac", "x")
        try folder.write("c.flac", "x")
        try folder.write("d.flac", "x")
        let text = """
            [playlist]
            NumberOfEntries=5
            File2=b.flac
            Title2=Bee
            Length2=-1
            File1=a.flac
            file10=http://radio.example.com/ten
            File3=
            FILE4=\(folder.path("c.flac").path)
            File9=sub/../d.flac
            Version=2
            """
        let playlist = try folder.write("radio.pls", text.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(
            MediaSources.playlistEntries(playlist, logger: LogCapture().logger) == [
                "a.flac", "b.flac", folder.path("c.flac").path, "sub/../d.flac", "http://radio.example.com/ten",
            ])
        let result = MediaSources.expand([playlist.path], logger: LogCapture().logger)
        #expect(
            result == [
                folder.uri("a.flac"), folder.uri("b.flac"), folder.uri("c.flac"), folder.uri("d.flac"),
                "http://radio.example.com/ten",
            ])
    }

    @Test func nestedPlaylistsAndFoldersExpandInPlace() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("one.flac", "x")
        try folder.write("inner/two.flac", "x")
        try folder.write("inner/album/3.flac", "x")
        try folder.write("inner/album/10.flac", "x")
        try folder.write("inner/inner.m3u", "two.flac\nalbum\n")
        let outer = try folder.write("outer.m3u", "one.flac\ninner/inner.m3u\none.flac\n")
        let result = MediaSources.expand([outer.path], logger: LogCapture().logger)
        #expect(
            result == [
                folder.uri("one.flac"), folder.uri("inner/two.flac"), folder.uri("inner/album/3.flac"),
                folder.uri("inner/album/10.flac"),
                folder.uri("one.flac"),
            ])
    }

    @Test func selfReferencingPlaylistTerminates() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        let playlist = try folder.write("loop.m3u", "loop.m3u\na.flac\n")
        let log = LogCapture()
        let result = MediaSources.expand([playlist.path], logger: log.logger)
        #expect(result == [folder.uri("a.flac")], "read once")
        #expect(log.lines(containing: playlist.path, "read already").count == 1, "\(log.messages)")
    }

    @Test func unreadablePlaylistIsReported() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let log = LogCapture()
        #expect(MediaSources.playlistEntries(folder.path("gone.m3u"), logger: log.logger).isEmpty)
        #expect(log.lines(containing: "gone.m3u", "cannot read").count == 1, "\(log.messages)")
    }

    @Test func entryWithAColonInItsFileName() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // Legal on Linux and common in music libraries ("Title: Subtitle").
        try folder.write("Interlude: Reprise.flac", "x")
        try folder.write("Act 1: Overture.flac", "x")
        let playlist = try folder.write("list.m3u", "Interlude: Reprise.flac\nAct 1: Overture.flac\n")
        let result = MediaSources.expand([playlist.path], logger: LogCapture().logger)
        #expect(result == [folder.uri("Interlude: Reprise.flac"), folder.uri("Act 1: Overture.flac")])
        #expect(result.contains(folder.uri("Act 1: Overture.flac")))
    }
}
