import SeededRandom
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The transport state machine without GStreamer: each test is a trace of what happened and
/// what the transport asked for.
@Suite("Transport: the reducer, as traces")
struct TransportTraceTests {
    let a = Transport.Load(entry: 1, uri: "file:///a.flac", position: nil)
    let b = Transport.Load(entry: 2, uri: "file:///b.flac", position: nil)

    @Test func idleHasNothingToDo() {
        var transport = Transport()
        #expect(transport.play() == [.refused])
        #expect(transport.pause().isEmpty)
        #expect(transport.seek(to: .seconds(1)) == [.refused])
        #expect(transport.asyncDone(current: .paused, pending: .voidPending).isEmpty)
        #expect(transport.stateReached(.playing).isEmpty)
        #expect(
            transport.failed(reason: "x", inOutput: false, position: .zero).isEmpty, "an echo of a stream taken down")
        #expect(transport.endOfStream().isEmpty)
        #expect(transport.buffering(percent: 10).isEmpty)
        #expect(transport.stuck(position: .zero) == [.replacePipeline])
        #expect(transport.stop() == [.publish])
        #expect(transport.status == .stopped && transport.state == .stopped)
    }

    @Test func loadToPlayingSettlesWhenThePipelineSaysSo() {
        var transport = Transport()
        #expect(transport.load(a, intent: .playing) == [.load(a, .playing, fresh: false)])
        #expect(transport.status == .stopped, "nothing is published before the pipeline confirms it")
        #expect(transport.stateReached(.paused).isEmpty, "on the way to PLAYING")
        #expect(transport.stateReached(.playing) == [.publish])
        #expect(transport.status == .playing && transport.settledEntry == a.entry)
        #expect(transport.asyncDone(current: .playing, pending: .voidPending).isEmpty, "no second publication")
    }

    @Test func loadToAPositionPrerollsSeeksThenPlays() {
        var transport = Transport()
        let there = Transport.Load(entry: 1, uri: a.uri, position: .seconds(30))
        #expect(transport.load(there, intent: .playing) == [.load(there, .paused, fresh: false)])
        #expect(transport.pendingPosition == .seconds(30))
        #expect(transport.asyncDone(current: .paused, pending: .voidPending) == [.seek(.seconds(30))])
        #expect(transport.pendingPosition == .seconds(30))
        #expect(transport.asyncDone(current: .paused, pending: .voidPending) == [.setState(.playing)])
        #expect(transport.status == .stopped)
        #expect(transport.stateReached(.playing) == [.publish])
        #expect(transport.status == .playing)
    }

    @Test func aRateOtherThanOneIsAppliedBySeekingOnceLoaded() {
        var transport = Transport()
        #expect(transport.setRate(1.5, position: .zero) == [.publish])
        #expect(transport.load(a, intent: .paused) == [.load(a, .paused, fresh: false)])
        #expect(transport.asyncDone(current: .paused, pending: .voidPending) == [.seek(.zero)])
        #expect(transport.asyncDone(current: .paused, pending: .voidPending) == [.publish])
        #expect(transport.status == .paused)
    }

    @Test func aLoadDuringAPrerollWaitsForIt() {
        var transport = Transport()
        _ = transport.load(a, intent: .playing)
        #expect(transport.load(b, intent: .playing) == [.awaitPreroll])
        #expect(transport.upcomingEntry == b.entry)
        #expect(transport.seek(to: .seconds(2)).isEmpty, "a seek goes with the waiting load")
        let bThere = Transport.Load(entry: 2, uri: b.uri, position: .seconds(2))
        #expect(transport.asyncDone(current: .paused, pending: .playing) == [.load(bThere, .paused, fresh: false)])
    }

    @Test func aPrerollThatNeverEndsGivesWayToTheWaitingLoad() {
        var transport = Transport()
        _ = transport.load(a, intent: .playing)
        _ = transport.load(b, intent: .playing)
        #expect(transport.prerollOverdue() == [.load(b, .playing, fresh: false)])
        #expect(transport.prerollOverdue().isEmpty)
    }

    @Test func aSeekWhilePlayingAnnouncesTheNewTiming() {
        var transport = playing(a)
        #expect(transport.seek(to: .seconds(5)) == [.seek(.seconds(5))])
        #expect(transport.pendingPosition == .seconds(5))
        #expect(transport.stateReached(.paused).isEmpty, "a seek's flush is not a pause")
        #expect(transport.asyncDone(current: .playing, pending: .voidPending) == [.publish])
        #expect(transport.status == .playing)
    }

    @Test func aSeekGStreamerRefusesLeavesTheStreamWhereItWas() {
        var transport = playing(a)
        _ = transport.seek(to: .seconds(5))
        #expect(transport.seekRefused() == [.publish])
        #expect(transport.isPlaying)
    }

    @Test func aSeekAfterTheNextTrackWasTakenReloadsTheEntryThere() {
        var transport = playing(a)
        let there = Transport.Load(entry: 1, uri: a.uri, position: .seconds(1))
        #expect(transport.seek(to: .seconds(1), nextTaken: true) == [.load(there, .paused, fresh: false)])
    }

    @Test func pauseAndPlaySettleOnlyOnceReached() {
        var transport = playing(a)
        #expect(transport.pause() == [.setState(.paused)])
        #expect(transport.status == .playing)
        #expect(transport.stateReached(.paused) == [.publish])
        #expect(transport.status == .paused)
        #expect(transport.play() == [.setState(.playing)])
        #expect(transport.stateReached(.playing) == [.publish])
    }

    @Test func aFailingTrackIsSkippedAndTheNextTeardownGoesToNull() {
        var transport = playing(a)
        #expect(
            transport.failed(reason: "broken", inOutput: false, position: .seconds(1)) == [
                .unload(fresh: true), .skip(1, reason: "broken"),
            ])
        #expect(transport.phase == .idle(.playing))
        #expect(
            transport.load(b, intent: .playing) == [.load(b, .playing, fresh: false)], "the unload went to NULL already"
        )
    }

    @Test func aFailedOutputPausesWhereTheTrackWasUntilPlay() {
        var transport = playing(a)
        #expect(
            transport.failed(reason: "gone", inOutput: true, position: .seconds(7)) == [.unload(fresh: true), .publish])
        #expect(transport.status == .paused)
        #expect(transport.loadedEntry == nil)
        #expect(transport.pendingPosition == .seconds(7))
        #expect(transport.seek(to: .seconds(9)) == [.publish])
        let again = Transport.Load(entry: 1, uri: a.uri, position: .seconds(9))
        #expect(transport.play() == [.load(again, .paused, fresh: false)])
    }

    @Test func aStuckPipelineIsReplacedOnceThenPausedThere() {
        var transport = playing(a)
        let restart = Transport.Load(entry: 1, uri: a.uri, position: .seconds(3))
        #expect(transport.stuck(position: .seconds(3)) == [.replacePipeline, .load(restart, .paused, fresh: false)])
        #expect(transport.status == .playing, "still what clients last heard, while it loads again")
        #expect(transport.stuck(position: .seconds(3)) == [.replacePipeline, .publish])
        #expect(transport.status == .paused, "stuck twice: the truth is that nothing plays")
        #expect(transport.loadedEntry == nil)
        #expect(transport.play() != [.refused])
    }

    /// An odd file on which GStreamer sticks each time it plays: the retry plays, sticks
    /// again, and the file is skipped, rather than retried for ever (a tag library's empty TTA
    /// stuck eight times in a row before) or paused as if the output had failed.
    @Test func anEntryStuckAgainAfterItsRetryPlayedIsSkipped() {
        var transport = playing(a)
        let restart = Transport.Load(entry: 1, uri: a.uri, position: .seconds(1))
        #expect(transport.stuck(position: .seconds(1)) == [.replacePipeline, .load(restart, .paused, fresh: false)])
        _ = transport.asyncDone(current: .paused, pending: .voidPending)
        _ = transport.asyncDone(current: .paused, pending: .voidPending)
        _ = transport.stateReached(.playing)
        #expect(transport.isPlaying, "the retry plays")
        #expect(
            transport.stuck(position: .seconds(2))
                == [.replacePipeline, .skip(1, reason: "GStreamer got stuck playing it, twice")])
        #expect(transport.loadedEntry == nil && transport.intent == .playing, "what follows plays")
    }

    /// A seek in a file that never lands (after a stuck pipeline's replacement, in an odd
    /// file, the stream stayed in it, shown Playing, for good): at the second state check it is
    /// loaded again there from NULL, and a seek lost on that reload loads it from the start.
    /// A network stream's seek waits on its server and is not checked.
    @Test func aSeekThatNeverLandsIsLoadedAgainThenFromTheStart() {
        var transport = playing(a)
        #expect(transport.seek(to: .seconds(5)) == [.seek(.seconds(5))])
        #expect(transport.awaitsSeek)
        #expect(transport.stateChecked(current: .playing, pending: .voidPending).isEmpty, "left to land once")
        let there = Transport.Load(entry: 1, uri: a.uri, position: .seconds(5))
        #expect(
            transport.stateChecked(current: .playing, pending: .voidPending) == [.load(there, .paused, fresh: true)])
        _ = transport.asyncDone(current: .paused, pending: .voidPending)
        #expect(transport.isSeeking, "the reload seeks to 5 s")
        _ = transport.stateChecked(current: .paused, pending: .voidPending)
        let restart = Transport.Load(entry: 1, uri: a.uri, position: nil)
        #expect(
            transport.stateChecked(current: .paused, pending: .voidPending) == [.load(restart, .playing, fresh: true)],
            "lost again: from the start, with no seek")

        var stream = playing(Transport.Load(entry: 9, uri: "http://radio.invalid/a.mp3"))
        _ = stream.seek(to: .seconds(5))
        #expect(!stream.awaitsSeek)
    }

    @Test func aStreamPausesWhileItBuffersWithoutTellingClients() {
        var transport = playing(a)
        #expect(transport.buffering(percent: 20) == [.setState(.paused)])
        #expect(transport.stateReached(.paused).isEmpty)
        #expect(transport.status == .playing)
        #expect(transport.buffering(percent: 60).isEmpty)
        #expect(transport.buffering(percent: 100) == [.setState(.playing)])
        #expect(transport.stateReached(.playing).isEmpty, "nothing changed for clients")
    }

    /// The sequence of a soak failure: a buffering level came after the preroll, while the
    /// pipeline went on to PLAYING by itself; PAUSED asked for then left it paused without a
    /// report, and the stream never played.
    @Test func bufferingWaitsUntilThePipelineConfirmedPlaying() {
        var transport = Transport()
        _ = transport.load(a, intent: .playing)
        #expect(transport.buffering(percent: 35).isEmpty, "prerolling: levels are expected")
        #expect(transport.asyncDone(current: .paused, pending: .playing).isEmpty)
        #expect(transport.awaitsState)
        #expect(transport.buffering(percent: 35).isEmpty, "on its way to PLAYING: left alone")
        #expect(transport.stateReached(.playing) == [.publish])
        #expect(transport.buffering(percent: 40) == [.setState(.paused)], "confirmed: paused until full")
        #expect(transport.buffering(percent: 100) == [.setState(.playing)])
        #expect(transport.buffering(percent: 20).isEmpty, "resuming: left alone until confirmed")
    }

    /// A confirmation that never comes: the pipeline is asked where it is, and the state is
    /// asked for again, or settled, from its answer.
    @Test func aStateNeverConfirmedIsCheckedAndAskedAgain() {
        var transport = playing(a)
        _ = transport.buffering(percent: 20)
        _ = transport.buffering(percent: 100)
        #expect(transport.awaitsState)
        #expect(transport.stateChecked(current: .paused, pending: .playing).isEmpty, "on its way")
        #expect(transport.stateChecked(current: .paused, pending: .voidPending) == [.setState(.playing)])
        #expect(transport.awaitsState, "still waiting for its word")
        #expect(transport.stateChecked(current: .playing, pending: .voidPending).isEmpty, "clients saw Playing")
        #expect(!transport.awaitsState && transport.isPlaying)
        #expect(transport.stateChecked(current: .paused, pending: .voidPending).isEmpty, "asked only while waiting")
    }

    /// A change to PLAYING that GStreamer leaves under way for good, with nothing flowing
    /// (seen after a gapless switch out of a file that decodes to nothing): under way at two
    /// checks in a row, the entry is loaded again where it was, from NULL; stalled again
    /// there, it pauses until Play. A check that finds no change under way starts the count
    /// again.
    @Test func aChangeLeftUnderWayIsLoadedAgainThenPaused() {
        var transport = Transport()
        _ = transport.load(a, intent: .playing)
        #expect(transport.switched(to: b) == [.publish], "switched while a prerolled")
        #expect(transport.awaitsState && transport.status == .playing)
        #expect(transport.stateChecked(current: .paused, pending: .playing).isEmpty, "on its way, once")
        #expect(transport.stateChecked(current: .paused, pending: .voidPending) == [.setState(.playing)])
        #expect(transport.stateChecked(current: .paused, pending: .playing).isEmpty, "the count starts again")
        let reload = Transport.Load(entry: b.entry, uri: b.uri, position: .milliseconds(300))
        #expect(
            transport.stateChecked(current: .paused, pending: .playing, position: .milliseconds(300))
                == [.load(reload, .paused, fresh: true)])
        #expect(transport.asyncDone(current: .paused, pending: .voidPending) == [.seek(.milliseconds(300))])
        #expect(
            transport.asyncDone(current: .paused, pending: .voidPending) == [.publish, .setState(.playing)],
            "the new timing, then on to PLAYING")
        #expect(transport.stateChecked(current: .paused, pending: .playing).isEmpty)
        #expect(
            transport.stateChecked(current: .paused, pending: .playing, position: .milliseconds(300))
                == [.unload(fresh: true), .publish], "stalled again: paused there")
        #expect(transport.status == .paused && transport.phase == .outputLost(reload, at: .milliseconds(300)))
        #expect(transport.play() == [.load(reload, .paused, fresh: false)], "Play tries again")
    }

    @Test func aGaplessSwitchPublishesTheNewEntryAndReappliesTheRate() {
        var transport = playing(a)
        #expect(transport.switched(to: b) == [.publish])
        #expect(transport.settledEntry == b.entry && transport.status == .playing)
        _ = transport.setRate(1.5, position: .seconds(1))
        _ = transport.asyncDone(current: .playing, pending: .voidPending)
        #expect(transport.switched(to: a) == [.publish, .seek(.zero)])
    }

    @Test func restartingTheShownEntryIsPublishedAgain() {
        var transport = playing(a)
        _ = transport.load(a, intent: .playing)
        #expect(transport.stateReached(.playing) == [.publish], "clients must hear the new timing")
    }

    @Test func theEndOfAStreamAsksForWhatFollows() {
        var transport = playing(a)
        #expect(transport.endOfStream() == [.advance(from: 1)])
    }

    @Test func stopUnloadsAndPublishesStopped() {
        var transport = playing(a)
        #expect(transport.stop() == [.unload(fresh: false), .publish])
        #expect(transport.status == .stopped && transport.settledEntry == nil && transport.intent == .stopped)
    }

    @Test func aLostClockIsPickedAgainOnlyOnTheWayToPlaying() {
        let there = Transport.Load(entry: 1, uri: a.uri, position: .seconds(30))
        var prerolling = Transport()
        _ = prerolling.load(a, intent: .playing)
        var prerollingPaused = Transport()
        _ = prerollingPaused.load(a, intent: .paused)
        var seeking = playing(a)
        _ = seeking.seek(to: .seconds(4))
        var paused = playing(a)
        _ = paused.pause()
        _ = paused.stateReached(.paused)
        var buffering = playing(a)
        _ = buffering.buffering(percent: 10)
        var lost = playing(a)
        _ = lost.failed(reason: "gone", inOutput: true, position: .seconds(2))
        var failed = playing(there)
        _ = failed.failed(reason: "broken", inOutput: false, position: .zero)
        let table: [(String, Transport, [Transport.Action])] = [
            ("idle", Transport(), []),
            ("prerolling toward PLAYING", prerolling, [.reselectClock]),
            ("prerolling toward PAUSED", prerollingPaused, []),
            ("seeking while playing", seeking, [.reselectClock]),
            ("playing", playing(a), [.reselectClock]),
            ("paused", paused, []),
            ("buffering: the full buffer picks the clock", buffering, []),
            ("output lost", lost, []),
            ("a failed track, taken down", failed, []),
        ]
        for (name, before, expected) in table {
            var transport = before
            #expect(transport.clockLost() == expected, "\(name)")
            #expect(transport == before, "nothing else changes: \(name)")
        }
    }

    @Test func aLostClockWhilePlayingPublishesNothingAndKeepsPlaying() {
        var transport = playing(a)
        #expect(transport.clockLost() == [.reselectClock])
        #expect(transport.stateReached(.paused).isEmpty, "the way through PAUSED is not news")
        #expect(transport.stateReached(.playing).isEmpty)
        #expect(transport.status == .playing && transport.isPlaying)
    }

    private func playing(_ load: Transport.Load) -> Transport {
        var transport = Transport()
        _ = transport.load(load, intent: .playing)
        _ = transport.stateReached(.playing)
        return transport
    }
}

/// Long random sequences of commands and pipeline reports, with the transport's promises
/// checked after every step.
@Suite("Transport: invariants over random event sequences")
struct TransportPropertyTests {
    enum Event {
        case load(UInt64, Player.Status, Duration?)
        case play, pause, stop
        case seek(Duration)
        case rate(Double)
        case asyncDone(Pipeline.State, Pipeline.State)
        case reached(Pipeline.State)
        case failed(output: Bool)
        case endOfStream
        case switched(UInt64)
        case buffering(Int)
        case overdue, stuck, refused, changeFailed, clockLost
        case seekNextTaken(Duration)
        case handOverFailed, failedElsewhere, prerollTimedOut
        case checked(Pipeline.State, Pipeline.State)
    }

    static func randomEvent(_ random: inout SplitMix) -> Event {
        let states: [Pipeline.State] = [.paused, .playing]
        switch random.int(0..<21) {
        case 0:
            return .load(
                UInt64(random.int(1..<4)), random.pick([.paused, .playing]),
                random.chance(0.3) ? .seconds(random.int(0..<60)) : nil)
        case 1: return .play
        case 2: return .pause
        case 3: return random.chance(0.3) ? .stop : .play
        case 4: return .seek(.seconds(random.int(0..<60)))
        case 5: return .rate(random.pick([0.5, 1, 1.5]))
        case 6, 7: return .asyncDone(random.pick(states), random.pick([.voidPending, .voidPending, .playing]))
        case 8, 9: return .reached(random.pick(states))
        case 10: return .failed(output: random.chance(0.3))
        case 11: return .endOfStream
        case 12: return .switched(UInt64(random.int(1..<4)))
        case 13: return .buffering(random.pick([0, 50, 100]))
        case 14: return .overdue
        case 15: return random.chance(0.5) ? .stuck : .refused
        case 16: return random.chance(0.5) ? .changeFailed : .clockLost
        // The inputs a session sends rarely: each as often as the others.
        case 17: return random.chance(0.5) ? .seekNextTaken(.seconds(random.int(0..<60))) : .prerollTimedOut
        case 18: return random.chance(0.5) ? .handOverFailed : .failedElsewhere
        case 19: return .checked(random.pick(states), random.pick([.voidPending, .voidPending, .playing, .paused]))
        default: return .stuck
        }
    }

    static func apply(_ event: Event, to transport: inout Transport) -> [Transport.Action] {
        let load = { (id: UInt64, position: Duration?) in
            Transport.Load(entry: id, uri: "file:///\(id).flac", position: position)
        }
        switch event {
        case .load(let id, let intent, let position): return transport.load(load(id, position), intent: intent)
        case .play: return transport.play()
        case .pause: return transport.pause()
        case .stop: return transport.stop()
        case .seek(let target): return transport.seek(to: target)
        case .rate(let rate): return transport.setRate(rate, position: .seconds(1))
        case .asyncDone(let current, let pending): return transport.asyncDone(current: current, pending: pending)
        case .reached(let state): return transport.stateReached(state)
        case .failed(let output): return transport.failed(reason: "x", inOutput: output, position: .seconds(2))
        case .endOfStream: return transport.endOfStream()
        case .switched(let id): return transport.switched(to: load(id, nil))
        case .buffering(let percent): return transport.buffering(percent: percent)
        case .overdue: return transport.prerollOverdue()
        case .stuck: return transport.stuck(position: .seconds(3))
        case .refused: return transport.seekRefused()
        case .changeFailed: return transport.stateChangeFailed()
        case .clockLost: return transport.clockLost()
        case .seekNextTaken(let target): return transport.seek(to: target, nextTaken: true)
        case .handOverFailed: return transport.handOverFailed(position: .seconds(4))
        case .failedElsewhere: return transport.failedElsewhere()
        case .prerollTimedOut: return transport.prerollTimedOut()
        case .checked(let current, let pending): return transport.stateChecked(current: current, pending: pending)
        }
    }

    @Test(
        "status follows the pipeline, each change is published once, nothing contradicts itself",
        arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func invariantsHold(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var transport = Transport()
        let check = InvariantChecks()
        for step in 0..<3_000 where !check.failed {
            let event = Self.randomEvent(&random)
            let before = transport
            let actions = Self.apply(event, to: &transport)
            // Described only when a check fails: describing each step would cost more than the test.
            var context: String {
                "seed \(seed), step \(step), \(event), from \(before.state) [\(before.status)] to \(transport.state) [\(transport.status)]: \(actions)"
            }

            // At most one publication per transition, and one for every change clients see.
            let publications = actions.filter { $0 == .publish }.count
            check(publications <= 1, "\(context)")
            if transport.status != before.status || transport.settledEntry != before.settledEntry {
                check(publications == 1, "a change clients see is published: \(context)")
            }

            // The published status is what the pipeline reached, never what was merely asked.
            if transport.status != before.status {
                switch (transport.status, event) {
                case (.stopped, .stop), (.stopped, .failed), (.stopped, .stuck):
                    break
                case (.stopped, _):
                    // The end of the queue or a skip stops through the owner, with stop().
                    check(false, "stopped without a stop: \(context)")
                case (.paused, .failed(output: true)), (.paused, .stuck):
                    check(transport.loadedEntry == nil, "paused because nothing can play: \(context)")
                case (let status, .reached(let state)):
                    check(state == (status == .playing ? .playing : .paused), "\(context)")
                case (let status, .asyncDone(let current, .voidPending)),
                    (let status, .checked(let current, .voidPending)):
                    check(current == (status == .playing ? .playing : .paused), "\(context)")
                case (.paused, .checked(.paused, .paused)):
                    break  // PAUSED, its preroll still pending: nothing is heard
                case (.playing, .play), (.paused, .pause):
                    var reached = false
                    if case .loaded(_, let heading, confirmed: true) = before.phase {
                        reached = heading.status == transport.status
                    }
                    // Nothing is heard during a preroll: Pause is true at once.
                    if case .prerolling = before.phase, transport.status == .paused { reached = true }
                    check(reached, "already reached: \(context)")
                case (_, .switched):
                    check(before.status == .stopped, "a switch keeps the status clients know: \(context)")
                default:
                    check(false, "status changed on an event that confirms nothing: \(context)")
                }
            }

            // Nothing contradicts itself.
            check((transport.status == .stopped) == (transport.settledEntry == nil), "\(context)")
            if transport.intent == .stopped { check(transport.state == .stopped, "\(context)") }
            if transport.isPlaying { check(transport.intent == .playing, "playing only when asked to: \(context)") }
            if case .prerolling(_, _, let queued?, _) = transport.phase {
                check(transport.upcomingEntry == queued.entry, "\(context)")
            }
            for action in actions {
                if case .load(_, .playing, _) = action { check(transport.intent == .playing, "\(context)") }
                if case .setState(.playing) = action { check(transport.intent == .playing, "\(context)") }
                if case .reselectClock = action { check(transport.intent == .playing, "\(context)") }
            }
            if transport.loaded == nil {
                check(transport.loadedEntry == nil && transport.pendingPosition == nil, "\(context)")
            }
            // A refused command is the owner's: the transport stays as it was.
            if actions.contains(.refused) {
                check(actions == [.refused] && transport == before && before.loaded == nil, "\(context)")
            }
            // A lost output waits, paused, on the entry clients were told of, if any.
            if case .outputLost(let load, _) = transport.phase, let shown = transport.shown {
                check(shown.status == .paused && shown.entry == load.entry, "\(context)")
            }
            // A stream pauses for its buffer only after clients were told of it.
            if case .buffering = transport.phase { check(transport.shown != nil, "\(context)") }
            if case .clockLost = event {
                check(transport == before, "a lost clock changes nothing clients see: \(context)")
            }
        }
    }
}
