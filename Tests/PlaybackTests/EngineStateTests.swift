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
        _ = state.transport.load(load, intent: .playing)
        _ = state.loadCarriedOut(load, now: now)
        _ = state.streamStarted(handedOver: nil, now: now)
        _ = state.stateReached(.playing, position: .zero, at: now)
        return state
    }

    /// playbin's hand-over of `load`, to follow the loaded stream.
    static func handedOver(_ load: Load) -> GaplessHandoff.Item {
        GaplessHandoff.Item(entryID: load.entry, uri: load.uri)
    }

    /// `state` switches gaplessly to `load` at `now`.
    static func switched(_ state: inout EngineState, to load: Load, now: ContinuousClock.Instant) {
        _ = state.streamStarted(handedOver: handedOver(load), now: now)
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
        let switches = { (state: inout EngineState) in
            state.streamStarted(handedOver: Self.handedOver(Self.b), now: Self.t0).contains {
                if case .report(.switched) = $0 { true } else { false }
            }
        }
        let alone = switches(&state)
        #expect(alone, "with nothing loaded, only a switch can start a stream")
        let table: [(step: String, run: (inout EngineState) -> Void, switches: Bool)] = [
            ("load a", { _ = $0.loadCarriedOut(Self.a, now: Self.t0) }, false),
            ("a plays on into what was handed over", { _ in }, true),
            ("and into the track after", { _ in }, true),
            ("unload", { _ = $0.carryingOut(.unload(fresh: false), now: Self.t0) }, true),
            ("load b", { _ = $0.loadCarriedOut(Self.b, now: Self.t0) }, false),
            ("load a again", { _ = $0.loadCarriedOut(Self.a, now: Self.t0) }, false),
            ("a's stream after its own", { _ in }, true),
        ]
        for row in table {
            row.run(&state)
            #expect(switches(&state) == row.switches, "\(row.step)")
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
            let predicted = state.clock.position(at: at)
            if !state.positionReported(heard + jitter, at: at, holding: false).isEmpty {
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
            if !state.positionReported(heard, at: Self.at(at), holding: false).isEmpty { corrections += 1 }
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
        _ = state.know(Self.b.entry, EntryFacts(length: .seconds(2)))
        Self.switched(&state, to: Self.b, now: Self.at(10))
        let actions = state.stuck(since: Self.at(10.2)).transportActions
        #expect(actions.first == .replacePipeline)
        let restart = actions.compactMap { if case .load(let load, _, _) = $0 { load } else { nil } }.first
        #expect(restart?.entry == Self.b.entry)
        #expect(restart?.position.map { $0 <= .milliseconds(200) } ?? true, "b from 0.2 s, not 3.2 s: \(actions)")

        var ended = Self.playing(Self.a)
        _ = ended.know(Self.b.entry, EntryFacts(length: .seconds(2)))
        Self.switched(&ended, to: Self.b, now: Self.at(10))
        let atEnd = ended.stuck(since: Self.at(12.5))
        #expect(
            atEnd == EngineState.moved([.replacePipeline, .advance(from: Self.b.entry)]),
            "b had ended: what follows plays")
    }

    /// A report is heard only from the pipeline in use, about the load in progress.
    @Test func reportsOfAReplacedPipelineOrAStreamTakenDownAreNotHeard() {
        var state = EngineState()
        let first = state.pipelineNumber
        _ = state.loadCarriedOut(Self.a, now: Self.t0)
        let load = state.loadNumber
        #expect(state.hears(pipeline: first, load: load))
        _ = state.carryingOut(.unload(fresh: false), now: Self.t0)
        #expect(!state.hears(pipeline: first, load: load), "taken down since")
        #expect(state.hears(pipeline: first, load: state.loadNumber))
        let replaced = state.carryingOut(.replacePipeline, now: Self.t0)
        let second = state.pipelineNumber
        #expect(replaced == [.replacePipeline(number: second)] && second != first, "a new pipeline, numbered anew")
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
        #expect(overtaken == [.stopPrerollTimer], "the transport does not move")
        #expect(state.facts == before && state.clock.position(at: Self.at(1.3)) == .seconds(40))
        let actions = state.asyncDone(Self.facts(at: .seconds(40), .playing, now: Self.at(1.4)))
        #expect(
            actions == [.stopPrerollTimer, .transport(.publish), .followTransport(timingChanged: false)],
            "clients hear of the new timing")
        #expect(state.facts.duration == .seconds(100))
        #expect(state.clock.position(at: Self.at(2.4)) == .seconds(41), "runs from where the seek landed")
    }

    /// A seek refused for want of a load leaves the clock alone; one during a preroll sets
    /// it where the load will start.
    @Test func aSeekSetsTheClockOnlyWhenTaken() {
        var state = EngineState()
        let refused = state.seek(to: .seconds(5), nextTaken: false, now: Self.t0)
        #expect(refused == [.transport(.refused), .followTransport(timingChanged: false)])
        #expect(state.clock.position(at: Self.at(1)) == .zero)
        _ = state.transport.load(Self.a, intent: .playing)
        _ = state.loadCarriedOut(Self.a, now: Self.t0)
        let taken = state.seek(to: .seconds(5), nextTaken: false, now: Self.t0)
        #expect(
            taken == [.transport(.timingChanged), .followTransport(timingChanged: true)],
            "clients see the position asked for at once")
        #expect(state.clock.position(at: Self.at(1)) == .seconds(5), "it stands while the load prerolls")
    }

    /// A rate is shown at once: published when nothing is loaded, else told beside the seek
    /// that applies it, which the clock waits for where the stream is.
    @Test func aRateIsShownAtOnceAndAppliedByASeek() {
        var stopped = EngineState()
        let alone = stopped.setRate(1.5, from: .zero, now: Self.t0)
        #expect(alone.transportActions == [.publish])
        var state = Self.playing()
        let applied = state.setRate(1.5, from: .seconds(3), now: Self.at(3))
        #expect(
            applied == [
                .transport(.seek(.seconds(3))), .transport(.timingChanged), .followTransport(timingChanged: true),
            ])
        #expect(state.clock.position(at: Self.at(4)) == .seconds(3))
        let again = state.setRate(1.5, from: .seconds(3), now: Self.at(3))
        #expect(again.transportActions == [.timingChanged], "asked again: nothing to apply, still told")
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
            if row.switched { Self.switched(&state, to: Self.b, now: Self.at(1)) }
            let actions = state.positionReported(row.reported, at: Self.at(row.at), holding: row.holding)
            #expect(!actions.isEmpty == row.taken, "\(row.name)")
            if row.taken {
                let note = "the pipeline is at \(row.reported), not \(Duration.seconds(2)): the position follows it"
                #expect(actions == [.log(.debug, note), .report(.changed(.transport))])
                #expect(state.clock.position(at: Self.at(row.at)) == row.reported)
            }
        }
    }

    /// A file that ends far before its length is loaded again there, once; then what
    /// follows plays.
    @Test func aFileEndingEarlyIsLoadedAgainThereOnce() {
        var state = Self.playing()
        _ = state.know(Self.a.entry, EntryFacts(length: .seconds(100)))
        let first = state.endOfStream(at: .seconds(30), now: Self.at(30))
        let again30 = Load(entry: 1, uri: Self.a.uri, position: .seconds(30))
        #expect(
            first == [
                .log(.info, "/a.flac ended at 0:30 of 1:40, before its end: loading it again there"),
                .transport(.load(again30, .paused, fresh: true)), .followTransport(timingChanged: false),
            ], "from NULL")
        #expect(state.clock.position(at: Self.at(31)) == .seconds(30))
        _ = state.loadCarriedOut(again30, now: Self.at(30))
        _ = state.asyncDone(Self.facts(at: .seconds(30), .paused, now: Self.at(30)))
        _ = state.asyncDone(Self.facts(at: .seconds(30), .paused, now: Self.at(30)))
        _ = state.stateReached(.playing, position: .seconds(30), at: Self.at(30))
        let again = state.endOfStream(at: .seconds(31), now: Self.at(31))
        #expect(
            again == [
                .log(.info, "/a.flac ended early again, at 0:31: going on"), .transport(.advance(from: 1)),
                .followTransport(timingChanged: false),
            ])
        var stream = Self.playing(Self.stream)
        _ = stream.know(Self.stream.entry, EntryFacts(length: .seconds(100)))
        let live = stream.endOfStream(at: .seconds(1), now: Self.at(1))
        #expect(live == EngineState.moved([.advance(from: 3)]), "a stream ends when its server says")
    }

    /// An error of the output's, as a sink posts it.
    static func outputError(_ message: String) -> PipelineError {
        PipelineError(
            message: message, domain: .resource, code: 0, source: ElementPath("/GstPlayBin:p/GstPulseSink:sink"),
            inOutput: true)
    }

    /// The output failed: it pauses where clients last saw it, never before.
    @Test func aFailedOutputPausesNoEarlierThanWhatWasShown() {
        var state = Self.playing()
        let shown = state.position(at: Self.at(4))
        let asked = state.positionShown(now: Self.at(4))
        #expect(shown == .seconds(4) && asked == [.queryPosition], "the first read while playing asks")
        state.clock.set(.seconds(2), rate: 0, at: Self.at(4))  // the output's word came back behind
        let actions = state.pipelineFailed(Self.outputError("gone"), handedOver: nil, now: Self.at(4))
        #expect(actions.transportActions == [.unload(fresh: true), .publish])
        #expect(
            actions.contains(.log(.warning, "the audio output failed (gone); paused at 0:04 of /a.flac until Play")))
        let resumesAt = state.position(at: Self.at(9))
        #expect(resumesAt == .seconds(4), "where Play resumes")
        #expect(state.positionShown(now: Self.at(9)).isEmpty, "nothing to ask of a pipeline that lost its output")
    }

    /// The stream handed over failed: its decoder's later errors are echoes, and the loaded
    /// one is loaded again where it is, timed as a reload after a failed hand-over.
    @Test func aFailedHandOverReloadsTheLoadedStreamWhereItIs() {
        var state = Self.playing()
        let source = "/GstPlayBin:p/GstURIDecodeBin:uridecodebin1/GstDecodeBin:decodebin1"
        let error = PipelineError(message: "no route", domain: .resource, code: 0, source: ElementPath(source))
        let next = GaplessHandoff.Item(entryID: 7, uri: "http://example.org/next")
        let actions = state.pipelineFailed(error, handedOver: next, now: Self.at(6))
        let reload = Load(entry: 1, uri: Self.a.uri, position: .seconds(6))
        #expect(actions.contains(.report(.handOverFailed(7, reason: "no route"))))
        #expect(actions.transportActions == [.load(reload, .paused, fresh: true)])
        #expect(state.errors.isEcho(ElementPath(source + "/GstFlacDec:flacdec0")))
        let echo = PipelineError(message: "again", domain: .stream, code: 0, source: ElementPath(source + "/x:y"))
        let ignored = state.pipelineFailed(echo, handedOver: nil, now: Self.at(6))
        #expect(ignored.transportActions.isEmpty && ignored.count == 2, "two debug lines, nothing else: \(ignored)")
        let limit = state.loadCarriedOut(reload, now: Self.at(6))
        #expect(limit == PrerollWatch.limit)
    }

    /// A file handed over fails as playbin switches to it (plugins-bad's aiffparse can push
    /// before its pad is linked): the loaded track is not failed, and plays to its end;
    /// its decoder bin's later errors are echoes; a new load hears that bin's errors again.
    @Test func aHandedOverFileThatFailsLeavesTheLoadedTrackPlaying() {
        var state = Self.playing()
        let bin = "/GstPlayBin:p/GstURIDecodeBin:uridecodebin1"
        let error = PipelineError(
            message: "Internal data stream error.", domain: .stream, code: PipelineError.streamFailed,
            source: ElementPath(bin + "/GstDecodeBin:decodebin11/GstAiffParse:aiffparse7"), uri: Self.b.uri)
        let actions = state.pipelineFailed(error, handedOver: Self.handedOver(Self.b), now: Self.at(6))
        #expect(actions.transportActions.isEmpty, "the loaded track neither fails nor reloads: \(actions)")
        #expect(!actions.contains { if case .report = $0 { true } else { false } }, "\(actions)")
        #expect(
            actions.contains(
                .log(
                    .info,
                    "the gapless switch to /b.flac failed (Internal data stream error.); /a.flac plays to its end, and /b.flac is loaded afresh there"
                )))
        #expect(state.errors.isEcho(ElementPath(bin + "/GstDecodeBin:decodebin11/GstQueue2:queue0")))

        // The loaded track's own decoder failing is the loaded track's failure.
        let own = PipelineError(
            message: "corrupt", domain: .stream, code: 0,
            source: ElementPath("/GstPlayBin:p/GstURIDecodeBin:uridecodebin0/GstDecodeBin:decodebin10/GstFlacDec:f"),
            uri: Self.a.uri)
        var fresh = Self.playing()
        let failed = fresh.pipelineFailed(own, handedOver: Self.handedOver(Self.b), now: Self.at(6))
        #expect(!failed.transportActions.isEmpty, "\(failed)")

        // A load starts: the failed bin's name may come back, with errors of its own.
        _ = state.loadCarriedOut(Self.b, now: Self.at(8))
        #expect(!state.errors.isEcho(ElementPath(bin + "/GstDecodeBin:decodebin12/GstAiffParse:aiffparse8")))
    }

    /// The progress watches follow the transport: they start for each load and each gapless
    /// switch that plays (a switch's first samples are not judged), and stop as soon as it
    /// does not play.
    @Test func theProgressWatchStartsForEachLoadAndSwitchThatPlays() {
        var state = EngineState()
        let start: [EngineState.Action] = [.sampleProgress(after: ProgressWatch.period), .checkForServer]
        let table: [(step: String, run: (inout EngineState) -> Void, actions: [EngineState.Action], switched: Bool)] =
            [
                ("stopped", { _ in }, [], false),
                ("a plays", { $0 = Self.playing() }, start, false),
                ("still a", { _ in }, [], false),
                ("switched to b", { Self.switched(&$0, to: Self.b, now: Self.at(3)) }, start, true),
                ("paused", { _ = $0.transport.pause() }, [.stopProgressWatches], false),
                ("still paused", { _ in }, [], false),
                (
                    "b plays again",
                    {
                        _ = $0.transport.play()
                        _ = $0.stateReached(.playing, position: .seconds(1), at: Self.at(5))
                    }, start, false
                ),
                (
                    "b loaded again",
                    {
                        _ = $0.loadCarriedOut(Self.b, now: Self.at(6))
                        $0.transport = Self.playing(Self.b).transport
                    }, start, false
                ),
            ]
        for row in table {
            row.run(&state)
            let actions = state.followProgress(now: Self.at(7))
            #expect(actions == row.actions, "\(row.step)")
            if !row.actions.isEmpty, case .watching(let stream, _, _, let judgeFrom) = state.progress.watch.stage {
                #expect(
                    stream.entry == state.transport.loadedEntry && (judgeFrom != nil) == row.switched, "\(row.step)")
            }
        }
    }

    /// A local file that does not preroll in time: with decoded audio waiting, it is loaded
    /// again from NULL, then the output counts as failed; with none, it is loaded once more
    /// from NULL (a demuxer can race playbin as it links it), and then it is the file's
    /// fault. Only the load timed, while it still prerolls, is decided on.
    @Test func aPrerollThatTakesTooLongIsRetriedThenTheOutputFails() {
        let limit = PrerollWatch.outputLimit
        var state = EngineState()
        _ = state.transport.load(Self.a, intent: .playing)
        let timed = state.loadCarriedOut(Self.a, now: Self.t0)
        #expect(timed == limit)
        let number = state.loadNumber
        let passed = { (state: inout EngineState, number: Int, decoded: Bool) in
            state.prerollLimitPassed(of: Self.a, number: number, limit: limit, decodedAudio: decoded, now: Self.at(15))
        }
        #expect(passed(&state, number - 1, true).isEmpty, "an earlier load's limit")
        let first = passed(&state, number, true)
        #expect(
            first == [
                .log(.warning, "/a.flac did not start within 15 s; loading it again"),
                .transport(.load(Self.a, .playing, fresh: true)), .followTransport(timingChanged: false),
            ])
        let retried = state.loadCarriedOut(Self.a, now: Self.at(15))
        #expect(retried == limit, "the retry is timed")
        let second = passed(&state, state.loadNumber, true)
        #expect(second.transportActions == [.unload(fresh: true), .publish], "the output failed: paused there")
        let reason = "it took no audio of /a.flac within 15 s, twice"
        #expect(
            second.contains(.log(.warning, "the audio output failed (\(reason)); paused at 0:00 of /a.flac until Play"))
        )

        var other = EngineState()
        _ = other.transport.load(Self.b, intent: .playing)
        _ = other.loadCarriedOut(Self.b, now: Self.t0)
        _ = other.stateReached(.playing, position: .zero, at: Self.at(1))
        #expect(passed(&other, other.loadNumber, false).isEmpty, "it prerolled: nothing is decided")
        _ = other.transport.load(Self.a, intent: .playing)
        _ = other.loadCarriedOut(Self.a, now: Self.at(2))
        let none = passed(&other, other.loadNumber, false)
        #expect(
            none == [
                .log(.info, "no audio was decoded from /a.flac within 15 s; loading it once more"),
                .transport(.load(Self.a, .playing, fresh: true)), .followTransport(timingChanged: false),
            ])
        let lastTry = other.loadCarriedOut(Self.a, now: Self.at(17))
        #expect(lastTry == PrerollWatch.limit, "the last try is timed shorter")
        let still = other.prerollLimitPassed(
            of: Self.a, number: other.loadNumber, limit: PrerollWatch.limit, decodedAudio: false, now: Self.at(21))
        let undecoded = "no audio was decoded from it within 15 s, nor within 4 s of loading it again"
        #expect(still == EngineState.moved([.unload(fresh: true), .skip(1, reason: undecoded)]))
    }

    /// A file that stops as playbin links it, before it prerolled (aiffparse's not-linked
    /// race), is loaded once more from NULL; should that stop too, it is skipped with the
    /// reason. Any other error of the load skips it at once.
    @Test func aFileThatStopsAsItIsLinkedIsLoadedOnceMore() {
        let aiff = Load(entry: 5, uri: "file:///c.aiff")
        let unlinked = PipelineError(
            message: "Internal data stream error.",
            debug:
                "aiffparse.c(1533): gst_aiff_parse_loop (): /GstPlayBin:p/GstAiffParse:aiffparse0:\nstreaming stopped, reason not-linked (-1)",
            domain: .stream, code: PipelineError.streamFailed,
            source: ElementPath(
                "/GstPlayBin:p/GstURIDecodeBin:uridecodebin0/GstDecodeBin:decodebin0/GstAiffParse:aiffparse0"),
            uri: aiff.uri)
        #expect(unlinked.stoppedUnlinked)
        var state = EngineState()
        _ = state.transport.load(aiff, intent: .playing)
        _ = state.loadCarriedOut(aiff, now: Self.t0)
        let first = state.pipelineFailed(unlinked, handedOver: nil, now: Self.at(0.1))
        #expect(first.transportActions == [.load(aiff, .playing, fresh: true)], "\(first)")
        #expect(
            first.contains(
                .log(.info, "/c.aiff stopped as it was linked (Internal data stream error.); loading it once more")))
        #expect(state.loadCarriedOut(aiff, now: Self.at(0.2)) == PrerollWatch.limit, "the last try is timed")
        let second = state.pipelineFailed(unlinked, handedOver: nil, now: Self.at(0.3))
        #expect(second.transportActions == [.unload(fresh: true), .skip(5, reason: "Internal data stream error.")])

        var other = EngineState()
        _ = other.transport.load(aiff, intent: .playing)
        _ = other.loadCarriedOut(aiff, now: Self.t0)
        let corrupt = PipelineError(
            message: "Internal data stream error.", debug: "streaming stopped, reason error (-5)", domain: .stream,
            code: PipelineError.streamFailed, source: unlinked.source, uri: aiff.uri)
        #expect(!corrupt.stoppedUnlinked)
        let skipped = other.pipelineFailed(corrupt, handedOver: nil, now: Self.at(0.1))
        #expect(skipped.transportActions == [.unload(fresh: true), .skip(5, reason: "Internal data stream error.")])
    }

    /// A mixer's change of the output volume is followed; Quaver's own, coming back, is not.
    @Test func theVolumeFollowsAMixerNotItsOwnEcho() {
        var state = EngineState()
        #expect(state.setVolume(0.5, now: Self.t0) == [.setPipelineVolume(0.5)])
        #expect(state.outputVolumeChanged(0.5, now: Self.at(0.1)).isEmpty)
        _ = state.setVolume(0.6, now: Self.at(0.2))
        #expect(state.outputVolumeChanged(0.5, now: Self.at(0.3)).isEmpty, "the echo of a volume set lately")
        let mixer = state.outputVolumeChanged(1.4, now: Self.at(0.4))
        #expect(
            mixer == [
                .log(.debug, "the stream's volume was changed outside Quaver, to 1.0"), .report(.changed(.volume)),
            ])
        #expect(state.volume == 1)
    }
}

extension EngineState {
    /// Carries out the load of `load` at `now` as the engine does, and returns how long its
    /// preroll may take (nil: not timed).
    mutating func loadCarriedOut(_ load: Transport.Load, now: ContinuousClock.Instant) -> Duration? {
        carryingOut(.load(load, .paused, fresh: false), now: now).lazy.compactMap {
            if case .timePreroll(_, let limit, _) = $0 { limit } else { nil }
        }.first
    }
}
