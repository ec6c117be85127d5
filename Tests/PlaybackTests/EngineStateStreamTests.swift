import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The network streams' decisions without GStreamer: buffering and a stall limit that passed.
@Suite("Engine state: network streams")
struct EngineStateStreamTests {
    typealias Load = Transport.Load
    static let t0 = ContinuousClock.now
    static let radio = Load(entry: 5, uri: "http://example.org/radio")

    /// Only the loaded stream that should play pauses for its buffer, and only once it plays.
    @Test func onlyALoadedStreamThatShouldPlayPausesForItsBuffer() {
        var file = EngineStateTests.playing()
        #expect(file.streamBuffering(20).isEmpty, "a file plays on")
        var paused = EngineStateTests.playing(Self.radio)
        _ = paused.transport.pause()
        #expect(paused.streamBuffering(20).isEmpty, "not asked to play")
        var stream = EngineStateTests.playing(Self.radio)
        let low = stream.streamBuffering(20)
        #expect(
            low == [
                .armStreamWatch(5, since: nil),
                .log(.debug, "buffering http://example.org/radio (20%); paused until it is full"),
                .transport(.setState(.paused)), .followTransport(timingChanged: false),
            ])
        let lower = stream.streamBuffering(10)
        #expect(lower == [.armStreamWatch(5, since: nil)] + EngineState.moved([]), "armed already, but none waits yet")
        let armed = stream.armStreamWatch(5, bytes: 0, now: Self.t0, since: nil)
        #expect(armed == [.startStreamTimer(after: stream.streamWatch.stallLimit)])
        let same = stream.streamBuffering(10)
        #expect(same == EngineState.moved([]), "no data came")
        let full = stream.streamBuffering(100)
        #expect(
            full.first == .stopStreamTimer && full.transportActions == [.setState(.playing)],
            "it played: the watch ends")
    }

    /// The limit passed: a loaded stream that sent nothing is taken down and skipped; a
    /// handed-over one is the owner's; one that sent is waited for again.
    @Test func aStalledStreamIsTakenDownOrLeftToTheOwner() {
        var stream = EngineStateTests.playing(Self.radio)
        _ = stream.armStreamWatch(5, bytes: 100, now: Self.t0, since: nil)
        let wait = stream.streamWatch.wait!
        let sent = stream.streamStalled(wait, at: .loaded(isSettled: true), bytes: 200, now: Self.t0)
        #expect(sent == [.stopStreamTimer, .armStreamWatch(5, since: Self.t0)])
        #expect(stream.streamWatch.wait == nil, "the wait ended; the engine arms it again")
        let silent = stream.streamStalled(wait, at: .loaded(isSettled: true), bytes: 100, now: Self.t0)
        let reason = "the stream stalled: nothing from the server for 10 s"
        #expect(silent == [.stopStreamTimer] + EngineState.moved([.unload(fresh: true), .skip(5, reason: reason)]))
        var before = EngineStateTests.playing()
        let handedOver = before.streamStalled(wait, at: .handedOver(previousPlays: false), bytes: 100, now: Self.t0)
        let unheard = "no audio from the server within 10 s"
        #expect(
            handedOver == [.stopStreamTimer] + EngineState.moved([]) + [.report(.handOverStalled(5, reason: unheard))])
        #expect(before.transport.pipelineFailed, "the next teardown goes to NULL")
        let gone = before.streamStalled(wait, at: .elsewhere, bytes: 100, now: Self.t0)
        #expect(gone == [.stopStreamTimer])
    }
}

extension [EngineState.Action] {
    /// The transport's actions among these, in order.
    var transportActions: [Transport.Action] {
        compactMap { if case .transport(let action) = $0 { action } else { nil } }
    }
}
