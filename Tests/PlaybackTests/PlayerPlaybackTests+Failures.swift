import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

// `PlayerPlaybackTests` (declared in PlayerPlaybackTests.swift): what fails while playing, and
// what the player does about it: a pipeline that gets stuck, broken files, a queue of them,
// a dead stream.

extension PlayerPlaybackTests {
    /// A state GStreamer never confirms: the transport asked for PLAYING, but the pipeline
    /// stayed paused without a word (as when PAUSED, asked for while it went on to PLAYING by
    /// itself, left it there). Here the request never reaches the pipeline. After a while the
    /// engine asks the pipeline where it is, asks for PLAYING again with one log line, and
    /// clients see Playing once it is true.
    @Test func aStateNeverConfirmedIsAskedForAgain() async throws {
        let files = try await Media.tracks(1, seconds: 10, in: folder)
        let probe = try await PlayerProbe.prerolled(files)
        let engine = probe.player.engine
        let asked = ContinuousClock.now
        _ = engine.decide { $0.play() }  // its setState(.playing) is dropped
        engine.run([])
        #expect(engine.transport.awaitsState && probe.player.status == .paused)
        #expect(await probe.waitFor(.playing, entry: 0), "log: \(probe.log.messages)")
        let waited = ContinuousClock.now - asked
        #expect(waited >= Engine.stateCheckDelay, "asked again only once the delay passed: \(waited)")
        let lines = probe.log.lines(containing: "had not confirmed playing", "it is paused, with no change under way")
        #expect(lines.count == 1, "\(probe.log.messages)")
        #expect(await probe.waitForPosition { $0 >= 0.5 }, "it plays")
        probe.player.stop()
    }

    /// GStreamer not returning from a seek or a teardown (here an element that sleeps three
    /// seconds on every buffer, which a flush or taking its pad down waits for) does not
    /// hold the player: after the limit it goes on in a new pipeline, where the command left
    /// it, and frees the stuck one once GStreamer lets go of it.
    @Test func stuckPipelineIsReplacedAndPlaybackGoesOn() async throws {
        let files = try await Media.tracks(2, seconds: 3, in: folder)
        let probe = try PlayerProbe.make(
            audioSink: "identity sleep-time=3000000 ! fakesink sync=false", stuckLimit: .milliseconds(300))
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0), "log: \(probe.log.messages)")
        // The element sleeps on the second buffer. Nothing announces that its streaming thread
        // has entered the sleep: this margin arranges GStreamer's state for the test, it waits
        // for nothing the test could observe.
        try await Task.sleep(for: .milliseconds(100))

        let asked = ContinuousClock.now
        #expect(player.seek(to: .milliseconds(1500)))
        #expect(ContinuousClock.now - asked < .milliseconds(100), "the seek waited \(ContinuousClock.now - asked)")
        #expect(player.position == .milliseconds(1500), "the position is the seek's target at once")
        #expect(
            await probe.wait(upTo: .seconds(5), poll: .milliseconds(20)) { player.pipelinesReplaced == 1 },
            "the stuck seek is reported")
        #expect(
            player.requestedPosition >= .milliseconds(1500), "the new pipeline loads the track where the seek asked")
        let reloaded = "loading \(MediaSources.displayName(entries[0].uri)) again at 0:01"
        #expect(
            probe.log.lines(containing: reloaded).count == 1, "the log names the track and where: \(probe.log.messages)"
        )
        #expect(
            await probe.wait(upTo: .seconds(20)) {
                player.status == .playing && (player.position ?? .zero) >= .milliseconds(1500)
            },
            "status \(player.status), position \(String(describing: player.position)), log: \(probe.log.messages)")
        #expect(player.current?.id == entries[0].id)

        // Again a margin for the new pipeline's streaming thread to enter the element's sleep.
        try await Task.sleep(for: .milliseconds(100))
        let skipped = ContinuousClock.now
        player.next()
        #expect(ContinuousClock.now - skipped < .milliseconds(100), "Next waited \(ContinuousClock.now - skipped)")
        #expect(
            await probe.wait(upTo: .seconds(5), poll: .milliseconds(20)) { player.pipelinesReplaced == 2 },
            "the stuck teardown is reported")
        #expect(await probe.waitFor(.playing, entry: 1), "log: \(probe.log.messages)")
        #expect(probe.log.lines(containing: "going on in a new pipeline").count == 2, "\(probe.log.messages)")
        #expect(
            await probe.wait(upTo: .seconds(10), poll: .milliseconds(20)) {
                probe.log.lines(containing: "it is freed").count == 2
            }, "\(probe.log.messages)")
        #expect(probe.statuses == [.stopped, .playing], "nothing but Playing was published")
        player.stop()
    }

    @Test func aBrokenFileInTheMiddleIsSkipped() async throws {
        let good = try await Media.tracks(durations: [2, 1], in: folder)
        let broken = try folder.write("broken.flac", data: garbageBytes)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue([good[0], broken, good[1]].map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(await probe.waitFor(.playing, entry: 2, upTo: .seconds(20)), "the entry after the broken one plays")
        #expect(player.entries[1].failure.map { !$0.isEmpty } == true)
        #expect(player.entries[0].failure == nil && player.entries[2].failure == nil)
        #expect(probe.playedIDs == [entries[0].id, entries[2].id])
        #expect(probe.statuses == [.stopped, .playing], "skipped without a stop")
        let skips = probe.log.lines(containing: "skipping", broken.path)
        #expect(skips.count == 1, "one log line names the broken file: \(probe.log.messages)")
        player.stop()
    }

    @Test func aBrokenFileIsSkippedWhenSkippingByHand() async throws {
        let good = try await Media.tracks(2, seconds: 3, in: folder)
        let broken = try folder.write("broken.flac", data: Data())
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue([good[0], broken, good[1]].map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        player.next()
        #expect(await probe.waitFor(.playing, entry: 2))
        player.previous()
        #expect(await probe.waitFor(.playing, entry: 0), "going back skips it too")
        #expect(probe.playedIDs == [entries[0].id, entries[2].id, entries[0].id])
        #expect(player.entries[1].failure != nil)
        #expect(!probe.log.lines(containing: "skipping", broken.path).isEmpty)
        player.stop()
    }

    @Test func aBrokenFirstFileIsSkipped() async throws {
        let good = try await Media.tracks(1, seconds: 2, in: folder)
        let broken = try folder.write("broken.mp3", "not an mp3")
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue([broken.absoluteString, good[0].absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing, entry: 1))
        #expect(probe.playedIDs == [entries[1].id])
        #expect(probe.log.lines(containing: "skipping", broken.path).count == 1, "\(probe.log.messages)")
        player.stop()
    }

    @Test func aQueueOfBrokenFilesStops() async throws {
        let broken = [
            try folder.write("garbage.flac", data: garbageBytes), try folder.write("empty.ogg", data: Data()),
        ]
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.setRepeatMode(.all)  // even when repeating, it gives up
        player.enqueue(broken.map(\.absoluteString) + [folder.uri("missing.flac")])
        #expect(player.play())
        #expect(
            await probe.wait {
                player.entries.allSatisfy { $0.failure != nil } && player.status == .stopped
                    && probe.count(.transport) > 0
            })
        #expect(!probe.statuses.contains(.playing))
        for file in broken {
            #expect(!probe.log.lines(containing: "skipping", file.path).isEmpty, "\(probe.log.messages)")
        }
    }

    /// `ranOut` says why playback stopped: it holds only while stopped for running out, so
    /// that tracks queued later go on from there and never interrupt what plays since.
    @Test func runningOutHoldsOnlyUntilPlaybackGoesOn() async throws {
        let good = try await Media.tracks(1, seconds: 2, in: folder)
        let broken = try folder.write("broken.mp3", "not an mp3")
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue([broken.absoluteString])
        player.play()
        #expect(await probe.wait { player.status == .stopped && player.ranOut }, "set when clients hear of the stop")
        let added = player.enqueue([good[0].absoluteString])
        #expect(player.play(index: player.count - added.count, at: nil))
        #expect(await probe.waitFor(.playing, entry: 1))
        #expect(!player.ranOut, "playing again: it no longer ran out")
        player.stop()
        #expect(!player.ranOut, "stopped by hand")
    }

    /// The next URI fails only once playbin opens it (a stream is not read ahead): the error
    /// arrives while the current track still plays.
    @Test func aDeadStreamAfterALocalTrackIsBlamedOnTheStream() async throws {
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        let dead = "http://127.0.0.1:9/quaver-test-nothing-here.mp3"
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue([files[0].absoluteString, dead, files[1].absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(
            await probe.waitFor(.playing, entry: 2, upTo: .seconds(12)),
            "the entry after the stream plays: \(probe.log.messages)")
        #expect(player.entries[1].failure != nil)
        #expect(!probe.log.lines(containing: "skipping", dead).isEmpty, "\(probe.log.messages)")
        #expect(
            player.entries[0].failure == nil,
            "the local track was fine: \(player.entries[0].failure ?? ""): \(probe.log.messages)")
        #expect(probe.log.lines(containing: "skipping", files[0].path).isEmpty, "\(probe.log.messages)")
        #expect(probe.playedIDs == [entries[0].id, entries[2].id])
        player.stop()
    }
}
