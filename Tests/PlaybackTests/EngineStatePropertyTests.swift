import SeededRandom
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

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
    /// Every entry is known to be 60 s long.
    static func apply(_ event: Event, to state: inout EngineState, now: ContinuousClock.Instant)
        -> [EngineState.Action]?
    {
        let length = EntryFacts(length: .seconds(60))
        switch event {
        case .load(let id, let intent, let position):
            return state.load(load(id, position), facts: length, intent: intent)
        case .play: return state.play()
        case .pause: return state.pause()
        case .stop: return state.stop()
        case .seek(let target, let nextTaken): return state.seek(to: target, nextTaken: nextTaken, now: now)
        case .rate(let rate): return state.setRate(rate, from: .seconds(1), now: now)
        case .reached(let new, let position): return state.stateReached(new, position: position, at: now)
        case .done(let current, let position):
            var facts = Pipeline.Facts()
            facts.at = now
            facts.position = position
            facts.current = current
            let actions = state.asyncDone(facts)
            return actions == [.stopPrerollTimer] ? nil : actions
        case .streamStart(let id):
            _ = state.know(id, length)
            let next = load(id)
            return state.streamStarted(handedOver: GaplessHandoff.Item(entryID: id, uri: next.uri), now: now)
        case .endOfStream(let reported): return state.endOfStream(at: reported, now: now)
        case .failed(let output):
            let error = PipelineError(
                message: "x", domain: .stream, code: 0, source: ElementPath("/GstPlayBin:p"), inOutput: output)
            return state.pipelineFailed(error, handedOver: nil, now: now)
        case .handOverFailed:
            let error = PipelineError(
                message: "x", domain: .stream, code: 0,
                source: ElementPath("/GstPlayBin:p/GstURIDecodeBin:uridecodebin0/GstFlacDec:f"))
            let next = GaplessHandoff.Item(entryID: 9, uri: "http://example.org/next")
            return state.pipelineFailed(error, handedOver: next, now: now)
        case .stuck: return state.stuck(since: now - .seconds(3))
        case .prerollLimit(let decoded):
            let timed = state.transport.loaded ?? load(1)
            return state.prerollLimitPassed(
                of: timed, number: state.loadNumber, limit: .seconds(15), decodedAudio: decoded, now: now)
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
            for case .transport(let action) in actions {
                let number = state.loadNumber
                let carried = state.carryingOut(action, now: now)
                check(carried.transportActions.isEmpty, "carried out, never a transport's action again: \(context)")
                switch action {
                case .load(let load, _, _):
                    check(state.awaitingOwnStreamStart && state.seeks.count == 0, "a load's own start: \(context)")
                    check(state.clock.position(at: now) == load.position ?? .zero, "starts where it loads: \(context)")
                    if case .stuck = event {
                        check((load.position ?? .zero) < .seconds(60), "a stuck entry restarts within it: \(context)")
                    }
                case .replacePipeline:
                    replaced += 1
                default:
                    break
                }
                if case .load = action { check(!state.hears(pipeline: state.pipelineNumber, load: number), context) }
                if case .unload = action { check(!state.hears(pipeline: state.pipelineNumber, load: number), context) }
            }
            check(state.hears(pipeline: state.pipelineNumber, load: state.loadNumber), "\(context)")
            check(state.pipelinesReplaced == replaced, "every replacement counted: \(context)")
            let shown = state.position(at: now)
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
