import Foundation
import SeededRandom
import TestKit
import Testing

@testable import Playback

/// The queue logic, with stream URIs that are never loaded (the player stays stopped).
@Suite("Player: queue while stopped")
@MainActor
struct PlayerQueueTests {
    let streams = (1...5).map { "http://radio.invalid/\($0).mp3" }

    @Test func emptyQueueHasNothingToDo() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        #expect(!player.play())
        #expect(!player.preroll())
        #expect(!player.seek(to: .seconds(1)))
        #expect(!player.open([]))
        player.next()
        player.previous()
        player.pause()
        #expect(player.status == .stopped)
        #expect(player.current == nil)
        #expect(player.currentIndex == nil)
        #expect(player.position == .zero)
        #expect(!player.canGoNext && !player.canGoPrevious)
        #expect(!player.goTo(id: 42))
    }

    @Test func enqueueAssignsFreshIdsAndSelectsTheFirst() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let added = player.enqueue([streams[0], streams[1], streams[0]])
        #expect(added.map(\.uri) == [streams[0], streams[1], streams[0]])
        #expect(Set(added.map(\.id)).count == 3, "the same URI queued twice gets two ids")
        #expect(player.entries == added)
        #expect(player.currentIndex == 0)
        #expect(player.current?.id == added[0].id, "a stream is current at once (nothing to read ahead)")
        #expect(probe.count(.queue) == 1)

        let more = player.enqueue([streams[2]])
        #expect(more[0].id > added.map(\.id).max()!)
        #expect(player.entries.map(\.uri) == [streams[0], streams[1], streams[0], streams[2]])
        #expect(player.currentIndex == 0)
        #expect(probe.count(.queue) == 2)
        #expect(probe.count(.options) == 0)
        #expect(player.status == .stopped)
    }

    @Test func enqueueAfterAnIndexInsertsThere() throws {
        let player = try PlayerProbe.make().player
        player.enqueue([streams[0], streams[1]])
        player.next()
        #expect(player.currentIndex == 1)
        player.enqueue([streams[2], streams[3]], after: 0)
        #expect(player.entries.map(\.uri) == [streams[0], streams[2], streams[3], streams[1]])
        #expect(player.currentIndex == 3, "the selection follows its entry")
        #expect(player.current?.uri == streams[1])
        player.enqueue([streams[4]], after: 99)
        #expect(player.entries.last?.uri == streams[4])
    }

    @Test func nextAndPreviousMoveCurrentWithoutPlaying() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(Array(streams.prefix(3)))
        #expect(!player.canGoPrevious && player.canGoNext)

        player.next()
        #expect(player.current?.id == entries[1].id)
        #expect(probe.count(.transport) == 1)
        player.next()
        #expect(player.current?.id == entries[2].id)
        #expect(!player.canGoNext && player.canGoPrevious)
        player.next()  // at the end: nothing
        #expect(player.current?.id == entries[2].id)
        player.previous()
        #expect(player.current?.id == entries[1].id)
        player.previous()
        player.previous()  // at the start: nothing
        #expect(player.current?.id == entries[0].id)
        #expect(player.goTo(id: entries[2].id))
        #expect(player.current?.id == entries[2].id)
        #expect(player.status == .stopped)
        #expect(probe.statuses == [.stopped])
        #expect(player.position == .zero)
    }

    /// Skipping with Shuffle on for hours must not grow the history Previous walks back
    /// through for ever: it keeps the last `shuffleHistoryLimit` (up to twice that).
    @Test func shuffleHistoryIsBounded() throws {
        let player = try PlayerProbe.make().player
        player.enqueue(streams)
        player.setShuffle(true)
        player.setRepeatMode(.all)
        var visited: [UInt64] = []
        for _ in 0..<(3 * Player.shuffleHistoryLimit) {
            visited.append(try #require(player.current?.id))
            player.next()
        }
        #expect(player.shuffleHistory.count <= 2 * Player.shuffleHistoryLimit)
        #expect(player.shuffleHistory.count >= Player.shuffleHistoryLimit)
        #expect(player.shuffleHistory.suffix(10) == visited.suffix(10)[...], "the most recent are kept, in order")
        player.previous()
        #expect(player.current?.id == visited.last, "Previous still goes back")
    }

    /// The MPRIS spec: CanGoNext says whether Next can be expected to change the current
    /// track. A queue of one on repeat-all has nothing to change to.
    @Test func aQueueOfOneOnRepeatAllCannotGoNextOrPrevious() throws {
        let player = try PlayerProbe.make().player
        let only = player.enqueue([streams[0]])
        for mode in Player.RepeatMode.allCases {
            player.setRepeatMode(mode)
            #expect(!player.canGoNext && !player.canGoPrevious, "\(mode)")
            player.next()
            player.previous()
            #expect(player.current?.id == only[0].id)
        }
    }

    /// Random queues, modes and moves: CanGoNext and CanGoPrevious are true exactly when Next
    /// and Previous change the selection.
    @Test("Can* is true exactly when the command changes the track", arguments: [11, 12, 13, 14] as [UInt64])
    func canFlagsMatchWhatTheCommandsDo(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let player = try PlayerProbe.make().player
        for step in 0..<400 {
            switch random.int(0..<8) {
            case 0: player.enqueue([streams[random.int(0..<streams.count)]])
            case 1: player.setRepeatMode(random.pick(Player.RepeatMode.allCases))
            case 2: player.setShuffle(random.chance(0.5))
            case 3: if let entry = player.entries.randomElement(using: &random) { player.remove(id: entry.id) }
            case 4, 5:
                let before = player.currentIndex.map { player.entries[$0].id }
                let can = player.canGoNext
                player.next()
                #expect(can == (player.currentIndex.map { player.entries[$0].id } != before), "step \(step): Next")
            default:
                let before = player.currentIndex.map { player.entries[$0].id }
                let can = player.canGoPrevious
                player.previous()
                #expect(can == (player.currentIndex.map { player.entries[$0].id } != before), "step \(step): Previous")
            }
        }
    }

    @Test func repeatAllWrapsAndRepeatOneDoesNotTrapManualSkips() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(Array(streams.prefix(3)))
        player.setRepeatMode(.all)
        #expect(player.repeatMode == .all)
        #expect(probe.count(.options) == 1)
        player.setRepeatMode(.all)
        #expect(probe.count(.options) == 1, "no change, no notification")
        #expect(player.canGoPrevious, "wraps to the end")
        player.previous()
        #expect(player.current?.id == entries[2].id)
        player.next()
        #expect(player.current?.id == entries[0].id)

        player.setRepeatMode(.one)
        player.next()
        #expect(player.current?.id == entries[1].id, "Next skips even in repeat-one")
        player.setRepeatMode(.off)
        player.next()
        #expect(!player.canGoNext)
    }

    @Test func shuffleVisitsEveryEntryOnceStartingWithTheCurrent() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(streams)
        player.next()
        let start = player.current!.id
        player.setShuffle(true)
        #expect(player.shuffle)
        #expect(probe.count(.options) == 1)
        #expect(player.current?.id == start)
        #expect(!player.canGoPrevious, "the current entry comes first in the shuffled order")
        var visited = [start]
        while player.canGoNext {
            player.next()
            visited.append(player.current!.id)
        }
        #expect(visited.count == entries.count)
        #expect(Set(visited) == Set(entries.map(\.id)))

        // Entries queued while shuffling join the order.
        let late = player.enqueue(["http://radio.invalid/late.mp3"])
        #expect(player.canGoNext)
        player.next()
        #expect(player.current?.id == late[0].id)

        player.setShuffle(false)
        #expect(!player.shuffle)
        #expect(player.currentIndex == player.entries.count - 1)
        #expect(!player.canGoNext)
    }

    @Test func volumeIsClampedAndAnnouncedOnlyWhenItChanges() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        #expect(player.volume == 1)
        player.setVolume(0.5)
        #expect(player.volume == 0.5)
        #expect(probe.count(.volume) == 1)
        player.setVolume(0.5)
        #expect(probe.count(.volume) == 1)
        player.setVolume(1.7)
        #expect(player.volume == 1)
        player.setVolume(-3)
        #expect(player.volume == 0)
        player.setVolume(.nan)
        #expect((0...1).contains(player.volume))
        player.setVolume(-.infinity)
        #expect((0...1).contains(player.volume))
        player.setVolume(.infinity)
        #expect((0...1).contains(player.volume))
        #expect(probe.count(.volume) >= 3)
    }

    @Test func rateIsClampedToTheSupportedRange() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        #expect(player.supportedRates == 0.5...2.0)
        #expect(player.rate == 1)
        player.setRate(1.5)
        #expect(player.rate == 1.5)
        #expect(probe.count(.transport) == 1)
        player.setRate(1.5)
        #expect(probe.count(.transport) == 1, "no change, no notification")
        player.setRate(3)
        #expect(player.rate == 2)
        player.setRate(0.1)
        #expect(player.rate == 0.5)
        player.setRate(0)
        #expect(player.rate == 0.5)
        player.setRate(-2)
        #expect(player.rate == 0.5)
        player.setRate(.infinity)
        #expect(player.rate == 2)

        let narrow = try PlayerProbe.make(supportedRates: 1...1).player
        narrow.setRate(1.5)
        #expect(narrow.rate == 1)
    }

    @Test func rateNaNIsRejected() throws {
        let player = try PlayerProbe.make().player
        player.setRate(1.25)
        player.setRate(.nan)
        #expect(player.supportedRates.contains(player.rate), "rate is \(player.rate)")
    }

    @Test func invalidSinkIsAMediaError() {
        #expect(throws: MediaError.self) {
            _ = try Player(audioSink: "nosuchelement-quaver", logger: LogCapture().logger)
        }
    }
}

/// Playback through a real playbin into `fakesink sync=true` (real time, no sound card).
@Suite("Player: real playback", .serialized)
@MainActor
struct PlayerPlaybackTests {
    @Test func playSettlesInPlayingWithTheFirstEntryCurrent() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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

    /// GStreamer not returning from a seek or a teardown (here an element that sleeps three
    /// seconds on every buffer, which a flush or taking its pad down waits for) does not
    /// hold the player: after the limit it goes on in a new pipeline, where the command left
    /// it, and frees the stuck one once GStreamer lets go of it.
    @Test func stuckPipelineIsReplacedAndPlaybackGoesOn() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 3, in: folder)
        let probe = try PlayerProbe.make(audioSink: "identity sleep-time=3000000 ! fakesink sync=false", stuckLimit: .milliseconds(300))
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0), "log: \(probe.log.messages)")
        try await Task.sleep(for: .milliseconds(100))  // the element sleeps on the second buffer

        let asked = ContinuousClock.now
        #expect(player.seek(to: .milliseconds(1500)))
        #expect(ContinuousClock.now - asked < .milliseconds(100), "the seek waited \(ContinuousClock.now - asked)")
        #expect(player.position == .milliseconds(1500), "the position is the seek's target at once")
        #expect(await probe.wait(upTo: .seconds(5), poll: .milliseconds(20)) { player.pipelinesReplaced == 1 }, "the stuck seek is reported")
        #expect(player.requestedPosition >= .milliseconds(1500), "the new pipeline loads the track where the seek asked")
        let reloaded = "loading \(MediaSources.displayName(entries[0].uri)) again at 0:01"
        #expect(probe.log.lines(containing: reloaded).count == 1, "the log names the track and where: \(probe.log.messages)")
        #expect(await probe.wait(upTo: .seconds(20)) { player.status == .playing && (player.position ?? .zero) >= .milliseconds(1500) },
                "status \(player.status), position \(String(describing: player.position)), log: \(probe.log.messages)")
        #expect(player.current?.id == entries[0].id)

        try await Task.sleep(for: .milliseconds(100))
        let skipped = ContinuousClock.now
        player.next()
        #expect(ContinuousClock.now - skipped < .milliseconds(100), "Next waited \(ContinuousClock.now - skipped)")
        #expect(await probe.wait(upTo: .seconds(5), poll: .milliseconds(20)) { player.pipelinesReplaced == 2 }, "the stuck teardown is reported")
        #expect(await probe.waitFor(.playing, entry: 1), "log: \(probe.log.messages)")
        #expect(probe.log.lines(containing: "going on in a new pipeline").count == 2, "\(probe.log.messages)")
        #expect(await probe.wait(upTo: .seconds(10), poll: .milliseconds(20)) { probe.log.lines(containing: "it is freed").count == 2 }, "\(probe.log.messages)")
        #expect(probe.statuses == [.stopped, .playing], "nothing but Playing was published")
        player.stop()
    }

    @Test func pauseHoldsThePositionAndPlayResumes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.preroll()
        #expect(await probe.waitFor(.paused))
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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

    /// Next to entries whose tags are read first, while the start of an earlier Next waits
    /// for a preroll: once that preroll ended, the waiting start used to run and take the
    /// selection back to its entry, and the Next after it moved on from there (ten quick
    /// Nexts ended two or three tracks short). The selection is only ever what the
    /// commands made it.
    @Test func nextsDuringAPrerollAndATagReadKeepTheSelection() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(12, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        // Entries 0 to 4 are read: their starts wait for the preroll in progress. The rest
        // are read when they are loaded.
        player.readInfoAhead(entries[0...4].map(\.id))
        #expect(await probe.wait(upTo: .seconds(15), poll: .milliseconds(20)) { entries[0...4].allSatisfy { player.entry(id: $0.id)?.info != nil } })
        #expect(entries[5...].allSatisfy { player.entry(id: $0.id)?.info == nil })

        player.play()
        // Starts that wait for the first preroll, then loads that wait for tag reads (one
        // at a time: the last one lands after the preroll has ended).
        for index in 1...8 { player.next(); #expect(player.currentIndex == index) }
        var expected = 8
        var rewound: [String] = []
        for wait in [300, 30, 30] {
            // Between Nexts, watch the selection on every turn of the main queue.
            let until = ContinuousClock.now + .milliseconds(wait)
            while ContinuousClock.now < until {
                try await Task.sleep(for: .milliseconds(1))
                if player.currentIndex != expected { rewound.append("\(player.currentIndex ?? -1) after Next to \(expected)") }
            }
            guard expected < 10 else { break }
            player.next()
            expected += 1
        }
        #expect(rewound.isEmpty, "the selection moved without a command: \(rewound.prefix(5))")
        #expect(await probe.waitFor(.playing, entry: 10), "ten Nexts end on entry 10, not \(player.current.flatMap { c in entries.firstIndex { $0.id == c.id } } ?? -1)")
        player.stop()
    }

    /// The loaded track fails while the selection has moved on to tracks whose tags are
    /// being read: the failed one is marked, the selection stays (it used to move on from
    /// the failed track), and its further errors do not stop playback.
    @Test func aTrackOnItsWayOutFailsWithoutMovingTheSelection() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(4, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.readInfoAhead([entries[0].id])
        #expect(await probe.wait(upTo: .seconds(15), poll: .milliseconds(20)) { player.entry(id: entries[0].id)?.info != nil })
        // Read as a good track, then replaced: it fails in the pipeline, not before.
        try garbageBytes.write(to: files[0])

        player.play()
        player.next()
        player.next()
        #expect(player.currentIndex == 2)
        #expect(await probe.waitFor(.playing, entry: 2, upTo: .seconds(20)), "entry 2 plays; the current one is \(player.currentIndex ?? -1)")
        #expect(probe.playedIDs == [entries[2].id], "only the selected entry plays: \(probe.playedIDs) of \(entries.map(\.id))")
        #expect(player.entry(id: entries[0].id)?.failure != nil, "the track that failed is marked")
        #expect(player.entry(id: entries[1].id)?.failure == nil)
        #expect(probe.statuses == [.stopped, .playing], "\(probe.statuses)")
        #expect(probe.log.lines(containing: "playback error").isEmpty, "\(probe.log.messages)")
        player.stop()
    }

    @Test func nextWhilePausedStaysPaused() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.preroll()
        #expect(await probe.waitFor(.paused, entry: 0))
        player.next()
        #expect(await probe.waitFor(.paused, entry: 1))
        #expect(!probe.statuses.contains(.playing))
        player.stop()
    }

    @Test func previousAtTheFirstEntryRestartsIt() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(files.map(\.absoluteString))
        player.preroll()
        #expect(await probe.waitFor(.paused))
        player.seek(to: .milliseconds(1500))
        #expect(await probe.waitForPosition { abs($0 - 1.5) < 0.05 })
        player.previous()
        #expect(await probe.waitForPosition { $0 < 0.05 })
        #expect(player.currentIndex == 0)
        player.stop()
    }

    // The first track lasts 2 s: a shorter one trips the stream-start race tested below.
    @Test func theQueueEndsStopped() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(durations: [2, 1], in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(await probe.wait(upTo: .seconds(6)) { probe.statuses.last == .stopped && probe.statuses.count > 2 })
        #expect(probe.playedIDs == entries.map(\.id), "both tracks played, in order")
        #expect(probe.statuses == [.stopped, .playing, .stopped], "the switch between tracks is gapless")
        #expect(player.status == .stopped)
        #expect(player.current?.id == entries[1].id)
        #expect(player.current?.info?.title == "Track 2")
        #expect(player.position == .zero)
        #expect(player.entries.allSatisfy { $0.failure == nil }, "\(player.entries.map { $0.failure ?? "-" }) \(probe.log.messages)")

        // Play again starts over from the selected (last) entry.
        #expect(player.play())
        #expect(await probe.waitFor(.playing, entry: 1))
        player.stop()
    }

    @Test func aBrokenFileInTheMiddleIsSkipped() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let broken = [
            try folder.write("garbage.flac", data: garbageBytes), try folder.write("empty.ogg", data: Data()),
        ]
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.setRepeatMode(.all)  // even when repeating, it gives up
        player.enqueue(broken.map(\.absoluteString) + [folder.uri("missing.flac")])
        #expect(player.play())
        #expect(await probe.wait { player.entries.allSatisfy { $0.failure != nil } && player.status == .stopped && probe.count(.transport) > 0 })
        #expect(!probe.statuses.contains(.playing))
        for file in broken {
            #expect(!probe.log.lines(containing: "skipping", file.path).isEmpty, "\(probe.log.messages)")
        }
    }

    /// `ranOut` says why playback stopped: it holds only while stopped for running out, so
    /// that tracks queued later go on from there and never interrupt what plays since.
    @Test func runningOutHoldsOnlyUntilPlaybackGoesOn() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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

    /// playbin asks for the next URI (about-to-finish) as soon as it has read a file, which for
    /// a short file is during its preroll. If the main actor is busy then, the first stream's
    /// STREAM_START is handled only after the next URI was handed over, and is taken for the
    /// gapless switch: the next entry is reported while the first one plays.
    @Test func aShortFirstTrackIsReportedWhileItPlaysEvenWhenTheMainActorIsBusy() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 1, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        #expect(await probe.wait { player.current?.info != nil }, "the first entry is read ahead")
        player.play()  // its tags are known: the pipeline starts now
        keepMainThreadBusy(seconds: 0.1)  // simulated load (not a wait for an event); 5 ms suffice here
        #expect(await probe.waitFor(.playing))
        #expect(await probe.wait(upTo: .seconds(20)) { player.status == .stopped }, "the queue still ends stopped")
        #expect(player.current?.id == entries[1].id)
        #expect(probe.playedIDs == entries.map(\.id), "the first track was never reported")
        #expect(probe.statuses == [.stopped, .playing, .stopped])
        #expect(probe.playedIDs.last == entries[1].id)
    }

    /// The next URI fails only once playbin opens it (a stream is not read ahead): the error
    /// arrives while the current track still plays.
    @Test func aDeadStreamAfterALocalTrackIsBlamedOnTheStream() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        let dead = "http://127.0.0.1:9/quaver-test-nothing-here.mp3"
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue([files[0].absoluteString, dead, files[1].absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(await probe.waitFor(.playing, entry: 2, upTo: .seconds(12)), "the entry after the stream plays: \(probe.log.messages)")
        #expect(player.entries[1].failure != nil)
        #expect(!probe.log.lines(containing: "skipping", dead).isEmpty, "\(probe.log.messages)")
        #expect(player.entries[0].failure == nil, "the local track was fine: \(player.entries[0].failure ?? ""): \(probe.log.messages)")
        #expect(probe.log.lines(containing: "skipping", files[0].path).isEmpty, "\(probe.log.messages)")
        #expect(probe.playedIDs == [entries[0].id, entries[2].id])
        player.stop()
    }

    @Test func openQueuesAfterTheCurrentEntryAndPlaysIt() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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
        let folder = try TemporaryFolder()
        defer { folder.remove() }
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

/// Blocks the calling (main) thread, as a burst of work would.
private func keepMainThreadBusy(seconds: Double) {
    Thread.sleep(forTimeInterval: seconds)
}
