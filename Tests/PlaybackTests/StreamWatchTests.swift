import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// The stream watch's decisions, with made-up instants and byte counts: no server, no timer.
@Suite("Stream watch")
struct StreamWatchTests {
    let start = ContinuousClock.now

    func watch(armedAt offset: Duration = .zero, bytes: UInt64 = 100) -> StreamWatch {
        var watch = StreamWatch(stallLimit: .seconds(10))
        watch.arm(7, bytes: bytes, now: start + offset)
        return watch
    }

    @Test func aServerThatSendsNothingStalls() throws {
        let watch = watch()
        let wait = try #require(watch.wait)
        let later = start + .seconds(10)
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: false), playing: true, bytes: 100, now: later)
                == .stalled(reason: "no audio from the server within 10 s"))
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: true), playing: true, bytes: 100, now: later)
                == .stalled(reason: "the stream stalled: nothing from the server for 10 s"))
    }

    @Test func bytesSinceTheWatchWasArmedMeanWaitingAgainFromTheSameStart() throws {
        let watch = watch()
        let wait = try #require(watch.wait)
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: true), playing: true, bytes: 101, now: start + .seconds(10))
                == .waitAgain(since: start))
        #expect(
            watch.verdict(
                on: wait, at: .handedOver(previousPlays: false), playing: true, bytes: 101, now: start + .seconds(10))
                == .waitAgain(since: start), "a handed-over stream that receives is waited for too")
    }

    @Test func aStreamThatSendsButNeverStartsIsSkippedAtTheStartLimit() throws {
        let watch = watch()
        let wait = try #require(watch.wait)
        #expect(watch.startLimit == .seconds(30))
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: false), playing: true, bytes: 500, now: start + .seconds(29))
                == .waitAgain(since: start))
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: false), playing: true, bytes: 500, now: start + .seconds(30))
                == .stalled(reason: "the stream did not start within 30 s, though the server sends"))
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: true), playing: true, bytes: 500, now: start + .seconds(300))
                == .waitAgain(since: start),
            "a stream that plays is waited for as long as data comes")
    }

    @Test func rearmingKeepsWhenTheWaitBegan() throws {
        var watch = watch()
        watch.arm(7, bytes: 900, now: start + .seconds(5))
        #expect(watch.wait == .init(entry: 7, began: start, bytes: 900))
        watch.arm(7, bytes: 950, now: start + .seconds(6), since: start + .seconds(2))
        #expect(watch.wait?.began == start + .seconds(2))
        watch.disarm()
        watch.arm(8, bytes: 0, now: start + .seconds(8))
        #expect(watch.wait == .init(entry: 8, began: start + .seconds(8), bytes: 0), "a new wait starts now")
    }

    @Test func aFullBufferBeforeTheStartCountsAsSending() throws {
        var watch = watch()
        #expect(after { watch.buffering(100, isSettled: false) } == .arm)
        let wait = try #require(watch.wait)
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: false), playing: true, bytes: 100, now: start + .seconds(10))
                == .waitAgain(since: start))
        #expect(
            watch.verdict(
                on: wait, at: .handedOver(previousPlays: false), playing: true, bytes: 100, now: start + .seconds(10))
                == .stalled(reason: "no audio from the server within 10 s"),
            "the level is the loaded stream's, not a handed-over one's")
    }

    @Test func bufferingLevelsArmAndDisarm() {
        var watch = StreamWatch()
        #expect(after { watch.buffering(0, isSettled: true) } == .arm, "the level drops: the wait starts")
        watch.arm(1, bytes: 0, now: start)
        #expect(after { watch.buffering(0, isSettled: true) } == .keep, "no data came")
        #expect(after { watch.buffering(40, isSettled: true) } == .arm, "data came")
        watch.arm(1, bytes: 0, now: start)
        #expect(after { watch.buffering(30, isSettled: true) } == .keep)
        #expect(after { watch.buffering(100, isSettled: true) } == .disarm, "full once it has played")
        watch.streamBegan()
        #expect(watch.bufferingPercent == -1)
    }

    @Test func aPausedOrGoneStreamIsLeftBeAndAHandedOverOneWaitsForItsTurn() throws {
        let watch = watch()
        let wait = try #require(watch.wait)
        let later = start + .seconds(10)
        #expect(watch.verdict(on: wait, at: .elsewhere, playing: true, bytes: 100, now: later) == .leave)
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: true), playing: false, bytes: 100, now: later) == .leave,
            "paused by hand")
        #expect(
            watch.verdict(on: wait, at: .loaded(isSettled: false), playing: false, bytes: 100, now: later)
                == .stalled(reason: "no audio from the server within 10 s"), "a stream loaded paused must still start")
        #expect(
            watch.verdict(on: wait, at: .handedOver(previousPlays: false), playing: false, bytes: 100, now: later)
                == .leave)
        #expect(
            watch.verdict(on: wait, at: .handedOver(previousPlays: true), playing: true, bytes: 100, now: later)
                == .waitAgain(since: nil),
            "the wait starts at the end of the track before it")
    }

    @Test func limitsAreNamedAsTheLogSaysThem() {
        #expect(StreamWatch.seconds(.seconds(10)) == "10 s")
        #expect(StreamWatch.seconds(.milliseconds(1500)) == "1.5 s")
    }
}
