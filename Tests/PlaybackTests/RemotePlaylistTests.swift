import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// Playlists named by an http URL: fetched through GStreamer's source for the URL, bounded,
/// and read as local ones, their entries resolved against the playlist's URL.
@Suite("Playlists on the network")
struct RemotePlaylistTests {
    typealias Server = PlayerStreamTests.TrickleServer

    /// Serves `text` once, at once.
    func serve(_ text: String) throws -> Server {
        try Server(serving: Data(text.utf8), contentType: "audio/x-scpls", slowRate: 1, slowFor: .zero)
    }

    @Test func aStationsPlsIsReadWithItsTitlesAndItsRelativeEntriesResolved() throws {
        let server = try serve(
            "[playlist]\nFile1=live.mp3\nTitle1=Loopback FM\nFile2=http://other.example/b.mp3\nFile3=file:///etc/passwd\nFile4=/etc/hosts\nTitle4=Rooted\nNumberOfEntries=4\n"
        )
        let url = "http://127.0.0.1:\(server.port)/radio/listen.pls?id=3"
        let log = LogCapture()
        #expect(MediaSources.isCollection(url))
        #expect(
            MediaSources.expandItems([url], logger: log.logger) == [
                MediaItem(uri: "http://127.0.0.1:\(server.port)/radio/live.mp3", title: "Loopback FM"),
                MediaItem(uri: "http://other.example/b.mp3"),
                MediaItem(uri: "http://127.0.0.1:\(server.port)/etc/hosts", title: "Rooted"),
            ])
        #expect(
            log.lines(containing: "file:///etc/passwd", "names http and https URLs only").count == 1, "\(log.messages)")
        #expect(log.messages.count == 1, "\(log.messages)")
    }

    @Test func anHLSPlaylistIsAStreamForGStreamer() throws {
        let server = try serve("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nseg1.ts\n")
        let url = "http://127.0.0.1:\(server.port)/live/index.m3u8"
        let log = LogCapture()
        #expect(MediaSources.expand([url], logger: log.logger) == [url])
        #expect(log.messages.isEmpty, "\(log.messages)")
    }

    @Test func onlyURLsWhosePathEndsInAPlaylistExtensionAreRead() {
        #expect(RemotePlaylist.names("HTTPS://radio.example/Listen.PLS?token=x#y"))
        #expect(RemotePlaylist.names("http://radio.example/list.m3u"))
        #expect(!RemotePlaylist.names("http://radio.example/live.mp3?list.pls"))
        #expect(!RemotePlaylist.names("file:///music/list.m3u"))
        #expect(!MediaSources.isCollection("http://radio.example/live"))
    }

    @Test func aPlaylistIsReadUpToTheLimitAndWithinTheTimeout() throws {
        let server = try serve(String(repeating: "http://h/a.mp3\n", count: 10))
        let url = "http://127.0.0.1:\(server.port)/big.m3u"
        guard case .start(let start, nil) = RemotePlaylist.fetch(url, limit: 20) else {
            Issue.record("not cut at 20 bytes")
            return
        }
        #expect(start == Data("http://h/a.mp3\nhttp:".utf8))

        let mute = try PlayerStreamTests.MuteServer()
        let started = ContinuousClock.now
        let result = RemotePlaylist.fetch(
            "http://127.0.0.1:\(mute.port)/never.pls", limit: 1 << 20, timeout: .milliseconds(500))
        guard case .refused(let reason) = result else {
            Issue.record("a server that never answers gave \(result)")
            return
        }
        #expect(reason.contains("not read whole within"))
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
