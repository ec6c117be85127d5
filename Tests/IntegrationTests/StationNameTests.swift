import Foundation
import TestKit
import Testing

/// What a playlist calls its entries reaches clients: a radio station that does not name
/// itself shows the playlist's name for it (GNOME Shell showed the stream's file name and
/// "Unknown artist"), and a file without tags its `#EXTINF` artist and title. Read with
/// playerctl, as a desktop's media widget reads them.
@Suite("playlist titles", .serialized)
@MainActor
struct StationNameTests {
    @Test(
        "a station that sends no icy-name is shown by its playlist's name, from .m3u, .pls and a .pls URL",
        arguments: ["m3u", "pls", "remote pls"])
    func aStationNamedByItsPlaylist(kind: String) async throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url
        let server = try await HTTPTestServer(serving: folder)
        defer { server.stop() }
        // No icy-name, no ICY titles: the stream names nothing.
        let stream = server.url("radio.mp3?anonymous=1")
        let playlist = folder.appendingPathComponent(kind == "m3u" ? "station.m3u" : "station.pls")
        let text =
            kind == "m3u"
            ? "#EXTM3U\n#EXTINF:-1,Loopback FM\n\(stream)\n"
            : "[playlist]\nFile1=\(stream)\nTitle1=Loopback FM\nLength1=-1\nNumberOfEntries=1\nVersion=2\n"
        try text.write(to: playlist, atomically: true, encoding: .utf8)

        let session = try await Session()
        defer { session.stop() }
        // The remote one as a station's web site offers it, served over HTTP.
        try await session.launch([kind == "remote pls" ? server.url(file: playlist) : playlist.path])
        try await session.waitForStatus("Playing")
        #expect(try await session.playerctl("metadata", "xesam:title") == "Loopback FM", "\(session.log())")
        #expect(try await session.playerctl("metadata", "xesam:artist") == "Loopback FM")
        #expect(try await session.playerctl("metadata", "xesam:album") == "Loopback FM")
        #expect(try await session.playerctl("metadata", "xesam:url") == stream)
        // Never the URL's file name, in any Metadata published (the first state, owned with
        // the name, is no change: it is read).
        let titles =
            session.metadataChanges().compactMap { $0["xesam:title"]?.string }
            + [try await session.metadata()["xesam:title"]?.string].compactMap { $0 }
        #expect(!titles.isEmpty && titles.allSatisfy { $0 == "Loopback FM" }, "\(titles)")
    }

    @Test("a file without tags shows the artist and title of its #EXTINF; a tagged one its tags")
    func anUntaggedFileTakesItsPlaylistTitle() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url
        let untagged = folder.appendingPathComponent("untagged.flac")
        try FLACMetadata.rewrite(tracks[0], to: untagged, comments: [])
        let playlist = folder.appendingPathComponent("list.m3u8")
        let lines = [
            "#EXTM3U", "#EXTINF:10,Playlist Artist - Playlist Song", "untagged.flac", "#EXTINF:10,Not - Shown",
            tracks[1].path,
        ]
        try (lines.joined(separator: "\n") + "\n").write(to: playlist, atomically: true, encoding: .utf8)

        let session = try await Session()
        defer { session.stop() }
        try await session.launch([playlist.path])
        try await session.waitForStatus("Playing")
        #expect(try await session.playerctl("metadata", "xesam:title") == "Playlist Song", "\(session.log())")
        #expect(try await session.playerctl("metadata", "xesam:artist") == "Playlist Artist")
        try await session.playerctl("next")
        _ = await session.waiter.wait(timeout: .seconds(20)) {
            session.metadataChanges().last?["xesam:title"]?.string == "Track 2"
        }
        #expect(try await session.playerctl("metadata", "xesam:title") == "Track 2", "\(session.log())")
        #expect(try await session.playerctl("metadata", "xesam:artist") == "Artist 2")
    }
}
