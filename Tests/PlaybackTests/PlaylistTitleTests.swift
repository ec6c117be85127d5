import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// What playlists call their entries (`#EXTINF`, `TitleN=`), and what clients are shown of
/// an entry with such a title.
@Suite("Playlists: entry titles")
struct PlaylistTitleTests {
    @Test func m3uTitlesGoWithTheEntryThatFollowsThem() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        for name in ["a.flac", "b.flac", "c.flac", "d.flac"] { try folder.write(name, "x") }
        let lines = [
            "#EXTM3U",
            "#EXTINF:-1,Loopback FM",
            "http://radio.example/live",
            "#EXTINF:214 tvg-name=\"A, B\" group-title=\"x\",Artist - Song, Part 2",
            "#EXTVLCOPT:network-caching=1000",
            "a.flac",
            "b.flac",
            "#EXTINF:10,",
            "c.flac",
            "#EXTINF:no comma here",
            "d.flac",
            "#extinf:-1,  Lower\u{7}Case  ",
            "http://radio.example/other",
        ]
        let playlist = try folder.write("mix.m3u8", lines.joined(separator: "\n"))
        let items = MediaSources.expandItems([playlist.path], logger: LogCapture().logger)
        #expect(
            items == [
                MediaItem(uri: "http://radio.example/live", title: "Loopback FM"),
                MediaItem(uri: folder.uri("a.flac"), title: "Artist - Song, Part 2"),
                MediaItem(uri: folder.uri("b.flac")), MediaItem(uri: folder.uri("c.flac")),
                MediaItem(uri: folder.uri("d.flac")),
                MediaItem(uri: "http://radio.example/other", title: "Lower Case"),
            ])
    }

    @Test func plsTitlesGoWithTheFileOfTheirNumber() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        let text = """
            [playlist]
            Title2=Second Station
            File2=http://radio.example/two
            File1=a.flac
            title1=The Artist - The Song
            File3=http://radio.example/three
            Title3=
            Title4=No File
            NumberOfEntries=3
            """
        let playlist = try folder.write("radio.pls", text)
        #expect(
            MediaSources.expandItems([playlist.path], logger: LogCapture().logger) == [
                MediaItem(uri: folder.uri("a.flac"), title: "The Artist - The Song"),
                MediaItem(uri: "http://radio.example/two", title: "Second Station"),
                MediaItem(uri: "http://radio.example/three"),
            ])
    }

    @Test func aTitleNamesOneTrackNotAFolderOrPlaylist() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("album/1.flac", "x")
        try folder.write("inner.m3u", "album/1.flac\n")
        let outer = try folder.write(
            "outer.m3u", "#EXTINF:-1,The Album\nalbum\n#EXTINF:-1,The Inner List\ninner.m3u\n")
        #expect(
            MediaSources.expandItems([outer.path], logger: LogCapture().logger) == [
                MediaItem(uri: folder.uri("album/1.flac")), MediaItem(uri: folder.uri("album/1.flac")),
            ])
    }

    // MARK: - What is shown

    func entry(_ uri: String, title: String?, info: TrackInfo? = nil) -> Player.Entry {
        var entry = Player.Entry(id: 1, uri: uri, title: title)
        entry.info = info
        return entry
    }

    @Test func aStationWithoutANameIsCalledWhatItsPlaylistCallsIt() {
        let station = "http://radio.example/live.mp3"
        // Before the stream plays, and once it has played without naming itself.
        for info in [nil, TrackInfo(facts: Pipeline.Facts())] {
            let shown = entry(station, title: "Loopback FM", info: info).shownInfo
            #expect(shown?.title == "Loopback FM" && shown?.artists == ["Loopback FM"] && shown?.album == "Loopback FM")
        }
        // A stream title keeps its place; the station's name goes where an ICY name would.
        var tags = StreamTags()
        tags.title = "Radio Artist 1 - Radio Song 1"
        let titled = entry(station, title: "Loopback FM", info: tags.applied(to: TrackInfo())).shownInfo
        #expect(titled?.title == "Radio Artist 1 - Radio Song 1" && titled?.artists == ["Loopback FM"])
        // The station's own name (`icy-name`) wins over the playlist's.
        tags.organization = "Station Itself"
        let named = entry(station, title: "Loopback FM", info: tags.applied(to: TrackInfo())).shownInfo
        #expect(named?.artists == ["Station Itself"] && named?.album == "Station Itself")
        #expect(entry(station, title: nil).shownInfo == nil)
    }

    @Test func aFileTakesWhatItsTagsLackFromItsPlaylistTitle() {
        let file = "file:///music/track.flac"
        var untagged = TrackInfo()
        untagged.duration = .seconds(3)
        let split = entry(file, title: "The Artist - The Song", info: untagged).shownInfo
        #expect(split?.title == "The Song" && split?.artists == ["The Artist"] && split?.album == nil)
        #expect(split?.duration == .seconds(3))
        // Before its tags are read, too.
        #expect(entry(file, title: "The Artist - The Song").shownInfo?.title == "The Song")

        let whole = entry(file, title: "Interlude - ", info: untagged).shownInfo
        #expect(whole?.title == "Interlude - " && whole?.artists == [])

        var tagged = TrackInfo()
        tagged.title = "Tagged Title"
        let partly = entry(file, title: "The Artist - The Song", info: tagged).shownInfo
        #expect(partly?.title == "Tagged Title" && partly?.artists == ["The Artist"])
        tagged.artists = ["Tagged Artist"]
        #expect(entry(file, title: "The Artist - The Song", info: tagged).shownInfo == tagged)
    }

    @Test func theTitleStaysWithTheEntryThroughItsTags() {
        var entry = entry("http://radio.example/live", title: "Loopback FM")
        entry.info = TrackInfo()
        entry.failure = "no audio"
        #expect(entry.playlistTitle == "Loopback FM")
        entry.info = nil
        entry.failure = nil
        #expect(entry.playlistTitle == "Loopback FM")
        #expect(entry != self.entry("http://radio.example/live", title: nil))
    }
}
