import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPlayer

/// One list of media extensions decides what a folder scan takes, and what a file named on
/// its own (an argument, `OpenUri`, `AddTrack`) or in a playlist must end in.
@Suite("MediaSources: which files are media")
struct MediaNameTests {
    /// The formats users' libraries hold, music videos included.
    static let libraryNames = [
        "01 song.mp3", "02 song.flac", "03 song.ogg", "04 song.opus", "05 song.m4a", "06 song.aiff", "07 song.wma",
        "08 song.wv", "09 song.mpc", "10 song.ape", "11 song.mka", "12 song.wav", "13 video.mp4", "14 video.mkv",
        "15 video.ogv", "16 video.webm", "17 SONG.AIF",
    ]
    /// What a music folder holds besides: none of it is played, by any way in.
    static let otherNames = ["cover.jpg", "notes.txt", "rip.log", "album.cue", "README", "song.mp3.part"]

    @Test func aFolderScanAPlaylistAndANamedFileTakeTheSameFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        for name in Self.libraryNames + Self.otherNames { try folder.write("music/" + name, "x") }
        let expected = Self.libraryNames.map { folder.uri("music/" + $0) }

        let scanLog = LogCapture()
        #expect(MediaSources.expand([folder.path("music").path], logger: scanLog.logger) == expected)
        #expect(scanLog.messages.isEmpty, "a folder's other files are left out quietly: \(scanLog.messages)")

        let named = Self.libraryNames + Self.otherNames
        let namedLog = LogCapture()
        let one = named.map { folder.path("music/" + $0).path }
        #expect(MediaSources.expand(one, logger: namedLog.logger) == expected)
        for name in Self.otherNames {
            #expect(
                namedLog.lines(containing: "music/" + name, "not named as a media file").count == 1,
                "\(namedLog.messages)")
        }

        let playlist = try folder.write("music.m3u", named.map { "music/" + $0 }.joined(separator: "\n"))
        let playlistLog = LogCapture()
        #expect(MediaSources.expand([playlist.path], logger: playlistLog.logger) == expected)
        #expect(playlistLog.messages.count == Self.otherNames.count, "\(playlistLog.messages)")
        #expect(
            playlistLog.lines(containing: "README", "not named as a media file (no extension)").count == 1,
            "\(playlistLog.messages)")
    }

    @Test func streamsArePlayedWhateverTheirURLEndsIn() {
        let uris = ["http://radio.example/live", "https://radio.example/stream.php?id=3"]
        #expect(MediaSources.expand(uris, logger: LogCapture().logger) == uris)
    }

    @Test func playlistsAreNoMediaAndMediaNoPlaylists() {
        #expect(MediaSources.mediaExtensions.isDisjoint(with: MediaSources.playlistExtensions))
        #expect(MediaSources.mediaExtensions.allSatisfy { $0 == $0.lowercased() })
        #expect(MediaSources.isMediaName("/music/Clip.OGV") && !MediaSources.isMediaName("/music/.flac"))
    }
}
