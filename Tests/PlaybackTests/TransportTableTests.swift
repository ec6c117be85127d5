import TestKit
import Testing

@testable import Playback
@testable import PlaybackEngine

/// Every transport state against every input the reducer takes, one cell at a time. The
/// table says what the daemon should do; a cell it does not list is a no-op (no action, no
/// change). Cells where the reducer does otherwise are known issues, named in the table.
@Suite("Transport: every state against every input")
struct TransportTableTests {
    typealias Phase = Transport.Phase
    typealias Action = Transport.Action
    typealias Load = Transport.Load

    /// The states the transport can be in, each reached from a fresh one by the inputs a
    /// real session sends.
    enum State: String, CaseIterable {
        case idle, preroll, prerollSeek, prerollQueued, prerollPauseAsked
        case playing, paused, pausing, resuming, seeking, seekingPauseAsked, buffering, outputLost, retrying
    }

    /// Every input of the reducer, with fixed arguments.
    enum Input: String, CaseIterable {
        case loadPlaying, loadPaused, play, pause, stop, seek, seekNextTaken, rate
        case donePaused, donePausedPendingPlaying, donePlaying, reachedPaused, reachedPlaying
        case changeFailed, seekRefused, failedTrack, failedOutput, handOverFailed, noteFailure
        case prerollTimedOut, endOfStream, switched, buffering50, buffering100, prerollOverdue, stuck
        case checkedPaused, checkedPausedPendingPlaying, checkedPlaying
    }

    static let a = Load(entry: 1, uri: "file:///a.flac", position: nil)
    static let b = Load(entry: 2, uri: "file:///b.flac", position: nil)
    static let c = Load(entry: 3, uri: "file:///c.flac", position: nil)
    static func aAt(_ seconds: Int) -> Load { Load(entry: 1, uri: a.uri, position: .seconds(seconds)) }
    static func bAt(_ seconds: Int) -> Load { Load(entry: 2, uri: b.uri, position: .seconds(seconds)) }
    static let couldNotStart = "the pipeline could not start it"

    static func make(_ state: State) -> Transport {
        var t = Transport()
        switch state {
        case .idle: break
        case .preroll: _ = t.load(a, intent: .playing)
        case .prerollSeek: _ = t.load(aAt(5), intent: .playing)
        case .prerollQueued:
            t = make(.preroll)
            _ = t.load(b, intent: .playing)
        case .prerollPauseAsked:
            t = make(.preroll)
            _ = t.pause()
        case .playing:
            t = make(.preroll)
            _ = t.stateReached(.playing)
        case .paused:
            _ = t.load(a, intent: .paused)
            _ = t.asyncDone(current: .paused, pending: .voidPending)
        case .pausing:
            t = make(.playing)
            _ = t.pause()
        case .resuming:
            t = make(.paused)
            _ = t.play()
        case .seeking:
            t = make(.playing)
            _ = t.seek(to: .seconds(5))
        case .seekingPauseAsked:
            t = make(.seeking)
            _ = t.pause()
        case .buffering:
            t = make(.playing)
            _ = t.buffering(percent: 20)
        case .outputLost:
            t = make(.playing)
            _ = t.failed(reason: "gone", inOutput: true, position: .seconds(7))
        case .retrying:
            t = make(.playing)
            _ = t.stuck(position: .seconds(3))
        }
        return t
    }

    /// What each state is, spelled out: the table below reads against these.
    static let phases: [State: (Phase, intent: Player.Status, status: Player.Status)] = [
        .idle: (.idle, .stopped, .stopped),
        .preroll: (.prerolling(a, seek: nil, queued: nil), .playing, .stopped),
        .prerollSeek: (.prerolling(aAt(5), seek: .seconds(5), queued: nil), .playing, .stopped),
        .prerollQueued: (.prerolling(a, seek: nil, queued: b), .playing, .stopped),
        .prerollPauseAsked: (.prerolling(a, seek: nil, queued: nil), .paused, .stopped),
        .playing: (.loaded(a, reached: .playing), .playing, .playing),
        .paused: (.loaded(a, reached: .paused), .paused, .paused),
        .pausing: (.loaded(a, reached: nil), .paused, .playing),
        .resuming: (.loaded(a, reached: nil), .playing, .paused),
        .seeking: (.seeking(a, target: .seconds(5), reached: .playing), .playing, .playing),
        .seekingPauseAsked: (.seeking(a, target: .seconds(5), reached: .playing), .paused, .playing),
        .buffering: (.buffering(a), .playing, .playing),
        .outputLost: (.outputLost(a, at: .seconds(7)), .paused, .paused),
        .retrying: (.prerolling(aAt(3), seek: .seconds(3), queued: nil), .playing, .playing),
    ]

    static func apply(_ input: Input, to t: inout Transport) -> (actions: [Action], accepted: Bool?) {
        switch input {
        case .loadPlaying: return (t.load(b, intent: .playing), nil)
        case .loadPaused: return (t.load(bAt(7), intent: .paused), nil)
        case .play:
            let (handled, actions) = t.play()
            return (actions, handled)
        case .pause: return (t.pause(), nil)
        case .stop: return (t.stop(), nil)
        case .seek:
            let (accepted, actions) = t.seek(to: .seconds(9))
            return (actions, accepted)
        case .seekNextTaken:
            let (accepted, actions) = t.seek(to: .seconds(9), nextTaken: true)
            return (actions, accepted)
        case .rate: return (t.setRate(1.5, position: .seconds(4)), nil)
        case .donePaused: return (t.asyncDone(current: .paused, pending: .voidPending), nil)
        case .donePausedPendingPlaying: return (t.asyncDone(current: .paused, pending: .playing), nil)
        case .donePlaying: return (t.asyncDone(current: .playing, pending: .voidPending), nil)
        case .reachedPaused: return (t.stateReached(.paused), nil)
        case .reachedPlaying: return (t.stateReached(.playing), nil)
        case .changeFailed: return (t.stateChangeFailed(), nil)
        case .seekRefused: return (t.seekRefused(), nil)
        case .failedTrack: return (t.failed(reason: "x", inOutput: false, position: .seconds(2)), nil)
        case .failedOutput: return (t.failed(reason: "x", inOutput: true, position: .seconds(2)), nil)
        case .handOverFailed: return (t.handOverFailed(position: .seconds(3)), nil)
        case .noteFailure:
            t.noteFailure()
            return ([], nil)
        case .prerollTimedOut: return (t.prerollTimedOut(), nil)
        case .endOfStream: return (t.endOfStream(), nil)
        case .switched: return (t.switched(to: c), nil)
        case .buffering50: return (t.buffering(percent: 50), nil)
        case .buffering100: return (t.buffering(percent: 100), nil)
        case .prerollOverdue: return (t.prerollOverdue(), nil)
        case .stuck: return (t.stuck(position: .seconds(3)), nil)
        case .checkedPaused: return (t.stateChecked(current: .paused, pending: .voidPending), nil)
        case .checkedPausedPendingPlaying: return (t.stateChecked(current: .paused, pending: .playing), nil)
        case .checkedPlaying: return (t.stateChecked(current: .playing, pending: .voidPending), nil)
        }
    }

    /// What a cell leads to; nil fields stay as they were.
    struct Outcome {
        var phase: Phase?
        var intent: Player.Status?
        var status: Player.Status?
        var settled: Transport.EntryID??
        var actions: [Action] = []
        var pipelineFailed: Bool?
        var issue: String?
    }

    static func to(
        _ phase: Phase? = nil, intent: Player.Status? = nil, status: Player.Status? = nil,
        settled: Transport.EntryID?? = nil,
        _ actions: [Action] = [], failed: Bool? = nil, issue: String? = nil
    ) -> Outcome {
        Outcome(
            phase: phase, intent: intent, status: status, settled: settled, actions: actions, pipelineFailed: failed,
            issue: issue)
    }

    static func to(_ actions: [Action], failed: Bool? = nil, issue: String? = nil) -> Outcome {
        Outcome(actions: actions, pipelineFailed: failed, issue: issue)
    }

    static func preroll(_ load: Load, seek: Int? = nil, queued: Load? = nil) -> Phase {
        .prerolling(load, seek: seek.map { .seconds($0) }, queued: queued)
    }

    /// A load of `load` from scratch, toward `state`.
    static func loads(_ load: Load, _ state: Pipeline.State, fresh: Bool = false) -> [Action] {
        [.load(load, state, fresh: fresh)]
    }

    // Known issues the table found (see the commits that added them).

    /// The table. Each case is a cell where something should happen.
    static func expected(_ state: State, _ input: Input) -> Outcome? {
        let a = Self.a
        let b = Self.b
        let c = Self.c
        let prerolls: Set<State> = [.preroll, .prerollSeek, .prerollQueued, .prerollPauseAsked, .retrying]
        let loaded: Set<State> = [.playing, .paused, .pausing, .resuming, .seeking, .seekingPauseAsked, .buffering]
        /// The load of each state (for a state with none, a's).
        let load: Load =
            switch state {
            case .prerollSeek: aAt(5)
            case .retrying: aAt(3)
            default: a
            }
        switch (state, input) {
        // Loads: one during a preroll waits for it (playbin2 can deadlock otherwise).
        case (_, .loadPlaying) where prerolls.contains(state):
            return to(
                .prerolling(
                    load, seek: state == .prerollSeek ? .seconds(5) : state == .retrying ? .seconds(3) : nil, queued: b),
                intent: .playing, [.awaitPreroll])
        case (_, .loadPlaying): return to(preroll(b), intent: .playing, loads(b, .playing))
        case (_, .loadPaused) where prerolls.contains(state):
            return to(
                .prerolling(
                    load, seek: state == .prerollSeek ? .seconds(5) : state == .retrying ? .seconds(3) : nil,
                    queued: bAt(7)),
                intent: .paused, [.awaitPreroll])
        case (_, .loadPaused): return to(preroll(bAt(7), seek: 7), intent: .paused, loads(bAt(7), .paused))

        // Play: nothing loaded is the owner's to load; an output lost loads again where it was.
        case (.prerollPauseAsked, .play), (.seekingPauseAsked, .play): return to(intent: .playing)
        case (.paused, .play), (.pausing, .play), (.resuming, .play):
            return to(.loaded(a, reached: nil), intent: .playing, [.setState(.playing)])
        case (.outputLost, .play): return to(preroll(aAt(7), seek: 7), intent: .playing, loads(aAt(7), .paused))

        // Pause: a load or seek in progress settles paused once it is done (see the done cells).
        case (.preroll, .pause), (.prerollSeek, .pause), (.prerollQueued, .pause), (.seeking, .pause),
            (.retrying, .pause):
            return to(intent: .paused)
        // Asked again while pausing: harmless, and a pipeline that missed the first ask gets it.
        case (.playing, .pause), (.pausing, .pause), (.resuming, .pause), (.buffering, .pause):
            return to(.loaded(a, reached: nil), intent: .paused, [.setState(.paused)])

        // Stop: always Stopped at once; the owner shows the selected entry again.
        case (.idle, .stop): return to([.publish])
        case (_, .stop):
            return to(
                .idle, intent: .stopped, status: .stopped, settled: .some(nil), [.unload(fresh: false), .publish],
                failed: false)

        // Seek: during a preroll it goes with the load; an output lost just moves where Play resumes.
        case (.preroll, .seek), (.preroll, .seekNextTaken), (.prerollPauseAsked, .seek),
            (.prerollPauseAsked, .seekNextTaken):
            return to(preroll(a, seek: 9))
        case (.prerollSeek, .seek), (.prerollSeek, .seekNextTaken): return to(preroll(aAt(5), seek: 9))
        case (.retrying, .seek), (.retrying, .seekNextTaken): return to(preroll(aAt(3), seek: 9))
        case (.prerollQueued, .seek), (.prerollQueued, .seekNextTaken): return to(preroll(a, queued: bAt(9)))
        case (.outputLost, .seek), (.outputLost, .seekNextTaken): return to(.outputLost(a, at: .seconds(9)), [.publish])
        case (_, .seek) where loaded.contains(state):
            let reached: Player.Status? =
                [.playing, .seeking, .seekingPauseAsked].contains(state) ? .playing : state == .paused ? .paused : nil
            return to(.seeking(a, target: .seconds(9), reached: reached), [.seek(.seconds(9))])
        // The next track is already in playbin: the entry is loaded again there.
        case (_, .seekNextTaken) where loaded.contains(state):
            return to(preroll(aAt(9), seek: 9), loads(aAt(9), .paused))

        // Rate: applied by a seek where the stream is, or once a preroll ends.
        case (.idle, .rate), (.outputLost, .rate): return to([.publish])
        case (.preroll, .rate), (.prerollPauseAsked, .rate): return to(preroll(a, seek: 0))
        case (_, .rate) where loaded.contains(state):
            let reached: Player.Status? =
                [.playing, .seeking, .seekingPauseAsked].contains(state) ? .playing : state == .paused ? .paused : nil
            return to(.seeking(a, target: .seconds(4), reached: reached), [.seek(.seconds(4))])

        // ASYNC_DONE: a preroll goes on to its seek, its queued load, or its state.
        case (.prerollSeek, .donePaused), (.prerollSeek, .donePausedPendingPlaying), (.prerollSeek, .donePlaying):
            return to(.seeking(aAt(5), target: .seconds(5), reached: nil), [.seek(.seconds(5))])
        case (.retrying, .donePaused), (.retrying, .donePausedPendingPlaying), (.retrying, .donePlaying):
            return to(.seeking(aAt(3), target: .seconds(3), reached: nil), [.seek(.seconds(3))])
        case (.prerollQueued, .donePaused), (.prerollQueued, .donePausedPendingPlaying), (.prerollQueued, .donePlaying),
            (.prerollQueued, .endOfStream), (.prerollQueued, .prerollOverdue):
            return to(preroll(b), loads(b, .playing))
        case (.preroll, .donePaused): return to(.loaded(a, reached: nil), [.setState(.playing)])
        case (.preroll, .donePausedPendingPlaying): return to(.loaded(a, reached: nil))
        case (.preroll, .donePlaying), (.preroll, .reachedPlaying):
            return to(.loaded(a, reached: .playing), status: .playing, settled: 1, [.publish])
        case (.resuming, .donePlaying), (.resuming, .reachedPlaying), (.resuming, .checkedPlaying):
            return to(.loaded(a, reached: .playing), status: .playing, [.publish])
        case (.prerollPauseAsked, .donePaused), (.pausing, .donePaused), (.seekingPauseAsked, .donePaused),
            (.pausing, .reachedPaused), (.pausing, .checkedPaused):
            return to(.loaded(a, reached: .paused), status: .paused, settled: 1, [.publish])
        // The pipeline heads for, or reached, PLAYING though Pause came meanwhile: it is paused.
        case (.prerollPauseAsked, .donePausedPendingPlaying), (.prerollPauseAsked, .donePlaying),
            (.prerollPauseAsked, .reachedPlaying),
            (.seekingPauseAsked, .donePausedPendingPlaying), (.seekingPauseAsked, .donePlaying):
            return to(.loaded(a, reached: nil), [.setState(.paused)])
        case (.seekingPauseAsked, .seekRefused):
            return to(.loaded(a, reached: nil), [.publish, .setState(.paused)])
        // A report of PLAYING while paused or pausing (a late one): PAUSED is asked for again.
        case (.paused, .donePausedPendingPlaying), (.paused, .donePlaying), (.pausing, .donePausedPendingPlaying),
            (.pausing, .donePlaying):
            return to([.setState(.paused)])
        case (.playing, .donePaused), (.resuming, .donePaused): return to([.setState(.playing)])

        // A state not confirmed in time, asked of the pipeline: one not on its way is asked
        // for again (a report GStreamer never sent); one under way is left to finish. Only a
        // transport that waits for a confirmation asks.
        case (.resuming, .checkedPaused): return to([.setState(.playing)])
        case (.pausing, .checkedPlaying), (.pausing, .checkedPausedPendingPlaying): return to([.setState(.paused)])
        // A seek done: clients hear of the new timing once.
        case (.seeking, .donePaused): return to(.loaded(a, reached: nil), [.publish, .setState(.playing)])
        case (.seeking, .donePausedPendingPlaying): return to(.loaded(a, reached: nil), [.publish])
        case (.seeking, .donePlaying): return to(.loaded(a, reached: .playing), [.publish])
        case (.seeking, .seekRefused): return to(.loaded(a, reached: .playing), [.publish])

        // Failures: the track is skipped (to NULL after an error); the output pauses where it was.
        case (.prerollQueued, .changeFailed):
            return to(preroll(b), [.skip(1, reason: couldNotStart)] + loads(b, .playing))
        case (_, .changeFailed) where state != .idle && state != .outputLost:
            return to(.idle, [.unload(fresh: false), .skip(1, reason: couldNotStart)])
        case (.idle, .failedTrack), (.outputLost, .failedTrack), (.idle, .failedOutput), (.outputLost, .failedOutput),
            (.idle, .handOverFailed), (.outputLost, .handOverFailed), (_, .noteFailure):
            return to(failed: true)
        case (.prerollQueued, .failedTrack):
            return to(preroll(b), [.skip(1, reason: "x")] + loads(b, .playing, fresh: true), failed: false)
        case (_, .failedTrack): return to(.idle, [.unload(fresh: true), .skip(1, reason: "x")], failed: false)
        case (.prerollQueued, .failedOutput):
            return to(
                .outputLost(b, at: .seconds(2)), intent: .paused, status: .paused, settled: 2,
                [.unload(fresh: true), .publish],
                failed: false)
        case (_, .failedOutput):
            return to(
                .outputLost(load, at: .seconds(2)), intent: .paused, status: .paused, settled: 1,
                [.unload(fresh: true), .publish], failed: false)
        case (.prerollQueued, .handOverFailed): return to(preroll(b), loads(b, .playing, fresh: true), failed: false)
        case (_, .handOverFailed):
            return to(preroll(aAt(3), seek: 3), loads(aAt(3), .paused, fresh: true), failed: false)

        // A preroll that never ends is loaded again from NULL, toward what is asked now.
        case (.preroll, .prerollTimedOut): return to(loads(a, .playing, fresh: true), failed: false)
        case (.prerollPauseAsked, .prerollTimedOut): return to(loads(a, .paused, fresh: true), failed: false)
        case (.prerollSeek, .prerollTimedOut), (.retrying, .prerollTimedOut):
            return to(loads(load, .paused, fresh: true), failed: false)

        case (_, .endOfStream) where state != .idle && state != .outputLost: return to([.advance(from: 1)])

        // A gapless switch: the new entry is what clients see, in the status they know.
        case (.prerollQueued, .switched): return to(preroll(b), loads(b, .playing))
        case (.prerollPauseAsked, .switched):
            return to(.loaded(c, reached: nil), [.setState(.paused)])
        case (.preroll, .switched), (.prerollSeek, .switched):
            return to(.loaded(c, reached: nil), status: .playing, settled: 3, [.publish])
        case (.playing, .switched): return to(.loaded(c, reached: .playing), settled: 3, [.publish])
        case (.paused, .switched): return to(.loaded(c, reached: .paused), settled: 3, [.publish])
        case (_, .switched) where loaded.contains(state) || state == .retrying:
            return to(.loaded(c, reached: nil), settled: 3, [.publish])

        // A stream that should play pauses while its buffer fills, unseen by clients; only
        // once PLAYING is confirmed (resuming, the pipeline is still on its way).
        case (.playing, .buffering50): return to(.buffering(a), [.setState(.paused)])
        case (.buffering, .buffering100): return to(.loaded(a, reached: nil), [.setState(.playing)])

        // Stuck: replaced and loaded again where it was asked for; stuck twice: Paused there.
        case (.idle, .stuck), (.outputLost, .stuck): return to([.replacePipeline], failed: false)
        case (.retrying, .stuck):
            return to(
                .outputLost(aAt(3), at: .seconds(3)), intent: .paused, status: .paused, settled: 1,
                [.replacePipeline, .publish])
        case (_, .stuck):
            let restart =
                switch state {
                case .preroll, .prerollPauseAsked: aAt(0)
                case .prerollSeek, .seeking, .seekingPauseAsked: aAt(5)
                case .prerollQueued: bAt(0)
                default: aAt(3)
                }
            return to(
                .prerolling(restart, seek: restart.position, queued: nil), [.replacePipeline] + loads(restart, .paused),
                failed: false)

        default:
            return nil
        }
    }

    @Test("each state is what its name says")
    func statesAreWhatTheySay() {
        for state in State.allCases {
            let t = Self.make(state)
            let (phase, intent, status) = Self.phases[state]!
            #expect(
                t.phase == phase && t.intent == intent && t.status == status,
                "\(state): \(t.phase) [\(t.intent) → \(t.status)]")
        }
    }

    @Test("every cell: the next state and actions the table gives, and the invariants", arguments: State.allCases)
    func cells(state: State) {
        for input in Input.allCases {
            var t = Self.make(state)
            let before = t
            let (actions, accepted) = Self.apply(input, to: &t)
            let cell =
                "\(state) × \(input): \(before.phase) [\(before.status)] → \(t.phase) [\(t.intent) → \(t.status)] \(actions)"

            let outcome = Self.expected(state, input) ?? Outcome()
            let expectedAccepted = !(state == .idle && [.play, .seek, .seekNextTaken].contains(input))
            let compare = {
                checkInvariants(before: before, after: t, input: input, actions: actions, cell)
                #expect(t.phase == outcome.phase ?? before.phase, "phase: \(cell)")
                #expect(t.intent == outcome.intent ?? before.intent, "intent: \(cell)")
                #expect(t.status == outcome.status ?? before.status, "status: \(cell)")
                #expect(t.settledEntry == outcome.settled ?? before.settledEntry, "settled entry: \(cell)")
                #expect(actions == outcome.actions, "actions: \(cell)")
                #expect(
                    t.pipelineFailed == outcome.pipelineFailed ?? before.pipelineFailed,
                    "next teardown to NULL: \(cell)")
                #expect(t.rate == (input == .rate ? 1.5 : before.rate), "rate: \(cell)")
                if let accepted { #expect(accepted == expectedAccepted, "accepted: \(cell)") }
            }
            if let issue = outcome.issue {
                withKnownIssue("\(issue): \(state) × \(input)", compare)
            } else {
                compare()
            }
        }
    }

    /// What holds in every cell, whatever the table says.
    func checkInvariants(before: Transport, after: Transport, input: Input, actions: [Action], _ cell: String) {
        let publications = actions.filter { $0 == .publish }.count
        #expect(publications <= 1, "at most one publication per step: \(cell)")
        if after.status != before.status || after.settledEntry != before.settledEntry {
            #expect(publications == 1, "a change clients see is published: \(cell)")
        }
        #expect((after.status == .stopped) == (after.settledEntry == nil), "\(cell)")
        guard after.status != before.status else { return }
        // The published status is one the pipeline confirmed, or the plain truth that
        // nothing plays (stopped, or paused with nothing loaded).
        switch (after.status, input) {
        case (.stopped, .stop): break
        case (.paused, .failedOutput), (.paused, .stuck):
            #expect(after.loadedEntry == nil, "paused because nothing can play: \(cell)")
        case (.playing, .reachedPlaying), (.playing, .donePlaying), (.paused, .reachedPaused), (.paused, .donePaused),
            (.playing, .checkedPlaying), (.paused, .checkedPaused):
            break
        case (_, .switched):
            // playbin switched streams, so it plays: the status clients know is kept, or,
            // from stopped, the one asked for (playing is the only one a switch confirms).
            #expect(before.status == .stopped && after.status == .playing, "a switch confirms only playing: \(cell)")
        default:
            Issue.record("status changed on an input that confirms nothing: \(cell)")
        }
    }
}
