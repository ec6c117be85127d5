import SeededRandom
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

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

    /// An output that takes the audio at 0.7 of real time for 20 s, then at full speed: the
    /// clock takes the pipeline's word once when the slowness is first seen and runs at its
    /// pace from then on (a second time once it has measured it), and at most twice when it
    /// ends, instead of a correction (a backward
    /// Seeked for clients) every second.
    @Test func aSlowOutputIsFollowedAtItsPaceNotCorrectedEverySecond() {
        var state = Self.playing()
        var heard = Duration.zero
        var jumps: [Double] = []
        var rates: [Double] = []
        for second in 1...40 {
            // A bursty output: each answer up to 90 ms behind where the audio is on average.
            heard += second <= 20 ? .milliseconds(700) : .seconds(1)
            let jitter = Duration.milliseconds([0, -60, -30, -90, -15][second % 5])
            let at = Self.at(Double(second))
            let rate = state.runningRate
            if let predicted = state.positionReported(heard + jitter, at: at, holding: false) {
                // A change of timing: a jump clients see as Seeked, or the rate alone.
                if abs((state.clock.position(at: at) - predicted).inSeconds) > 0.1 { jumps.append(Double(second)) }
                if state.runningRate != rate { rates.append(Double(second)) }
            }
            let shown = state.clock.position(at: at)
            #expect(abs((shown - heard).inSeconds) < 0.6, "at \(second) s: shown \(shown), heard \(heard)")
        }
        // One jump when the slowness is first seen, then the rate alone follows the pace as it
        // is measured over a longer stretch; at most two when it ends (the pace since the last
        // correction still holds slow seconds).
        #expect(jumps.filter { $0 <= 20 }.count <= 1, "jumps at \(jumps) s")
        #expect(jumps.filter { $0 > 20 }.count <= 2, "jumps at \(jumps) s")
        #expect(rates.filter { $0 <= 20 }.count <= 4, "rate changes at \(rates) s")
        #expect(state.pace == 1, "full speed again")
    }

    /// An output with latency (a Bluetooth headset's 300 ms) plays at full speed behind the
    /// clock: one correction takes the offset, and the pace stays 1, so clients never see the
    /// rate dip.
    @Test func anOutputsLatencyIsNoSlowPace() {
        var state = Self.playing()
        var corrections = 0
        for tenth in stride(from: 11, through: 100, by: 10) {
            let at = Double(tenth) / 10
            let heard = Duration.seconds(max(at - 0.3, 0))
            if state.positionReported(heard, at: Self.at(at), holding: false) != nil { corrections += 1 }
            #expect(state.pace == 1, "at \(at) s")
        }
        #expect(corrections == 1)
    }

    /// A call that got stuck right after a gapless switch: the audio stood from the call on,
    /// so the new entry goes on from where it was then, not from where the clock ran to during
    /// the stuck limit (that loaded a short track past its end, where every seek was refused).
    /// At or past a track's length, what follows plays instead.
    @Test func aStuckPipelineGoesOnFromWhereTheCallWasMadeNeverPastTheEnd() {
        var state = Self.playing(Self.a)
        _ = state.switched(to: Self.b, now: Self.at(10))
        let actions = state.stuck(since: Self.at(10.2), length: .seconds(2))
        #expect(actions.first == .replacePipeline)
        let restart = actions.compactMap { if case .load(let load, _, _) = $0 { load } else { nil } }.first
        #expect(restart?.entry == Self.b.entry)
        #expect(restart?.position.map { $0 <= .milliseconds(200) } ?? true, "b from 0.2 s, not 3.2 s: \(actions)")

        var ended = Self.playing(Self.a)
        _ = ended.switched(to: Self.b, now: Self.at(10))
        let atEnd = ended.stuck(since: Self.at(12.5), length: .seconds(2))
        #expect(atEnd == [.replacePipeline, .advance(from: Self.b.entry)], "b had ended: what follows plays")
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
            first.actions == [.load(Load(entry: 1, uri: Self.a.uri, position: .seconds(30)), .paused, fresh: true)],
            "from NULL")
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
        let actions = state.handOverFailed(source: ElementPath(source), now: Self.at(6))
        #expect(actions == [.load(Load(entry: 1, uri: Self.a.uri, position: .seconds(6)), .paused, fresh: true)])
        #expect(state.errors.isEcho(ElementPath(source + "/GstFlacDec:flacdec0")))
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

/// Long random sequences of commands and pipeline reports through the engine's state, each
/// action's state part carried out as the engine does, with its promises checked after every
/// step.
@Suite("Engine state: invariants over random event sequences")
struct EngineStatePropertyTests {
    enum Event {
        case load(UInt64, PlaybackStatus, Duration?)
        case play, pause, stop
        case seek(Duration, nextTaken: Bool)
        case rate(Double)
        case reached(Pipeline.State, Duration)
        case done(Pipeline.State, Duration)
        case streamStart(UInt64)
        case endOfStream(Duration?)
        case failed(output: Bool)
        case handOverFailed, stuck
        case prerollLimit(decodedAudio: Bool)
        case reported(Duration)
    }

    static func randomEvent(_ random: inout SplitMix) -> Event {
        let states: [Pipeline.State] = [.paused, .playing]
        let seconds = { (random: inout SplitMix) in Duration.seconds(random.int(0..<60)) }
        switch random.int(0..<16) {
        case 0:
            return .load(
                UInt64(random.int(1..<4)), random.pick([.paused, .playing]),
                random.chance(0.3) ? seconds(&random) : nil)
        case 1: return .play
        case 2: return .pause
        case 3: return random.chance(0.3) ? .stop : .play
        case 4: return .seek(seconds(&random), nextTaken: random.chance(0.2))
        case 5: return .rate(random.pick([0.5, 1, 1.5]))
        case 6: return .reached(random.pick(states), seconds(&random))
        case 7, 8: return .done(random.pick(states), seconds(&random))
        case 9: return .streamStart(UInt64(random.int(1..<4)))
        case 10: return .endOfStream(random.chance(0.5) ? seconds(&random) : nil)
        case 11: return .failed(output: random.chance(0.3))
        case 12: return random.chance(0.5) ? .handOverFailed : .stuck
        case 13: return .prerollLimit(decodedAudio: random.chance(0.5))
        default: return .reported(seconds(&random))
        }
    }

    static func load(_ id: UInt64, _ position: Duration? = nil) -> Transport.Load {
        Transport.Load(entry: id, uri: "file:///\(id).flac", position: position)
    }

    /// Feeds `event` to `state` at `now`; nil for an ASYNC_DONE taken as an overtaken seek's.
    static func apply(_ event: Event, to state: inout EngineState, now: ContinuousClock.Instant) -> [Transport.Action]?
    {
        switch event {
        case .load(let id, let intent, let position): return state.transport.load(load(id, position), intent: intent)
        case .play: return state.transport.play()
        case .pause: return state.transport.pause()
        case .stop: return state.transport.stop()
        case .seek(let target, let nextTaken): return state.seek(to: target, nextTaken: nextTaken, now: now)
        case .rate(let rate): return state.setRate(rate, from: .seconds(1), now: now)
        case .reached(let new, let position): return state.stateReached(new, position: position, at: now)
        case .done(let current, let position):
            var facts = Pipeline.Facts()
            facts.at = now
            facts.position = position
            facts.current = current
            return state.asyncDone(facts)
        case .streamStart(let id):
            return state.streamStarted() ? state.switched(to: load(id), now: now) : []
        case .endOfStream(let reported): return state.endOfStream(at: reported, length: .seconds(60), now: now).actions
        case .failed(let output): return state.failed(reason: "x", inOutput: output, now: now).actions
        case .handOverFailed:
            return state.handOverFailed(
                source: ElementPath("/GstPlayBin:p/GstURIDecodeBin:uridecodebin0/GstFlacDec:f"), now: now)
        case .stuck: return state.stuck(since: now - .seconds(3), length: .seconds(60))
        case .prerollLimit(let decoded):
            return state.prerollLimitPassed(load: state.loadNumber, limit: .seconds(15), decodedAudio: decoded)?.actions
                ?? []
        case .reported(let position):
            _ = state.positionReported(position, at: now, holding: false)
            return []
        }
    }

    @Test(
        "stale reports are never heard, the clock starts where a load does, the position shown tells the truth",
        arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func invariantsHold(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var state = EngineState()
        _ = state.pipelineMade()
        var now = ContinuousClock.now
        var replaced = 0
        let check = InvariantChecks()
        for step in 0..<3_000 where !check.failed {
            now += .milliseconds(random.int(0..<400))
            let event = Self.randomEvent(&random)
            let before = state
            let result = Self.apply(event, to: &state, now: now)
            var context: String {
                "seed \(seed), step \(step), \(event): \(before.transport.state) → \(state.transport.state)"
            }
            guard let actions = result else {
                check(state.transport == before.transport && state.facts == before.facts, "overtaken: \(context)")
                continue
            }
            for action in actions {
                let number = state.loadNumber
                _ = state.carryingOut(action, now: now)
                switch action {
                case .load(let load, _, _):
                    check(state.awaitingOwnStreamStart && state.seeks.count == 0, "a load's own start: \(context)")
                    check(state.clock.position(at: now) == load.position ?? .zero, "starts where it loads: \(context)")
                    if case .stuck = event {
                        check((load.position ?? .zero) < .seconds(60), "a stuck entry restarts within it: \(context)")
                    }
                case .replacePipeline:
                    replaced += 1
                    _ = state.pipelineMade()
                case .publish:
                    state.settled(holding: false, now: now)
                default:
                    break
                }
                if case .load = action { check(!state.hears(pipeline: state.pipelineNumber, load: number), context) }
                if case .unload = action { check(!state.hears(pipeline: state.pipelineNumber, load: number), context) }
            }
            check(state.hears(pipeline: state.pipelineNumber, load: state.loadNumber), "\(context)")
            check(state.pipelinesReplaced == replaced, "every replacement counted: \(context)")
            let shown = state.position(now: now).position
            if case .outputLost(_, let at) = state.transport.phase {
                check(shown == at, "paused where the output failed: \(context)")
            } else if state.transport.status == .stopped || state.transport.loadedEntry == nil {
                check(shown == .zero, "nothing loaded, nothing played: \(context)")
            }
            if !state.transport.isPlaying && !state.transport.isSeeking && state.transport.status != .stopped {
                check(state.clock.rate == 0, "the clock stands unless the stream plays: \(context)")
            }
        }
    }
}

/// The network streams' decisions without GStreamer: buffering and a stall limit that passed.
@Suite("Engine state: network streams")
struct EngineStateStreamTests {
    typealias Load = Transport.Load
    static let t0 = ContinuousClock.now
    static let radio = Load(entry: 5, uri: "http://example.org/radio")

    /// Only the loaded stream that should play pauses for its buffer, and only once it plays.
    @Test func onlyALoadedStreamThatShouldPlayPausesForItsBuffer() {
        var file = EngineStateTests.playing()
        #expect(file.streamBuffering(20, playing: true) == nil, "a file plays on")
        var stream = EngineStateTests.playing(Self.radio)
        #expect(stream.streamBuffering(20, playing: false) == nil, "not asked to play")
        let low = stream.streamBuffering(20, playing: true)
        #expect(low?.stream == Self.radio && low?.watch == .arm && low?.actions == [.setState(.paused)])
        let lower = stream.streamBuffering(10, playing: true)
        #expect(lower?.watch == .arm && lower?.actions == [], "armed already, but none waits yet")
        stream.streamWatch.arm(5, bytes: 0, now: Self.t0)
        let same = stream.streamBuffering(10, playing: true)
        #expect(same?.watch == .keep, "no data came")
        let full = stream.streamBuffering(100, playing: true)
        #expect(full?.watch == .disarm && full?.actions == [.setState(.playing)], "it played: the watch ends")
    }

    /// The limit passed: a loaded stream that sent nothing is taken down and skipped; a
    /// handed-over one is the owner's; one that sent is waited for again.
    @Test func aStalledStreamIsTakenDownOrLeftToTheOwner() {
        var stream = EngineStateTests.playing(Self.radio)
        stream.streamWatch.arm(5, bytes: 100, now: Self.t0)
        let wait = stream.streamWatch.wait!
        let sent = stream.streamStalled(wait, at: .loaded(isSettled: true), playing: true, bytes: 200, now: Self.t0)
        #expect(sent.verdict == .waitAgain(since: Self.t0) && sent.actions.isEmpty)
        #expect(stream.streamWatch.wait == nil, "the wait ended; the engine arms it again")
        let silent = stream.streamStalled(wait, at: .loaded(isSettled: true), playing: true, bytes: 100, now: Self.t0)
        guard case .stalled(let reason) = silent.verdict else {
            Issue.record("\(silent.verdict)")
            return
        }
        #expect(silent.actions == [.unload(fresh: true), .skip(5, reason: reason)])
        var before = EngineStateTests.playing()
        let handedOver = before.streamStalled(
            wait, at: .handedOver(previousPlays: false), playing: true, bytes: 100, now: Self.t0)
        #expect(handedOver.actions.isEmpty && before.transport.pipelineFailed, "the next teardown goes to NULL")
        let gone = before.streamStalled(wait, at: .elsewhere, playing: true, bytes: 100, now: Self.t0)
        #expect(gone.verdict == .leave)
    }
}
