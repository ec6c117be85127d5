import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// Playback through a real playbin into `fakesink sync=true` (real time, no sound card).
/// The transport commands here; what fails, in PlayerPlaybackTests+Failures.swift, and
/// where events and commands cross, in PlayerPlaybackTests+Races.swift (one suite, run
/// serially: each test times real playback).
@Suite("Player: real playback", .serialized)
@MainActor
final class PlayerPlaybackTests {
    /// The test's own folder for the media it plays. Swift Testing makes an instance of the
    /// suite for each test and releases it after, which removes the folder.
    let folder: TemporaryFolder

    init() throws { folder = try TemporaryFolder(Test.current?.name ?? "PlayerPlaybackTests") }

    deinit { folder.remove() }

    @Test func playSettlesInPlayingWithTheFirstEntryCurrent() async throws {
        // Long enough that a loaded machine cannot reach the second track before the checks.
        let files = try await Media.tracks(2, seconds: 8, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        #expect(player.play())
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(player.current?.id == entries[0].id)
        #expect(player.current?.info?.title == "Track 1")
        #expect(abs((player.current?.info?.duration.inSeconds ?? 0) - 8) < 0.05)
        #expect(player.pipelineElementNames.contains("fakesink"))
        #expect(await probe.waitForPosition { $0 > 0.1 }, "the position advances while playing")
        #expect(probe.statuses == [.stopped, .playing], "no transient states are reported")
        #expect(probe.log.messages(atLeast: .warning).isEmpty, "\(probe.log.messages)")
        player.stop()
    }

    @Test func pauseHoldsThePositionAndPlayResumes() async throws {
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing), "log: \(probe.log.messages)")
        #expect(await probe.waitForPosition { $0 > 0.2 })

        player.pause()
        #expect(await probe.waitFor(.paused))
        let paused = try #require(player.position).inSeconds
        await probe.elapse(.milliseconds(300))
        let later = try #require(player.position).inSeconds
        #expect(abs(later - paused) < 0.03, "position moved while paused: \(paused) → \(later)")
        #expect(player.status == .paused)

        player.togglePlayPause()
        #expect(await probe.waitFor(.playing))
        #expect(await probe.waitForPosition { $0 > paused + 0.1 }, "playback resumes from where it paused")
        player.togglePlayPause()
        #expect(await probe.waitFor(.paused))
        #expect(probe.statuses == [.stopped, .playing, .paused, .playing, .paused])
        player.stop()
        #expect(player.status == .stopped)
        #expect(player.position == .zero)
    }

    @Test func prerollLoadsPaused() async throws {
        let files = try await Media.tracks(1, seconds: 1, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        #expect(player.preroll())
        #expect(await probe.waitFor(.paused, entry: 0))
        #expect(player.current?.id == entries[0].id)
        #expect((player.position?.inSeconds ?? 1) < 0.05)
        #expect(!probe.statuses.contains(.playing))
        player.stop()
    }

    @Test func seekWhilePausedLandsOnTheTargetAndIsAnnounced() async throws {
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = try await PlayerProbe.prerolled(files)
        let player = probe.player
        let transports = probe.count(.transport)
        #expect(player.seek(to: .milliseconds(2000)))
        #expect(await probe.wait { probe.count(.transport) > transports }, "a completed seek republishes the timing")
        let position = try #require(player.position).inSeconds
        #expect(abs(position - 2) < 0.05, "position after the seek: \(position)")
        #expect(player.status == .paused)

        #expect(player.seek(to: .seconds(-5)), "negative targets clamp to the start")
        #expect(await probe.waitForPosition { $0 < 0.05 })
        player.stop()
    }

    @Test func seekWhilePlaying() async throws {
        let files = try await Media.tracks(1, seconds: 4, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing))
        #expect(player.seek(to: .milliseconds(2500)))
        #expect(await probe.waitForPosition { $0 >= 2.45 }, "the seek lands")
        let position = try #require(player.position).inSeconds
        #expect(position < 3.2, "position after the seek: \(position)")
        #expect(player.status == .playing)
        #expect(!probe.statuses.contains(.paused), "a seek's flush is not reported as a pause")
        player.stop()
    }

    @Test func nextAndPreviousWhilePlaying() async throws {
        let files = try await Media.tracks(3, seconds: 3, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))

        player.next()
        #expect(await probe.waitFor(.playing, entry: 1))
        #expect(player.current?.info?.title == "Track 2")
        #expect((player.position?.inSeconds ?? 9) < 1)
        player.next()
        #expect(await probe.waitFor(.playing, entry: 2))
        player.previous()  // less than 3 s in: the previous entry
        #expect(await probe.waitFor(.playing, entry: 1))
        #expect(probe.playedIDs == [entries[0].id, entries[1].id, entries[2].id, entries[1].id])
        #expect(probe.statuses == [.stopped, .playing], "changing tracks is not reported as a stop or pause")
        player.stop()
    }

    @Test func nextWhilePausedStaysPaused() async throws {
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        let probe = try await PlayerProbe.prerolled(files)
        let player = probe.player
        player.next()
        #expect(await probe.waitFor(.paused, entry: 1))
        #expect(!probe.statuses.contains(.playing))
        player.stop()
    }

    @Test func previousAtTheFirstEntryRestartsIt() async throws {
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = try await PlayerProbe.prerolled(files)
        let player = probe.player
        player.seek(to: .milliseconds(1500))
        #expect(await probe.waitForPosition { abs($0 - 1.5) < 0.05 })
        player.previous()
        #expect(await probe.waitForPosition { $0 < 0.05 })
        #expect(player.currentIndex == 0)
        player.stop()
    }

    @Test func openQueuesAfterTheCurrentEntryAndPlaysIt() async throws {
        let files = try await Media.tracks(3, seconds: 2, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue([files[0], files[2]].map(\.absoluteString))
        #expect(player.open([files[1].absoluteString]))
        #expect(player.entries.map(\.uri) == files.map(\.absoluteString))
        #expect(await probe.waitFor(.playing, entry: 1))
        #expect(player.current?.info?.title == "Track 2")
        player.stop()
    }

    @Test func rateOneAndAHalfPlaysFaster() async throws {
        let files = try await Media.tracks(1, seconds: 4, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.setRate(1.5)  // before playing: applied by a seek after the preroll
        player.play()
        #expect(await probe.waitFor(.playing))
        #expect(player.rate == 1.5)
        #expect(await probe.waitForPosition { $0 > 0.1 })
        let clock = ContinuousClock()
        let start = clock.now
        let first = try #require(player.position).inSeconds
        await probe.elapse(.milliseconds(600))
        let second = try #require(player.position).inSeconds
        let speed = (second - first) / (clock.now - start).inSeconds
        #expect(speed > 1.25 && speed < 1.75, "measured speed \(speed)")

        // Changing the rate while playing keeps playing and republishes the timing.
        let transports = probe.count(.transport)
        player.setRate(1)
        #expect(await probe.wait { probe.count(.transport) > transports })
        #expect(player.status == .playing)
        #expect(!probe.statuses.contains(.paused))
        player.setRate(9)
        #expect(player.rate == 2)
        player.stop()
    }

    @Test
    func aFileWithVideoPlaysAudioOnly() async throws {
        let file = folder.path("clip.ogv")
        try await Media.videoWithAudio(file, seconds: 2)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue([file.absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing))
        #expect(player.current?.info?.videoStreams == 1)
        let names = player.pipelineElementNames
        #expect(names.contains("vorbisdec"), "\(names)")
        #expect(!names.contains { $0.contains("video") }, "no video sink or converter: \(names)")
        #expect(!names.contains("theoradec"), "no video decoder: \(names)")
        player.stop()
    }
}
