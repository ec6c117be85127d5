import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// What the engine carries out for each step of its state, without GStreamer: the actions a
/// step returns for an input, and the commands each of the transport's actions comes to.
@Suite("Engine state: the actions each step returns")
struct EngineActionTests {
    typealias Load = Transport.Load
    typealias Action = EngineState.Action
    static let t0 = EngineStateTests.t0
    static func at(_ seconds: Double) -> ContinuousClock.Instant { EngineStateTests.at(seconds) }
    static let a = EngineStateTests.a
    static let stream = EngineStateTests.stream

    /// Each of the transport's actions, carried out, comes to the pipeline's commands, the
    /// timers and the reports, with the numbers of the moment it is carried out.
    @Test func eachTransportActionComesToTheEnginesCommands() {
        let table: [(name: String, state: EngineState, action: Transport.Action, expected: [Action])] = [
            (
                "a file's load, timed for its preroll", EngineState(), .load(Self.a, .playing, fresh: false),
                [
                    .stopStreamTimer, .loadPipeline(uri: Self.a.uri, .playing, load: 1, fresh: false, loudness: nil),
                    .timePreroll(Self.a, limit: PrerollWatch.outputLimit, number: 1), .report(.loadStarted(1)),
                ]
            ),
            (
                "a stream's load, watched for a stall", EngineState(), .load(Self.stream, .paused, fresh: true),
                [
                    .armStreamWatch(3, since: nil),
                    .loadPipeline(uri: Self.stream.uri, .paused, load: 1, fresh: true, loudness: nil),
                    .stopPrerollTimer, .report(.loadStarted(3)),
                ]
            ),
            (
                "an unload", EngineState(), .unload(fresh: true),
                [.stopStreamTimer, .unloadPipeline(load: 1, fresh: true)]
            ),
            ("a state", EngineState(), .setState(.playing), [.setPipelineState(.playing)]),
            ("a new clock", EngineState(), .reselectClock, [.setPipelineState(.paused), .setPipelineState(.playing)]),
            ("a seek, at the rate", Self.atRate(1.5), .seek(.seconds(5)), [.seekPipeline(.seconds(5), rate: 1.5)]),
            ("a wait for the preroll", EngineState(), .awaitPreroll, [.awaitPreroll]),
            ("a stuck pipeline", EngineState(), .replacePipeline, [.replacePipeline(number: 1)]),
            (
                "a file settled playing", EngineStateTests.playing(), .publish,
                [.checkPositionSoon(load: 1), .report(.settled)]
            ),
            (
                "a stream settled playing", EngineStateTests.playing(Self.stream), .publish,
                [.stopStreamTimer, .checkPositionSoon(load: 1), .report(.settled)]
            ),
            ("nothing settled", EngineState(), .publish, [.report(.settled)]),
            ("a skip", EngineState(), .skip(4, reason: "bad"), [.report(.failed(4, reason: "bad"))]),
            ("an end", EngineState(), .advance(from: 4), [.report(.ended(4))]),
            ("a refusal", EngineState(), .refused, []),
            ("a timing told", EngineState(), .timingChanged, []),
        ]
        for row in table {
            var state = row.state
            let actions = state.carryingOut(row.action, now: Self.t0)
            #expect(actions == row.expected, "\(row.name)")
        }
    }

    /// A state whose rate is `rate`, with nothing loaded.
    static func atRate(_ rate: Double) -> EngineState {
        var state = EngineState()
        _ = state.setRate(rate, from: .zero, now: t0)
        return state
    }

    /// Carrying out is the state's part too: a pause stops the clock, a seek is counted in
    /// flight, a load makes what was loaded stale, a replaced pipeline is no longer heard.
    @Test func carryingOutTakesTheStatesPart() {
        var state = EngineStateTests.playing()
        _ = state.carryingOut(.setState(.paused), now: Self.at(2))
        #expect(state.clock.rate == 0 && state.clock.position(at: Self.at(5)) == .seconds(2), "a pause stops it")
        _ = state.carryingOut(.seek(.seconds(9)), now: Self.at(2))
        #expect(state.seeks.count == 1)
        let (pipeline, load) = (state.pipelineNumber, state.loadNumber)
        _ = state.carryingOut(.load(Self.a, .paused, fresh: true), now: Self.at(3))
        #expect(!state.hears(pipeline: pipeline, load: load) && state.awaitingOwnStreamStart)
        _ = state.carryingOut(.replacePipeline, now: Self.at(3))
        #expect(!state.hears(pipeline: pipeline) && state.pipelinesReplaced == 1)
    }

    /// The commands and the pipeline's lesser reports: each answers with what the engine
    /// carries out, the transport's actions followed by the watches' following it.
    @Test func commandsAndReportsAnswerWithTheEnginesActions() {
        let moved = { (actions: [Transport.Action]) in EngineState.moved(actions) }
        let next = GaplessHandoff.Item(entryID: 8, uri: "http://example.org/next")
        let file = GaplessHandoff.Item(entryID: 9, uri: "file:///next.flac")
        var tags = StreamTags()
        tags.title = "News"
        let table: [(name: String, state: EngineState, step: (inout EngineState) -> [Action], expected: [Action])] = [
            ("Play with nothing loaded", EngineState(), { $0.play() }, moved([.refused])),
            ("a volume", EngineState(), { $0.setVolume(0.3, now: Self.t0) }, [.setPipelineVolume(0.3)]),
            ("facts of an entry", EngineState(), { $0.know(4, EntryFacts(length: .seconds(3))) }, []),
            ("an entry forgotten", EngineState(), { $0.forget(4) }, []),
            (
                "a read while playing", EngineStateTests.playing(), { $0.positionShown(now: Self.at(1)) },
                [.queryPosition]
            ),
            ("a read while stopped", EngineState(), { $0.positionShown(now: Self.at(1)) }, []),
            (
                "a seek refused", EngineStateTests.playing(), { $0.seekRefused(.seconds(5)) },
                [.log(.warning, "seek to 0:05 refused by the pipeline"), .queryPosition] + moved([])
            ),
            ("a clock lost while stopped", EngineState(), { $0.clockLost() }, moved([])),
            (
                "the elements of a load", EngineStateTests.playing(), { $0.elementsMade(["filesrc", "flacdec"]) },
                [.log(.debug, "pipeline for /a.flac: filesrc flacdec")]
            ),
            ("the elements of nothing", EngineState(), { $0.elementsMade(["x"]) }, []),
            (
                "a duration", EngineStateTests.playing(), { $0.durationChanged(Pipeline.Facts()) },
                [.report(.streamDurationChanged(1))]
            ),
            ("a stream handed over", EngineState(), { $0.nextTaken(next) }, [.armStreamWatch(8, since: nil)]),
            ("a file handed over", EngineState(), { $0.nextTaken(file) }, []),
            (
                "a stream's tags", EngineStateTests.playing(Self.stream), { $0.streamTagsArrived(tags) },
                [.report(.streamTagsChanged(3, picture: nil))]
            ),
            ("a file's tags", EngineStateTests.playing(), { $0.streamTagsArrived(tags) }, []),
            ("an artwork kept", EngineState(), { $0.keepStreamArtwork("file:///art.png") }, []),
            ("the stall limit", EngineState(), { $0.setStallLimit(.seconds(4)) }, []),
            ("the end", EngineStateTests.playing(), { $0.shutDown() }, [.stopPrerollTimer]),
            ("a test's command", EngineState(), { $0.decide { $0.play() } }, moved([])),
        ]
        for row in table {
            var state = row.state
            let actions = row.step(&state)
            #expect(actions == row.expected, "\(row.name)")
        }
    }

    /// A second read within a second does not ask the pipeline again.
    @Test func thePipelineIsAskedWhereItIsAboutOnceASecond() {
        var state = EngineStateTests.playing()
        let reads = [1.0, 1.5, 2.1, 2.2].map { state.positionShown(now: Self.at($0)) }
        #expect(reads == [[.queryPosition], [], [.queryPosition], []])
    }

    /// Warnings: the first that no output is reachable is told, and while playing, the
    /// engine looks for a sound server; said again, it is not told; a stream skipped on
    /// purpose is no problem at all.
    @Test func warningsAreToldOnceAndTheFallbackSinkLooksForAServer() {
        let table: [(name: String, message: String, source: String, playing: Bool, expected: [Action])] = [
            (
                "no output", "no device", "autoaudiosink0", false,
                [
                    .log(
                        .warning,
                        "no sound server or audio device reachable (no device); playing into a null sink that keeps real time"
                    )
                ]
            ),
            (
                "no output, while playing", "no device", "autoaudiosink0", true,
                [
                    .log(
                        .warning,
                        "no sound server or audio device reachable (no device); playing into a null sink that keeps real time"
                    ), .checkForServer,
                ]
            ),
            (
                "a video stream", "No decoder available for type 'video/x-h264'", "decodebin0", false,
                [.log(.debug, "not decoded, as intended: No decoder available for type 'video/x-h264'")]
            ),
            ("another", "odd", "queue2", false, [.log(.warning, "GStreamer warning from queue2: odd")]),
        ]
        for row in table {
            var state = row.playing ? EngineStateTests.playing() : EngineState()
            if row.playing { _ = state.followProgress(now: Self.t0) }
            #expect(state.warned(row.message, source: row.source) == row.expected, "\(row.name)")
        }
        var state = EngineState()
        _ = state.warned("no device", source: "autoaudiosink0")
        #expect(state.warned("no device", source: "autoaudiosink0").isEmpty, "said once is enough")
        #expect(state.progress.onFallbackSink)
    }

    /// A sound server that answers while the fallback sink plays: the track is loaded again
    /// where it is, and the fallback is over.
    @Test func aSoundServerThatAnswersTakesThePlaybackWhereItIs() {
        var state = EngineStateTests.playing()
        _ = state.followProgress(now: Self.t0)
        _ = state.warned("no device", source: "autoaudiosink0")
        #expect(state.looksForServer(systemOutput: true) && !state.looksForServer(systemOutput: false))
        let actions = state.serverAnswered(at: "/run/user/1/pulse/native", now: Self.at(2))
        #expect(
            actions.first
                == .log(
                    .info, "a sound server answers at /run/user/1/pulse/native now; playing on through it from 0:02"))
        #expect(actions.filter { if case .followTransport = $0 { true } else { false } }.count == 2, "two moves")
        let reload = actions.transportActions.compactMap {
            if case .load(let load, _, let fresh) = $0 { (load, fresh) } else { nil }
        }
        #expect(reload.first?.0 == Load(entry: 1, uri: Self.a.uri, position: .seconds(2)) && reload.first?.1 == true)
        #expect(!state.progress.onFallbackSink && !state.looksForServer(systemOutput: true))
    }

    /// The audio's progress, sampled while a file plays: the clock is held where the audio
    /// stands, clients see it waiting after the grace and hear when it moves again.
    @Test func samplesOfTheAudiosProgressHoldWaitAndResume() {
        var state = EngineStateTests.playing()
        #expect(state.progressSampled(Self.sample(0, at: 0.25), nextIsWatched: false, now: Self.at(0.25)).isEmpty)
        _ = state.followProgress(now: Self.at(0.25))
        let next = Action.sampleProgress(after: ProgressWatch.period)
        let calm = PaceWatch(
            reference: Pipeline.Progress(position: .seconds(0.75), clock: .seconds(0.75), at: Self.at(0.75)), rate: 1,
            share: ProgressWatch.calmShare,
            period: ProgressWatch.calmPeriod)
        let table: [(at: Double, position: Double, expected: (([Action]) -> Bool), name: String)] = [
            (0.5, 0.5, { $0 == [next] }, "the first sample"),
            (0.75, 0.75, { $0 == [.watchPace(calm)] }, "it keeps its pace: the pipeline samples it on its own"),
            (1.25, 0.75, { $0 == [next] }, "it stands: held"),
            (
                2.5, 0.75,
                {
                    guard $0.count == 3, case .log(.warning, let line) = $0[0] else { return false }
                    return line.hasSuffix("clients see it waiting")
                        && $0[1...] == [.report(.changed(.transport)), next]
                }, "it stood for the grace"
            ),
            (
                2.75, 1.0,
                {
                    $0 == [
                        .log(.info, "the audio of /a.flac moves again at 0:01, after 0.25 s of waiting"),
                        .report(.changed(.transport)), next,
                    ]
                }, "it moves again"
            ),
        ]
        for row in table {
            // The pipeline's pace watch reports the first sample off its pace with the calm one.
            let since = row.name == "it stands: held" ? calm.reference : nil
            let actions = state.progressSampled(
                Self.sample(row.position, at: row.at), since: since, nextIsWatched: false, now: Self.at(row.at))
            #expect(row.expected(actions), "\(row.name): \(actions)")
            if row.name == "it stands: held" {
                #expect(state.clock.rate == 0 && state.clock.position(at: Self.at(2)) == .milliseconds(750))
            }
        }
        #expect(state.clock.rate == 1 && state.clock.position(at: Self.at(3.75)) == .seconds(2), "it runs from there")
    }

    /// A sample of the pipeline at `position` seconds, its clock running, taken at `at`.
    static func sample(_ position: Double, at: Double) -> Pipeline.Progress {
        Pipeline.Progress(
            position: .seconds(position), clock: .seconds(at), clockName: "GstSystemClock", queued: nil,
            at: Self.at(at))
    }
}
