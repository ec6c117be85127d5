import AudioCheck
import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// Files whose cover is stored as a video track, played by the real Player: the audio plays
/// for its whole length and the picture is never decoded.
@Suite("Player: a cover stored as a video track")
@MainActor
struct CoverAsVideoTests {
    @Test("plays the audio; no picture decoder is made", arguments: CoverAsVideo.allCases)
    func coverAsVideoPlaysAudioOnly(kind: CoverAsVideo) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.path("cover.\(kind.fileExtension)")
        try await Media.launch(arguments: kind.gstLaunchArguments(file: file, seconds: 4))
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue([file.absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing), "\(probe.log.messages)")
        let info = try #require(player.current?.info)
        #expect(
            info.videoStreams == 1 && info.audioStreams == 1,
            "\(info.videoStreams) video, \(info.audioStreams) audio streams")
        let duration = try #require(info.duration).inSeconds
        #expect(abs(duration - 4) < 0.1, "duration \(duration) s for 4 s of audio")
        let names = player.pipelineElementNames
        #expect(names.contains(kind.audioDecoder), "\(names)")
        #expect(!names.contains(kind.pictureDecoder), "the picture is decoded: \(names)")
        #expect(
            !names.contains { $0.contains("video") || $0.contains("image") || $0 == "deinterlace" },
            "a video chain: \(names)")
        // The audio plays on past the one second the picture lasts.
        #expect(await probe.waitForPosition { $0 > 1.5 }, "\(probe.log.messages)")
        #expect(player.status == .playing && player.current?.uri == file.absoluteString)
        player.stop()
        #expect(probe.log.messages(atLeast: .warning).isEmpty, "\(probe.log.messages(atLeast: .warning))")
    }
}
