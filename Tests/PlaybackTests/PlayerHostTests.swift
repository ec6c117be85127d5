import Logging
import Testing

@testable import Media
@testable import Playback
@testable import PlaybackEngine
@testable import PlaybackPlayer

/// A player as its parts see it, made up: it keeps a queue and a selection, and records
/// what the conductor and the catalog ask of it.
@MainActor
final class FakeHost: PlayerHost {
    private(set) var queue = PlayQueue()
    private(set) var selection = Selection()
    var selectedIndex: Int? { selection.index }
    private(set) var current: QueueEntry?
    var status = PlaybackStatus.stopped
    var requestedStatus = PlaybackStatus.stopped
    var requestedPosition = Duration.zero
    var isReadingBeforeLoad = false
    /// The commands asked for, in order.
    var asked: [String] = []
    /// The changes announced, in order.
    var announced: [PlaybackChange] = []

    init(uris: [String]) {
        let entries = selection.makeEntries(uris.map { MediaItem(uri: $0) })
        queue.insert(entries, at: 0)
        _ = selection.inserted(entries, at: 0, in: queue)
    }

    func entry(id: UInt64) -> QueueEntry? { queue.index(of: id).map { queue[$0] } }
    func setCurrent(_ entry: QueueEntry?) { current = entry }
    func updateEntry(at index: Int, _ change: (inout QueueEntry) -> Void) { change(&queue[index]) }
    func select(_ index: Int) { selection.index = index }
    func moveSelection(from: UInt64?, to target: Int, forward: Bool) {
        selection.move(from: from, to: target, in: queue, forward: forward)
    }
    func recordMove(from: UInt64, to: UInt64, forward: Bool) {
        selection.recordMove(from: from, to: to, forward: forward)
    }
    func neighbour(of index: Int, forward: Bool, automatic: Bool, allowRepeatOne: Bool) -> Int? {
        selection.neighbour(
            of: index, in: queue, forward: forward, automatic: automatic, allowRepeatOne: allowRepeatOne)
    }
    func load(_ index: Int, at position: Duration?, intent: PlaybackStatus) { asked.append("load \(index)") }
    func pause() { asked.append("pause") }
    func play() -> Bool {
        asked.append("play")
        return true
    }
    func announce(_ change: PlaybackChange) { announced.append(change) }
}

@Suite("the conductor and the catalog change the player only by asking it")
@MainActor
struct PlayerHostTests {
    let log = LogCapture()
    let host = FakeHost(uris: ["file:///music/a.flac", "file:///music/b.flac"])
    let engine: Engine
    let catalog: Catalog

    init() throws {
        engine = try Engine(audioSink: "fakesink", stuckLimit: .seconds(3), logger: log.logger)
        catalog = Catalog(host: host, engine: engine, prefetch: TagPrefetch(artwork: nil), logger: log.logger)
    }

    @Test func aFailureIsRecordedOnceThroughTheHost() {
        catalog.recordFailure("broken", at: 1)
        catalog.recordFailure("broken again", at: 1)
        #expect(host.queue[1].failure == "broken")
        #expect(host.queue[0].failure == nil)
        #expect(host.announced == [.entryInfo(host.queue[1].id)])
        #expect(log.lines(containing: "skipping", "b.flac", "broken").count == 1)
        engine.shutdown(done: nil)
    }

    @Test func onlyTheCurrentEntryIsShownAgainWhenItsTagsCome() {
        host.setCurrent(host.queue[0])
        var info = TrackInfo()
        info.title = "B"
        catalog.record(info, at: 1)
        catalog.showIfCurrent(1)
        #expect(host.current?.id == host.queue[0].id && host.current?.info == nil, "another entry is not shown")
        #expect(host.announced == [.entryInfo(host.queue[1].id)])

        info.title = "A"
        catalog.record(info, at: 0)
        catalog.showIfCurrent(0)
        #expect(host.current?.info?.title == "A")
        #expect(host.announced.suffix(2) == [.entryInfo(host.queue[0].id), .metadata])
        engine.shutdown(done: nil)
    }

    @Test func theEndOfTheQueueIsTheConductorsToTell() {
        let conductor = Conductor(host: host, engine: engine, catalog: catalog, logger: log.logger)
        host.requestedStatus = .playing
        conductor.advance(from: host.queue[0].id)
        #expect(host.asked == ["load 1"], "what follows plays")
        #expect(!conductor.ranOut)
        conductor.advance(from: host.queue[1].id)
        #expect(host.asked == ["load 1"], "nothing follows the last entry")
        #expect(conductor.ranOut, "stopped because the queue ran out")
        engine.shutdown(done: nil)
    }

    @Test func anInterruptionPausesThroughTheHostAndItsEndResumesUnlessSomeoneActed() {
        let conductor = Conductor(host: host, engine: engine, catalog: catalog, logger: log.logger)
        host.requestedStatus = .playing
        conductor.stateRequested(.paused)
        host.requestedStatus = .paused
        conductor.stateRequested(.playing)
        #expect(host.asked == ["pause", "play"])

        host.requestedStatus = .playing
        conductor.stateRequested(.paused)
        conductor.userActed()
        conductor.stateRequested(.playing)
        #expect(host.asked == ["pause", "play", "pause"], "a command since the pause keeps it paused")
        engine.shutdown(done: nil)
    }
}
