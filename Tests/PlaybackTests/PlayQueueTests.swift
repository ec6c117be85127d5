import Foundation
import SeededRandom
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

@Suite("PlayQueue")
struct PlayQueueTests {
    func entries(_ ids: ClosedRange<UInt64>) -> [Player.Entry] {
        ids.map { Player.Entry(id: $0, uri: "http://radio.invalid/\($0)") }
    }

    @Test("an entry gives back its URI whole, however it splits, and keeps its tags and failure apart")
    func entriesKeepTheirURIs() {
        let uris = [
            "file:///music/A%20B/01%20One.flac", "file:///music/A%20B/02%20Two.flac", "http://radio.invalid/",
            "noslash",
            "file:///music/%E2%99%AA/a-very-long-file-name-that-does-not-fit-in-a-small-string.ogg", "",
        ]
        var prefixes: [Substring: Player.SharedPrefix] = [:]
        var made = uris.enumerated().map { Player.Entry(id: UInt64($0.offset), uri: $0.element, prefixes: &prefixes) }
        #expect(made.map(\.uri) == uris)
        #expect(prefixes.count == 3, "one shared prefix per folder: \(prefixes.keys)")
        made[0].failure = "unreadable"
        #expect(made[0].info == nil && made[0].failure == "unreadable")
        made[0].info = TrackInfo()
        #expect(made[0].info == TrackInfo() && made[0].failure == "unreadable", "setting one keeps the other")
        made[0].failure = nil
        #expect(made[0].info == TrackInfo() && made[0].failure == nil)
        #expect(made[1] == Player.Entry(id: 1, uri: uris[1]), "equal to an entry made on its own")
        // A queue of 100,000 entries holds each inline: it must stay small.
        #expect(MemoryLayout<Player.Entry>.stride <= 40, "\(MemoryLayout<Player.Entry>.stride) bytes")
    }

    @Test("index(of:) is right after any mix of appends, insertions and removals", arguments: [7, 8, 9] as [UInt64])
    func indexFollowsEdits(seed: UInt64) {
        var queue = PlayQueue()
        var reference: [UInt64] = []
        var random = SplitMix(seed: seed)
        var nextID: UInt64 = 1
        for step in 0..<400 {
            let revision = queue.revision
            switch random.next() % 4 {
            case 0, 1:
                let count = Int(random.next() % 5) + 1
                let position =
                    random.next() % 3 == 0 ? reference.count : Int(random.next() % UInt64(reference.count + 1))
                let new = entries(nextID...(nextID + UInt64(count) - 1))
                nextID += UInt64(count)
                queue.insert(new, at: position)
                reference.insert(contentsOf: new.map(\.id), at: position)
            case 2 where !reference.isEmpty:
                let index = Int(random.next() % UInt64(reference.count))
                #expect(queue.remove(at: index).id == reference.remove(at: index))
            default:
                continue
            }
            #expect(queue.revision != revision, "step \(step): every edit changes the revision")
            #expect(queue.entries.map(\.id) == reference)
            // Look up a few ids (each lookup may bring the index up to date).
            for _ in 0..<3 where !reference.isEmpty {
                let index = Int(random.next() % UInt64(reference.count))
                #expect(queue.index(of: reference[index]) == index, "step \(step)")
            }
        }
        for (index, id) in reference.enumerated() { #expect(queue.index(of: id) == index) }
        #expect(queue.index(of: nextID + 1) == nil)
    }

    @Test("a removed id is not found, and ids are checked to stay put")
    func removedIsGone() {
        var queue = PlayQueue()
        queue.insert(entries(1...5), at: 0)
        queue.remove(at: 1)
        #expect(queue.index(of: 2) == nil)
        #expect(!queue.contains(2))
        #expect(queue.index(of: 5) == 3)
        queue.removeAll()
        #expect(queue.isEmpty && queue.index(of: 1) == nil)
    }

    @Test("an entry stays small, so that 100,000 of them fit in a few MiB")
    func entryIsSmall() {
        #expect(MemoryLayout<Player.Entry>.stride <= 48, "\(MemoryLayout<Player.Entry>.stride) bytes")
    }
}

/// Queue edits, loop and shuffle on a stopped player (stream URIs, never loaded).
@Suite("Player: editing the queue")
@MainActor
struct PlayerEditingTests {
    let streams = (1...6).map { "http://radio.invalid/\($0).mp3" }

    @Test("insert after an id, at the start, or nowhere when the id is unknown")
    func insertAfterID() throws {
        let player = try PlayerProbe.make().player
        let first = player.enqueue(Array(streams.prefix(3)))
        let middle = try #require(player.insert([streams[3]], afterID: first[1].id))
        let start = try #require(player.insert([streams[4]], afterID: nil))
        #expect(player.insert([streams[5]], afterID: 9_999) == nil)
        #expect(player.entries.map(\.id) == [start[0].id, first[0].id, first[1].id, middle[0].id, first[2].id])
        #expect(player.current?.id == first[0].id, "inserting before the current entry keeps it current")
        #expect(player.currentIndex == 1)
    }

    @Test("removing entries keeps the current one; removing the current one moves on like Next")
    func remove() throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let added = player.enqueue(Array(streams.prefix(4)))
        #expect(player.remove(id: added[2].id))
        #expect(!player.remove(id: added[2].id), "already gone")
        #expect(player.entries.map(\.id) == [added[0].id, added[1].id, added[3].id])
        #expect(player.current?.id == added[0].id)

        #expect(player.remove(id: added[0].id))
        #expect(player.current?.id == added[1].id, "the next one is current")
        #expect(player.status == .stopped, "stopped stays stopped")
        player.next()
        #expect(player.current?.id == added[3].id)
        #expect(player.remove(id: added[3].id), "the last one, nothing after it")
        #expect(player.status == .stopped)
        #expect(player.current?.id == added[1].id, "the entry left is selected")
        #expect(player.remove(id: added[1].id))
        #expect(player.current == nil && player.currentIndex == nil && player.entries.isEmpty)
    }

    @Test("shuffle plays every entry once per cycle and Previous walks back through what was played")
    func shuffleCycleAndHistory() throws {
        let player = try PlayerProbe.make().player
        let added = player.enqueue(streams)
        player.setShuffle(true)
        var played = [player.current!.id]
        while player.canGoNext {
            player.next()
            played.append(player.current!.id)
        }
        #expect(played.count == streams.count)
        #expect(Set(played) == Set(added.map(\.id)), "every entry once: \(played)")
        #expect(!player.canGoNext, "the cycle is over with repeat off")

        var walkedBack = [player.current!.id]
        while player.canGoPrevious {
            player.previous()
            walkedBack.append(player.current!.id)
        }
        #expect(walkedBack == played.reversed(), "Previous retraces the order played")
        player.next()
        #expect(player.current?.id == played[1], "and Next goes forward along it again")

    }

    @Test("with repeat-all, a new shuffled cycle follows the last one, without the current entry")
    func shuffleRepeatAll() throws {
        let player = try PlayerProbe.make().player
        player.enqueue(streams)
        player.setShuffle(true)
        player.setRepeatMode(.all)
        var first = [player.current!.id]
        for _ in 1..<streams.count {
            player.next()
            first.append(player.current!.id)
        }
        #expect(Set(first).count == streams.count)
        #expect(player.canGoNext, "repeat-all starts a new cycle")
        var second: [UInt64] = []
        for _ in 1..<streams.count {
            player.next()
            second.append(player.current!.id)
        }
        #expect(Set(second).count == streams.count - 1 && !second.contains(first.last!), "\(first) then \(second)")
    }

    @Test("turning shuffle off goes on in queue order from the current entry")
    func shuffleOff() throws {
        let player = try PlayerProbe.make().player
        let added = player.enqueue(streams)
        player.setShuffle(true)
        player.next()
        player.next()
        let current = try #require(player.currentIndex)
        player.setShuffle(false)
        #expect(player.currentIndex == current)
        player.next()
        if current + 1 < added.count {
            #expect(player.current?.id == added[current + 1].id)
        } else {
            #expect(player.current?.id == added[current].id, "at the end with repeat off, Next does nothing")
        }
    }

    @Test("entries added while shuffling join the current cycle")
    func addedWhileShuffling() throws {
        let player = try PlayerProbe.make().player
        player.enqueue(Array(streams.prefix(2)))
        player.setShuffle(true)
        let late = player.enqueue(Array(streams.suffix(3)))
        var played = [player.current!.id]
        while player.canGoNext {
            player.next()
            played.append(player.current!.id)
        }
        #expect(played.count == 5)
        #expect(Set(late.map(\.id)).isSubset(of: Set(played)))
    }
}
