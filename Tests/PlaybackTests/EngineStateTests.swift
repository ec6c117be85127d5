import Testing

@testable import Playback
@testable import PlaybackEngine

/// The engine's decisions without GStreamer: each test drives ``EngineState`` through the
/// steps the engine feeds it, with instants handed in.
@Suite("Engine state: whose report it is, and what the clock takes")
struct EngineStateTests {
    typealias Load = Transport.Load
    static let t0 = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .seconds(seconds) }
    static let a = Load(entry: 1, uri: "file:///a.flac")
    static let b = Load(entry: 2, uri: "file:///b.flac")
    static let stream = Load(entry: 3, uri: "http://example.org/live")

    /// A state that loaded `load` (started at `now`, its own STREAM_START heard) and plays it.
    static func playing(_ load: Load = a, now: ContinuousClock.Instant = t0) -> EngineState {
        var state = EngineState()
        _ = state.pipelineMade()
        _ = state.transport.load(load, intent: .playing)
        _ = state.loadStarted(load, isLocal: MediaSources.isLocal(load.uri), now: now)
        _ = state.streamStarted()
        _ = state.stateReached(.playing, position: .zero, at: now)
        return state
    }

    static func facts(at position: Duration, _ current: Pipeline.State, now: ContinuousClock.Instant) -> Pipeline.Facts
    {
        var facts = Pipeline.Facts()
        facts.at = now
        facts.position = position
        facts.current = current
        facts.duration = .seconds(100)
        return facts
    }

    /// Whose STREAM_START each one is, in the order a session hears them.
    @Test func theFirstStreamStartOfALoadIsItsOwnTheNextAreSwitches() {
        var state = EngineState()
        let alone = state.streamStarted()
        #expect(alone, "with nothing loaded, only a switch can start a stream")
        let table: [(step: String, run: (inout EngineState) -> Void, switches: Bool)] = [
            ("load a", { _ = $0.loadStarted(Self.a, isLocal: true, now: Self.t0) }, false),
            ("a plays on into what was handed over", { _ in }, true),
            ("and into the track after", { _ in }, true),
            ("unload", { $0.unloaded(now: Self.t0) }, true),
            ("load b", { _ = $0.loadStarted(Self.b, isLocal: true, now: Self.t0) }, false),
            ("load a again", { _ = $0.loadStarted(Self.a, isLocal: true, now: Self.t0) }, false),
            ("a's stream after its own", { _ in }, true),
        ]
        for row in table {
            row.run(&state)
            let switches = state.streamStarted()
            #expect(switches == row.switches, "\(row.step)")
        }
    }

    /// A report is heard only from the pipeline in use, about the load in progress.
    @Test func reportsOfAReplacedPipelineOrAStreamTakenDownAreNotHeard() {
        var state = EngineState()
        let first = state.pipelineMade()
        _ = state.loadStarted(Self.a, isLocal: true, now: Self.t0)
        let load = state.loadNumber
        #expect(state.hears(pipeline: first, load: load))
        state.unloaded(now: Self.t0)
        #expect(!state.hears(pipeline: first, load: load), "taken down since")
        #expect(state.hears(pipeline: first, load: state.loadNumber))
        state.pipelineReplaced()
        let second = state.pipelineMade()
        #expect(state.pipelinesReplaced == 1)
        #expect(!state.hears(pipeline: first), "the stuck pipeline's")
        #expect(state.hears(pipeline: second, load: state.loadNumber))
        #expect(!state.hears(pipeline: second, load: load))
    }

    /// Two seeks sent faster than the pipeline completes them: the first one's ASYNC_DONE,
    /// far from the newest target, changes nothing; the newest one's sets the clock.
    @Test func anOvertakenSeeksCompletionChangesNothing() {
        var state = Self.playing()
        _ = state.seek(to: .seconds(5), nextTaken: false, now: Self.at(1))
        state.seeks.sent()
        _ = state.seek(to: .seconds(40), nextTaken: false, now: Self.at(1.1))
        state.seeks.sent()
        let before = state.facts
        let overtaken = state.asyncDone(Self.facts(at: .seconds(5), .playing, now: Self.at(1.2)))
        #expect(overtaken == nil)
        #expect(state.facts == before && state.clock.position(at: Self.at(1.3)) == .seconds(40))
        let actions = state.asyncDone(Self.facts(at: .seconds(40), .playing, now: Self.at(1.4)))
        #expect(actions == [.publish], "clients hear of the new timing")
        #expect(state.facts.duration == .seconds(100))
        #expect(state.clock.position(at: Self.at(2.4)) == .seconds(41), "runs from where the seek landed")
    }

    /// A seek refused for want of a load leaves the clock alone; one during a preroll sets
    /// it where the load will start.
    @Test func aSeekSetsTheClockOnlyWhenTaken() {
        var state = EngineState()
        let refused = state.seek(to: .seconds(5), nextTaken: false, now: Self.t0)
        #expect(refused == [.refused])
        #expect(state.clock.position(at: Self.at(1)) == .zero)
        _ = state.transport.load(Self.a, intent: .playing)
        _ = state.loadStarted(Self.a, isLocal: true, now: Self.t0)
        let taken = state.seek(to: .seconds(5), nextTaken: false, now: Self.t0)
        #expect(taken == [.timingChanged], "clients see the position asked for at once")
        #expect(state.clock.position(at: Self.at(1)) == .seconds(5), "it stands while the load prerolls")
    }

    /// A rate is shown at once: published when nothing is loaded, else told beside the seek
    /// that applies it, which the clock waits for where the stream is.
    @Test func aRateIsShownAtOnceAndAppliedByASeek() {
        var stopped = EngineState()
        let alone = stopped.setRate(1.5, from: .zero, now: Self.t0)
        #expect(alone == [.publish])
        var state = Self.playing()
        let applied = state.setRate(1.5, from: .seconds(3), now: Self.at(3))
        #expect(applied == [.seek(.seconds(3)), .timingChanged])
        #expect(state.clock.position(at: Self.at(4)) == .seconds(3))
        let again = state.setRate(1.5, from: .seconds(3), now: Self.at(3))
        #expect(again == [.timingChanged], "asked again: nothing to apply, still told")
    }

    /// The pipeline's word on the position: taken beyond the tolerance, not while the
    /// progress watch holds the clock, nor about the stream a gapless switch just left.
    @Test func theClockTakesThePipelinesWordOnlyBeyondTheTolerance() {
        let cases: [(name: String, reported: Duration, at: Double, holding: Bool, switched: Bool, taken: Bool)] = [
            ("close to the clock", .milliseconds(2_100), 2, false, false, false),
            ("drifted", .seconds(3), 2, false, false, true),
            ("drifted while the audio stands", .seconds(3), 2, true, false, false),
            ("drifted right after a switch", .seconds(3), 2, false, true, false),
        ]
        for row in cases {
            var state = Self.playing()
            if row.switched { _ = state.switched(to: Self.b, now: Self.at(1)) }
            let predicted = state.positionReported(row.reported, at: Self.at(row.at), holding: row.holding)
            #expect((predicted != nil) == row.taken, "\(row.name)")
            if row.taken {
                #expect(predicted == .seconds(2) && state.clock.position(at: Self.at(row.at)) == row.reported)
            }
        }
    }

    /// A file that ends far before its length is loaded again there, once; then what
    /// follows plays.
    @Test func aFileEndingEarlyIsLoadedAgainThereOnce() {
        var state = Self.playing()
        let first = state.endOfStream(at: .seconds(30), length: .seconds(100), now: Self.at(30))
        #expect(first.decision == .reload(at: .seconds(30)))
        #expect(
            first.actions == [.load(Load(entry: 1, uri: Self.a.uri, position: .seconds(30)), .paused, fresh: false)])
        #expect(state.clock.position(at: Self.at(31)) == .seconds(30))
        _ = state.loadStarted(Load(entry: 1, uri: Self.a.uri, position: .seconds(30)), isLocal: true, now: Self.at(30))
        _ = state.asyncDone(Self.facts(at: .seconds(30), .paused, now: Self.at(30)))
        _ = state.asyncDone(Self.facts(at: .seconds(30), .paused, now: Self.at(30)))
        _ = state.stateReached(.playing, position: .seconds(30), at: Self.at(30))
        let again = state.endOfStream(at: .seconds(31), length: .seconds(100), now: Self.at(31))
        #expect(again.decision == .endedEarlyAgain && again.actions == [.advance(from: 1)])
        var stream = Self.playing(Self.stream)
        let live = stream.endOfStream(at: .seconds(1), length: .seconds(100), now: Self.at(1))
        #expect(live.decision == .ended && live.actions == [.advance(from: 3)], "a stream ends when its server says")
    }

    /// The output failed: it pauses where clients last saw it, never before.
    @Test func aFailedOutputPausesNoEarlierThanWhatWasShown() {
        var state = Self.playing()
        let shown = state.position(now: Self.at(4)).position
        #expect(shown == .seconds(4))
        state.clock.set(.seconds(2), rate: 0, at: Self.at(4))  // the output's word came back behind
        let (position, actions) = state.failed(reason: "gone", inOutput: true, now: Self.at(4))
        #expect(position == .seconds(4))
        #expect(actions == [.unload(fresh: true), .publish])
        let resumesAt = state.position(now: Self.at(9)).position
        #expect(resumesAt == .seconds(4), "where Play resumes")
    }

    /// The stream handed over failed: its decoder's later errors are echoes, and the loaded
    /// one is loaded again where it is, timed as a reload after a failed hand-over.
    @Test func aFailedHandOverReloadsTheLoadedStreamWhereItIs() {
        var state = Self.playing()
        let source = "/GstPlayBin:p/GstURIDecodeBin:uridecodebin1/GstDecodeBin:decodebin1"
        let actions = state.handOverFailed(source: source, now: Self.at(6))
        #expect(actions == [.load(Load(entry: 1, uri: Self.a.uri, position: .seconds(6)), .paused, fresh: true)])
        #expect(state.errors.isEcho(source + "/GstFlacDec:flacdec0"))
        let limit = state.loadStarted(
            Load(entry: 1, uri: Self.a.uri, position: .seconds(6)), isLocal: true, now: Self.at(6))
        #expect(limit == PrerollWatch.limit)
    }

    /// The progress watches follow the transport: they start for each load and each gapless
    /// switch that plays, and stop as soon as it does not play.
    @Test func theProgressWatchStartsForEachLoadAndSwitchThatPlays() {
        var state = EngineState()
        let table: [(step: String, run: (inout EngineState) -> Void, change: ProgressFollow.Change)] = [
            ("stopped", { _ in }, .unchanged),
            ("a plays", { $0 = Self.playing() }, .started(Self.a, switched: false)),
            ("still a", { _ in }, .unchanged),
            ("switched to b", { _ = $0.switched(to: Self.b, now: Self.at(3)) }, .started(Self.b, switched: true)),
            ("paused", { _ = $0.transport.pause() }, .stopped),
            ("still paused", { _ in }, .unchanged),
            (
                "b plays again",
                {
                    _ = $0.transport.play()
                    _ = $0.stateReached(.playing, position: .seconds(1), at: Self.at(5))
                }, .started(Self.b, switched: false)
            ),
            (
                "b loaded again",
                {
                    _ = $0.loadStarted(Self.b, isLocal: true, now: Self.at(6))
                    $0.transport = Self.playing(Self.b).transport
                }, .started(Self.b, switched: false)
            ),
        ]
        for row in table {
            row.run(&state)
            let change = state.followProgress()
            #expect(change == row.change, "\(row.step)")
        }
    }

    /// A local file that does not preroll in time: with decoded audio waiting, it is loaded
    /// again from NULL, then the output counts as failed; with none, it is the file's fault.
    /// Only the load timed, while it still prerolls, is decided on.
    @Test func aPrerollThatTakesTooLongIsRetriedThenTheOutputFails() {
        let limit = PrerollWatch.outputLimit
        var state = EngineState()
        _ = state.transport.load(Self.a, intent: .playing)
        let timed = state.loadStarted(Self.a, isLocal: true, now: Self.t0)
        #expect(timed == limit)
        let number = state.loadNumber
        let stale = state.prerollLimitPassed(load: number - 1, limit: limit, decodedAudio: true)
        #expect(stale == nil, "an earlier load's limit")
        let first = state.prerollLimitPassed(load: number, limit: limit, decodedAudio: true)
        #expect(first?.decision == .retry && first?.actions == [.load(Self.a, .playing, fresh: true)])
        let retried = state.loadStarted(Self.a, isLocal: true, now: Self.at(15))
        #expect(retried == limit, "the retry is timed")
        let second = state.prerollLimitPassed(load: state.loadNumber, limit: limit, decodedAudio: true)
        #expect(second?.decision == .outputFailed && second?.actions == [])

        var other = EngineState()
        _ = other.transport.load(Self.b, intent: .playing)
        _ = other.loadStarted(Self.b, isLocal: true, now: Self.t0)
        _ = other.stateReached(.playing, position: .zero, at: Self.at(1))
        let played = other.prerollLimitPassed(load: other.loadNumber, limit: limit, decodedAudio: false)
        #expect(played == nil, "it prerolled: nothing is decided")
        _ = other.transport.load(Self.a, intent: .playing)
        _ = other.loadStarted(Self.a, isLocal: true, now: Self.at(2))
        let none = other.prerollLimitPassed(load: other.loadNumber, limit: limit, decodedAudio: false)
        let reason = "no audio was decoded from it within \(StreamWatch.seconds(limit))"
        #expect(none?.decision == .undecodable)
        #expect(none?.actions == [.unload(fresh: true), .skip(1, reason: reason)])
    }

    /// A mixer's change of the output volume is followed; Quaver's own, coming back, is not.
    @Test func theVolumeFollowsAMixerNotItsOwnEcho() {
        var state = EngineState()
        state.setVolume(0.5, now: Self.t0)
        let same = state.outputVolumeChanged(0.5, now: Self.at(0.1))
        #expect(!same)
        state.setVolume(0.6, now: Self.at(0.2))
        let echo = state.outputVolumeChanged(0.5, now: Self.at(0.3))
        #expect(!echo, "the echo of a volume set lately")
        let mixer = state.outputVolumeChanged(1.4, now: Self.at(0.4))
        #expect(mixer)
        #expect(state.volume == 1)
    }
}
