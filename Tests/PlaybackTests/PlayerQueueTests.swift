import SeededRandom
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

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
        #expect(!player.open([String]()))
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
