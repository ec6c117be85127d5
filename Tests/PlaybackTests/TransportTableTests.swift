import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// Every transport state against every input the reducer takes, one cell at a time. The
/// states are the type's own values (``Transport/State``); each is one a real session
/// reaches. The table says what the daemon should do; a cell it does not list is a no-op
/// (no action, no change). Cells where the reducer does otherwise are known issues, named in
/// the table.
@Suite("Transport: every state against every input")
struct TransportTableTests {
    typealias State = Transport.State
    typealias Phase = Transport.Phase
    typealias Action = Transport.Action
    typealias Load = Transport.Load
    typealias Shown = Transport.Shown

    /// Every input of the reducer, with fixed arguments.
    enum Input: String, CaseIterable {
        case loadPlaying, loadPaused, play, pause, stop, seek, seekNextTaken, rate
        case donePaused, donePausedPendingPlaying, donePlaying, reachedPaused, reachedPlaying
        case changeFailed, seekRefused, failedTrack, failedOutput, handOverFailed, failedElsewhere
        case prerollTimedOut, endOfStream, switched, buffering50, buffering100, prerollOverdue, stuck
        case checkedPaused, checkedPausedPendingPlaying, checkedPausedPendingPaused, checkedPlaying
    }

    static let a = Load(entry: 1, uri: "file:///a.flac", position: nil)
    static let b = Load(entry: 2, uri: "file:///b.flac", position: nil)
    static let c = Load(entry: 3, uri: "file:///c.flac", position: nil)
    static func aAt(_ seconds: Int) -> Load { Load(entry: 1, uri: a.uri, position: .seconds(seconds)) }
    static func bAt(_ seconds: Int) -> Load { Load(entry: 2, uri: b.uri, position: .seconds(seconds)) }
    static let couldNotStart = "the pipeline could not start it"
    /// Clients were told a plays, or is paused.
    static let shownPlaying = Shown(status: .playing, entry: 1)
    static let shownPaused = Shown(status: .paused, entry: 1)

    static func preroll(
        _ load: Load, seek: Int? = nil, queued: Load? = nil, toward heading: Transport.Heading = .playing
    ) -> Phase {
        .prerolling(load, seek: seek.map { .seconds($0) }, queued: queued, toward: heading)
    }

    // The states the table starts from: each of the type's cases, with the data a session gives them.
    static let stopped = State.stopped
    static let failed = State.active(.idle(.playing), shown: shownPlaying)
    static let prerolling = State.active(preroll(a), shown: nil)
    static let prerollingToSeek = State.active(preroll(aAt(5), seek: 5), shown: nil)
    static let prerollingQueued = State.active(preroll(a, queued: b), shown: nil)
    static let prerollingPauseAsked = State.active(preroll(a, toward: .paused), shown: nil)
    static let retrying = State.active(
        preroll(aAt(3), seek: 3), shown: Shown(status: .playing, entry: 1, reloaded: true))
    static let playing = State.active(.loaded(a, .playing, confirmed: true), shown: shownPlaying)
    static let paused = State.active(.loaded(a, .paused, confirmed: true), shown: shownPaused)
    static let pausing = State.active(.loaded(a, .paused, confirmed: false), shown: shownPlaying)
    static let resuming = State.active(.loaded(a, .playing, confirmed: false), shown: shownPaused)
    static let seeking = State.active(
        .seeking(a, target: .seconds(5), reached: .playing, toward: .playing), shown: shownPlaying)
    static let seekingPauseAsked = State.active(
        .seeking(a, target: .seconds(5), reached: .playing, toward: .paused), shown: shownPlaying)
    static let buffering = State.active(.buffering(a), shown: shownPlaying)
    static let outputLost = State.active(.outputLost(a, at: .seconds(7)), shown: shownPaused)

    /// The rows: each state, with the transport's other facts as a session leaves them.
    static let rows: [Transport] =
        [
            stopped, failed, prerolling, prerollingToSeek, prerollingQueued, prerollingPauseAsked, playing, paused,
            pausing, resuming, seeking, seekingPauseAsked, buffering, outputLost,
        ].map { Transport($0) } + [
            Transport(retrying, retryingAfterStuck: .init(entry: 1)),
            // Resuming, and a state check found the change to PLAYING under way already.
            Transport(resuming, changeUnderWay: true),
        ]

    static let prerolls = [prerolling, prerollingToSeek, prerollingQueued, prerollingPauseAsked, retrying]
    static let loaded = [playing, paused, pausing, resuming, seeking, seekingPauseAsked, buffering]
    /// Nothing is in the pipeline.
    static let empty = [stopped, failed, outputLost]

    /// How a real session reaches each row, from a fresh transport.
    static func reach(_ state: State) -> Transport {
        var t = Transport()
        switch state {
        case Self.failed:
            t = reach(playing)
            _ = t.failed(reason: "broken", inOutput: false, position: .zero)
        case Self.prerolling: _ = t.load(a, intent: .playing)
        case Self.prerollingToSeek: _ = t.load(aAt(5), intent: .playing)
        case Self.prerollingQueued:
            t = reach(prerolling)
            _ = t.load(b, intent: .playing)
        case Self.prerollingPauseAsked:
            t = reach(prerolling)
            _ = t.pause()
        case Self.playing:
            t = reach(prerolling)
            _ = t.stateReached(.playing)
        case Self.paused:
            _ = t.load(a, intent: .paused)
            _ = t.asyncDone(current: .paused, pending: .voidPending)
        case Self.pausing:
            t = reach(playing)
            _ = t.pause()
        case Self.resuming:
            t = reach(paused)
            _ = t.play()
        case Self.seeking:
            t = reach(playing)
            _ = t.seek(to: .seconds(5))
        case Self.seekingPauseAsked:
            t = reach(seeking)
            _ = t.pause()
        case Self.buffering:
            t = reach(playing)
            _ = t.buffering(percent: 20)
        case Self.outputLost:
            t = reach(playing)
            _ = t.failed(reason: "gone", inOutput: true, position: .seconds(7))
        case Self.retrying:
            t = reach(playing)
            _ = t.stuck(position: .seconds(3))
        default: break
        }
        return t
    }

    static func apply(_ input: Input, to t: inout Transport) -> [Action] {
        switch input {
        case .loadPlaying: t.load(b, intent: .playing)
        case .loadPaused: t.load(bAt(7), intent: .paused)
        case .play: t.play()
        case .pause: t.pause()
        case .stop: t.stop()
        case .seek: t.seek(to: .seconds(9))
        case .seekNextTaken: t.seek(to: .seconds(9), nextTaken: true)
        case .rate: t.setRate(1.5, position: .seconds(4))
        case .donePaused: t.asyncDone(current: .paused, pending: .voidPending)
        case .donePausedPendingPlaying: t.asyncDone(current: .paused, pending: .playing)
        case .donePlaying: t.asyncDone(current: .playing, pending: .voidPending)
        case .reachedPaused: t.stateReached(.paused)
        case .reachedPlaying: t.stateReached(.playing)
        case .changeFailed: t.stateChangeFailed()
        case .seekRefused: t.seekRefused()
        case .failedTrack: t.failed(reason: "x", inOutput: false, position: .seconds(2))
        case .failedOutput: t.failed(reason: "x", inOutput: true, position: .seconds(2))
        case .handOverFailed: t.handOverFailed(position: .seconds(3))
        case .failedElsewhere: t.failedElsewhere()
        case .prerollTimedOut: t.prerollTimedOut()
        case .endOfStream: t.endOfStream()
        case .switched: t.switched(to: c)
        case .buffering50: t.buffering(percent: 50)
        case .buffering100: t.buffering(percent: 100)
        case .prerollOverdue: t.prerollOverdue()
        case .stuck: t.stuck(position: .seconds(3))
        case .checkedPaused: t.stateChecked(current: .paused, pending: .voidPending)
        case .checkedPausedPendingPlaying: t.stateChecked(current: .paused, pending: .playing)
        case .checkedPausedPendingPaused: t.stateChecked(current: .paused, pending: .paused)
        case .checkedPlaying: t.stateChecked(current: .playing, pending: .voidPending)
        }
    }

    /// What a cell leads to; nil fields stay as they were.
    struct Outcome {
        var state: State?
        var actions: [Action] = []
        var pipelineFailed: Bool?
    }

    static func to(_ state: State, _ actions: [Action] = [], failed: Bool? = nil) -> Outcome {
        Outcome(state: state, actions: actions, pipelineFailed: failed)
    }

    static func to(_ actions: [Action], failed: Bool? = nil) -> Outcome {
        Outcome(actions: actions, pipelineFailed: failed)
    }

    static func to(failed: Bool) -> Outcome { Outcome(pipelineFailed: failed) }

    /// A load of `load` from scratch, toward `state`.
    static func loads(_ load: Load, _ state: Pipeline.State, fresh: Bool = false) -> [Action] {
        [.load(load, state, fresh: fresh)]
    }

    /// The table. Each case is a cell where something should happen.
    static func expected(_ row: Transport, _ input: Input) -> Outcome? {
        let a = Self.a
        let b = Self.b
        let c = Self.c
        let state = row.state
        /// The row's load (for a state with none, a's), heading and what clients were told.
        let load = row.loaded ?? a
        let heading = row.heading ?? .playing
        let shown = row.shown
        /// What clients were told, with a load started since.
        var restarted = shown
        restarted?.reloaded = true
        /// The state confirmed before a seek from the row.
        let reached: Transport.Heading? =
            switch state {
            case Self.playing, Self.seeking, Self.seekingPauseAsked: .playing
            case Self.paused: .paused
            default: nil
            }
        switch (state, input) {
        // Loads: one during a preroll waits for it (playbin2 can deadlock otherwise).
        case (.active(.prerolling(let load, let seek, _, _), let shown), .loadPlaying):
            return to(
                .active(.prerolling(load, seek: seek, queued: b, toward: .playing), shown: shown), [.awaitPreroll])
        case (_, .loadPlaying): return to(.active(preroll(b), shown: restarted), loads(b, .playing))
        case (.active(.prerolling(let load, let seek, _, _), let shown), .loadPaused):
            return to(
                .active(.prerolling(load, seek: seek, queued: bAt(7), toward: .paused), shown: shown), [.awaitPreroll])
        case (_, .loadPaused):
            return to(.active(preroll(bAt(7), seek: 7, toward: .paused), shown: restarted), loads(bAt(7), .paused))

        // Play: nothing loaded is the owner's to load; an output lost loads again where it was.
        case (Self.stopped, .play), (Self.failed, .play): return to([.refused])
        case (Self.prerollingPauseAsked, .play): return to(Self.prerolling)
        case (Self.seekingPauseAsked, .play): return to(Self.seeking)
        case (Self.paused, .play), (Self.pausing, .play), (Self.resuming, .play):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: shown), [.setState(.playing)])
        case (Self.outputLost, .play):
            return to(.active(preroll(aAt(7), seek: 7), shown: restarted), loads(aAt(7), .paused))

        // Pause: a load or seek in progress settles paused once it is done (see the done cells).
        // Nothing is heard during a preroll: clients told Playing are told Paused at once.
        case (.active(.prerolling(let load, let seek, let queued, _), let shown?), .pause)
        where shown.status == .playing:
            let told = Shown(status: .paused, entry: shown.entry, reloaded: shown.reloaded)
            return to(.active(.prerolling(load, seek: seek, queued: queued, toward: .paused), shown: told), [.publish])
        case (.active(.prerolling(let load, let seek, let queued, _), let shown), .pause):
            return to(.active(.prerolling(load, seek: seek, queued: queued, toward: .paused), shown: shown))
        case (Self.seeking, .pause): return to(Self.seekingPauseAsked)
        case (Self.failed, .pause): return to(.active(.idle(.paused), shown: shown))
        // Asked again while pausing: harmless, and a pipeline that missed the first ask gets it.
        case (Self.playing, .pause), (Self.pausing, .pause), (Self.resuming, .pause), (Self.buffering, .pause):
            return to(.active(.loaded(a, .paused, confirmed: false), shown: shown), [.setState(.paused)])

        // Stop: always Stopped at once; the owner shows the selected entry again.
        case (Self.stopped, .stop), (Self.failed, .stop): return to(.stopped, [.publish])
        case (_, .stop): return to(.stopped, [.unload(fresh: false), .publish], failed: false)

        // Seek: during a preroll it goes with the load; an output lost just moves where Play resumes.
        case (Self.stopped, .seek), (Self.stopped, .seekNextTaken), (Self.failed, .seek), (Self.failed, .seekNextTaken):
            return to([.refused])
        case (.active(.prerolling(let load, _, nil, let heading), let shown), .seek),
            (.active(.prerolling(let load, _, nil, let heading), let shown), .seekNextTaken):
            return to(.active(.prerolling(load, seek: .seconds(9), queued: nil, toward: heading), shown: shown))
        case (Self.prerollingQueued, .seek), (Self.prerollingQueued, .seekNextTaken):
            return to(.active(preroll(a, queued: bAt(9)), shown: nil))
        case (Self.outputLost, .seek), (Self.outputLost, .seekNextTaken):
            return to(.active(.outputLost(a, at: .seconds(9)), shown: shown), [.publish])
        case (_, .seek) where loaded.contains(state):
            return to(
                .active(.seeking(a, target: .seconds(9), reached: reached, toward: heading), shown: shown),
                [.seek(.seconds(9))])
        // The next track is already in playbin: the entry is loaded again there.
        case (_, .seekNextTaken) where loaded.contains(state):
            return to(.active(preroll(aAt(9), seek: 9, toward: heading), shown: restarted), loads(aAt(9), .paused))

        // Rate: applied by a seek where the stream is, or once a preroll ends.
        case (_, .rate) where empty.contains(state): return to([.publish])
        case (Self.prerolling, .rate), (Self.prerollingPauseAsked, .rate):
            return to(.active(preroll(a, seek: 0, toward: heading), shown: nil))
        case (_, .rate) where loaded.contains(state):
            return to(
                .active(.seeking(a, target: .seconds(4), reached: reached, toward: heading), shown: shown),
                [.seek(.seconds(4))])

        // ASYNC_DONE: a preroll goes on to its seek, its queued load, or its state.
        case (Self.prerollingToSeek, .donePaused), (Self.prerollingToSeek, .donePausedPendingPlaying),
            (Self.prerollingToSeek, .donePlaying), (Self.retrying, .donePaused),
            (Self.retrying, .donePausedPendingPlaying), (Self.retrying, .donePlaying):
            return to(
                .active(.seeking(load, target: load.position, reached: nil, toward: .playing), shown: shown),
                [.seek(load.position!)])
        case (Self.prerollingQueued, .donePaused), (Self.prerollingQueued, .donePausedPendingPlaying),
            (Self.prerollingQueued, .donePlaying), (Self.prerollingQueued, .endOfStream),
            (Self.prerollingQueued, .prerollOverdue):
            return to(.active(preroll(b), shown: nil), loads(b, .playing))
        case (Self.prerolling, .donePaused):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: nil), [.setState(.playing)])
        case (Self.prerolling, .donePausedPendingPlaying):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: nil))
        case (Self.prerolling, .donePlaying), (Self.prerolling, .reachedPlaying): return to(Self.playing, [.publish])
        case (Self.resuming, .donePlaying), (Self.resuming, .reachedPlaying), (Self.resuming, .checkedPlaying):
            return to(Self.playing, [.publish])
        case (Self.prerollingPauseAsked, .donePaused), (Self.pausing, .donePaused),
            (Self.seekingPauseAsked, .donePaused), (Self.pausing, .reachedPaused), (Self.pausing, .checkedPaused):
            return to(Self.paused, [.publish])
        // PAUSED with a preroll GStreamer never finishes (after a pause overtook its change to
        // PLAYING): nothing is heard, so it is paused.
        case (Self.pausing, .checkedPausedPendingPaused): return to(Self.paused, [.publish])
        // The pipeline heads for, or reached, PLAYING though Pause came meanwhile: it is paused.
        case (Self.prerollingPauseAsked, .donePausedPendingPlaying), (Self.prerollingPauseAsked, .donePlaying),
            (Self.prerollingPauseAsked, .reachedPlaying),
            (Self.seekingPauseAsked, .donePausedPendingPlaying), (Self.seekingPauseAsked, .donePlaying):
            return to(.active(.loaded(a, .paused, confirmed: false), shown: shown), [.setState(.paused)])
        case (Self.seekingPauseAsked, .seekRefused): return to(Self.pausing, [.publish, .setState(.paused)])
        // A report of PLAYING while paused or pausing (a late one): PAUSED is asked for again.
        case (Self.paused, .donePausedPendingPlaying), (Self.paused, .donePlaying),
            (Self.pausing, .donePausedPendingPlaying), (Self.pausing, .donePlaying):
            return to([.setState(.paused)])
        case (Self.playing, .donePaused), (Self.resuming, .donePaused): return to([.setState(.playing)])

        // A state not confirmed in time, asked of the pipeline: one not on its way is asked
        // for again (a report GStreamer never sent); one under way is left to finish. Only a
        // transport that waits for a confirmation asks.
        case (Self.resuming, .checkedPaused), (Self.resuming, .checkedPausedPendingPaused):
            return to([.setState(.playing)])
        // Found under way at a second check in a row: taken for stalled, the entry is loaded
        // again where it was, from NULL (GStreamer can leave one so after a gapless switch).
        case (Self.resuming, .checkedPausedPendingPlaying) where row.changeUnderWay:
            // At zero: a fresh load starts there, with no seek.
            return to(
                .active(preroll(aAt(0)), shown: restarted), loads(aAt(0), .playing, fresh: true),
                failed: false)
        case (Self.pausing, .checkedPlaying), (Self.pausing, .checkedPausedPendingPlaying):
            return to([.setState(.paused)])
        // A seek done: clients hear of the new timing once.
        case (Self.seeking, .donePaused):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: shown), [.publish, .setState(.playing)])
        case (Self.seeking, .donePausedPendingPlaying):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: shown), [.publish])
        case (Self.seeking, .donePlaying), (Self.seeking, .seekRefused): return to(Self.playing, [.publish])

        // Failures: the track is skipped (to NULL after an error); the output pauses where it was.
        case (Self.prerollingQueued, .changeFailed):
            return to(.active(preroll(b), shown: nil), [.skip(1, reason: couldNotStart)] + loads(b, .playing))
        case (_, .changeFailed) where !empty.contains(state):
            return to(.active(.idle(heading), shown: shown), [.unload(fresh: false), .skip(1, reason: couldNotStart)])
        case (_, .failedTrack) where empty.contains(state), (_, .failedOutput) where empty.contains(state),
            (_, .handOverFailed) where empty.contains(state), (_, .failedElsewhere):
            return to(failed: true)
        case (Self.prerollingQueued, .failedTrack):
            return to(
                .active(preroll(b), shown: nil), [.skip(1, reason: "x")] + loads(b, .playing, fresh: true),
                failed: false)
        case (_, .failedTrack):
            return to(
                .active(.idle(heading), shown: shown), [.unload(fresh: true), .skip(1, reason: "x")], failed: false)
        case (Self.prerollingQueued, .failedOutput):
            return to(
                .active(.outputLost(b, at: .seconds(2)), shown: Shown(status: .paused, entry: 2)),
                [.unload(fresh: true), .publish], failed: false)
        case (_, .failedOutput):
            return to(
                .active(.outputLost(load, at: .seconds(2)), shown: shownPaused), [.unload(fresh: true), .publish],
                failed: false)
        case (Self.prerollingQueued, .handOverFailed):
            return to(.active(preroll(b), shown: nil), loads(b, .playing, fresh: true), failed: false)
        case (_, .handOverFailed):
            return to(
                .active(preroll(aAt(3), seek: 3, toward: heading), shown: restarted),
                loads(aAt(3), .paused, fresh: true), failed: false)

        // A preroll that never ends is loaded again from NULL, toward what is asked now.
        case (Self.prerolling, .prerollTimedOut): return to(loads(a, .playing, fresh: true), failed: false)
        case (Self.prerollingPauseAsked, .prerollTimedOut): return to(loads(a, .paused, fresh: true), failed: false)
        case (Self.prerollingToSeek, .prerollTimedOut), (Self.retrying, .prerollTimedOut):
            return to(loads(load, .paused, fresh: true), failed: false)

        case (_, .endOfStream) where !empty.contains(state): return to([.advance(from: 1)])

        // A gapless switch: the new entry is what clients see, in the status they know.
        case (Self.prerollingQueued, .switched): return to(.active(preroll(b), shown: nil), loads(b, .playing))
        case (Self.prerollingPauseAsked, .switched):
            return to(.active(.loaded(c, .paused, confirmed: false), shown: nil), [.setState(.paused)])
        case (Self.prerolling, .switched), (Self.prerollingToSeek, .switched):
            return to(
                .active(.loaded(c, .playing, confirmed: false), shown: Shown(status: .playing, entry: 3)), [.publish])
        case (Self.playing, .switched), (Self.paused, .switched):
            return to(
                .active(.loaded(c, heading, confirmed: true), shown: Shown(status: heading, entry: 3)), [.publish])
        case (_, .switched) where loaded.contains(state) || state == Self.retrying:
            return to(
                .active(.loaded(c, heading, confirmed: false), shown: Shown(status: shown!.status, entry: 3)),
                [.publish])

        // A stream that should play pauses while its buffer fills, unseen by clients; only
        // once PLAYING is confirmed (resuming, the pipeline is still on its way).
        case (Self.playing, .buffering50): return to(Self.buffering, [.setState(.paused)])
        case (Self.buffering, .buffering100):
            return to(.active(.loaded(a, .playing, confirmed: false), shown: shown), [.setState(.playing)])

        // Stuck: replaced and loaded again where it was asked for; stuck twice before the retry
        // played: Paused there (after it played, skipped: TransportTests).
        case (_, .stuck) where empty.contains(state): return to([.replacePipeline], failed: false)
        case (Self.retrying, .stuck):
            return to(
                .active(.outputLost(aAt(3), at: .seconds(3)), shown: shownPaused), [.replacePipeline, .publish])
        case (_, .stuck):
            let restart =
                switch state {
                case Self.prerolling, Self.prerollingPauseAsked: aAt(0)
                case Self.prerollingToSeek, Self.seeking, Self.seekingPauseAsked: aAt(5)
                case Self.prerollingQueued: bAt(0)
                default: aAt(3)
                }
            // A restart at zero needs no seek: a fresh load starts there.
            let seek = restart.position.flatMap { $0 > .zero ? $0 : nil }
            let target: Pipeline.State = heading == .playing && seek == nil ? .playing : .paused
            return to(
                .active(.prerolling(restart, seek: seek, queued: nil, toward: heading), shown: restarted),
                [.replacePipeline] + loads(restart, target), failed: false)

        default:
            return nil
        }
    }

    @Test("each state the table starts from is one a session reaches")
    func rowsAreReached() {
        for row in Self.rows where row.state != .stopped {
            var reached = Self.reach(row.state)
            if row.changeUnderWay { _ = reached.stateChecked(current: .paused, pending: .playing) }
            #expect(reached == row, "\(row.state): reached \(reached.state)")
        }
    }

    @Test("every cell: the next state and actions the table gives, and the invariants", arguments: Self.rows)
    func cells(row: Transport) {
        for input in Input.allCases {
            var t = row
            let actions = Self.apply(input, to: &t)
            let cell = "\(row.state) × \(input): → \(t.state) \(actions)"

            let outcome = Self.expected(row, input) ?? Outcome()
            checkInvariants(before: row, after: t, input: input, actions: actions, cell)
            #expect(t.state == outcome.state ?? row.state, "state: \(cell)")
            #expect(actions == outcome.actions, "actions: \(cell)")
            #expect(t.pipelineFailed == outcome.pipelineFailed ?? row.pipelineFailed, "next teardown to NULL: \(cell)")
            #expect(t.rate == (input == .rate ? 1.5 : row.rate), "rate: \(cell)")
        }
    }

    /// What holds in every cell, whatever the table says.
    func checkInvariants(before: Transport, after: Transport, input: Input, actions: [Action], _ cell: String) {
        let publications = actions.filter { $0 == .publish }.count
        #expect(publications <= 1, "at most one publication per step: \(cell)")
        if after.status != before.status || after.settledEntry != before.settledEntry {
            #expect(publications == 1, "a change clients see is published: \(cell)")
        }
        if actions.contains(.refused) {
            #expect(actions == [.refused] && after == before, "a refused command changes nothing: \(cell)")
        }
        guard after.status != before.status else { return }
        // The published status is one the pipeline confirmed, or the plain truth that
        // nothing plays (stopped, or paused with nothing loaded).
        switch (after.status, input) {
        case (.stopped, .stop): break
        case (.paused, .failedOutput), (.paused, .stuck):
            #expect(after.loadedEntry == nil, "paused because nothing can play: \(cell)")
        case (.playing, .reachedPlaying), (.playing, .donePlaying), (.paused, .reachedPaused), (.paused, .donePaused),
            (.playing, .checkedPlaying), (.paused, .checkedPaused), (.paused, .checkedPausedPendingPaused):
            break
        case (.paused, .pause) where before.phase.map({ if case .prerolling = $0 { true } else { false } }) ?? false:
            break  // nothing is heard during a preroll: Pause is true at once
        case (_, .switched):
            // playbin switched streams, so it plays: the status clients know is kept, or,
            // from stopped, the one asked for (playing is the only one a switch confirms).
            #expect(before.status == .stopped && after.status == .playing, "a switch confirms only playing: \(cell)")
        default:
            Issue.record("status changed on an input that confirms nothing: \(cell)")
        }
    }
}
