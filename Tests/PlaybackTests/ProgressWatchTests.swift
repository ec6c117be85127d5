import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The progress watch, every stage against every kind of sample, with made-up instants: no
/// pipeline, no timer. Each cell says what the engine is told to do and where the watch is
/// then.
@Suite("Progress watch: every stage against every sample")
struct ProgressWatchTests {
    typealias Watch = ProgressWatch
    typealias Action = ProgressWatch.Action
    typealias Stall = ProgressWatch.Stall

    static let t0 = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

    static let file = Watch.Stream(entry: 1, isLocal: true, duration: .seconds(30), rate: 1)
    static let stream = Watch.Stream(entry: 2, isLocal: false, duration: nil, rate: 1)

    /// A sample: where the audio is at `time`; the pipeline's clock runs with time (as a sound
    /// server's does even without a device); `queued`: audio waiting in front of the sink.
    static func sample(_ time: Double, _ position: Double, queued: Double = 0) -> Watch.Sample {
        .init(position: s(position), clock: s(time), queued: s(queued), at: at(time))
    }

    /// The stages, each reached from a fresh watch by the samples a real pipeline sends.
    enum Stage: String, CaseIterable {
        case off, fresh, moving, holding, waitingOutput, waitingDecoding, waitingStream, settling
    }

    /// The samples fed in, each relative to the last one sent (at 0.5 s, 10.25 s into the
    /// track, or at 2.0 s in the waiting stages): a short step, or a long one.
    enum Input: String, CaseIterable {
        case moved, stood, stoodForGrace, stoodPastOutputLimit, wentBack
    }

    static func make(_ stage: Stage) -> (watch: Watch, last: Double) {
        var watch = Watch()
        switch stage {
        case .off:
            return (watch, 0.5)
        case .fresh:
            _ = watch.started(file)
            return (watch, 0.5)
        case .settling:
            _ = watch.started(file, switchedAt: at(0))
            return (watch, 0.5)
        case .moving, .holding:
            _ = watch.started(file)
            _ = watch.heard(sample(0.25, 10))
            _ = watch.heard(sample(0.5, 10.25))
            guard stage == .holding else { return (watch, 0.5) }
            _ = watch.heard(sample(0.75, 10.25, queued: 0.2))
            return (watch, 0.75)
        case .waitingOutput, .waitingDecoding, .waitingStream:
            _ = watch.started(stage == .waitingStream ? stream : file)
            _ = watch.heard(sample(0.25, 10))
            _ = watch.heard(sample(0.5, 10.25))
            let queued = stage == .waitingOutput ? 0.2 : 0
            for time in stride(from: 0.75, through: 2.0, by: 0.25) {
                _ = watch.heard(sample(time, 10.25, queued: queued))
            }
            return (watch, 2.0)
        }
    }

    static func input(_ input: Input, after last: Double, queued: Double) -> Watch.Sample {
        let position = 10.25
        switch input {
        case .moved: return sample(last + 0.25, position + 0.25, queued: queued)
        case .stood: return sample(last + 0.25, position, queued: queued)
        case .stoodForGrace: return sample(last + 1.5, position, queued: queued)
        case .stoodPastOutputLimit: return sample(last + 9, position, queued: queued)
        case .wentBack: return sample(last + 0.25, position - 5, queued: queued)
        }
    }

    static let next = Action.sample(after: Watch.period)

    /// The cadence: sampled often from a start, after a hold and while the audio is off its
    /// pace. While it keeps its pace, the pipeline samples it on its own, once a second, and
    /// reports only the first sample off the pace, with the calm one before it, which the
    /// watch judges as if it had heard both. A sample of the other kind, taken before the
    /// stage changed, is dropped.
    @Test func whileTheAudioKeepsItsPaceThePipelineSamplesItOnItsOwn() {
        var watch = Watch()
        #expect(watch.started(Self.file) == [Self.next])
        #expect(watch.sampled(Self.sample(0.25, 10)) == [Self.next], "the first sample only starts the count")
        let calm = Self.sample(0.5, 10.25)
        #expect(watch.sampled(calm) == [.watchPace(from: calm, rate: 1, every: Watch.calmPeriod)], "kept its pace")
        #expect(!watch.isHolding && !watch.isWaiting)
        #expect(watch.sampled(Self.sample(0.75, 10.5)).isEmpty, "a sample asked for before: dropped")
        // The pipeline heard calm samples up to 3.5 s; the audio stopped 0.35 s after that one.
        let lastCalm = Self.sample(3.5, 13.25)
        #expect(watch.sampled(Self.sample(4.5, 13.6), since: lastCalm) == [Self.next], "off its pace: often again")
        #expect(watch.sampled(Self.sample(4.75, 13.6)) == [.hold(at: Self.s(13.6)), Self.next])
        #expect(
            watch.sampled(Self.sample(5.0, 13.85)) == [
                .resume(at: Self.s(13.85), when: Self.at(5.0), waited: nil), Self.next,
            ], "a resume is sampled often")
        #expect(watch.sampled(Self.sample(5.25, 14.1), since: lastCalm).isEmpty, "a pace watch's late report: dropped")
        var slow = Watch()
        _ = slow.started(Watch.Stream(entry: 3, isLocal: true, duration: nil, rate: 1))
        _ = slow.sampled(Self.sample(0.25, 5))
        #expect(slow.sampled(Self.sample(0.5, 5.175)) == [Self.next], "an output at 0.7x is sampled often")
    }
    static func stall(since: Double, now: Double, queued: Double, cause: ProgressWatch.Cause) -> Stall {
        Stall(
            heard: s(10.25), since: at(since), stoodFor: s(now - since), clockAdvance: s(now - since),
            queued: s(queued), cause: cause)
    }
    /// The stall the waiting stages entered with (at 2.0 s, standing since 0.5 s).
    static func entered(_ stage: Stage) -> Stall {
        stall(
            since: 0.5, now: 2.0, queued: stage == .waitingOutput ? 0.2 : 0,
            cause: stage == .waitingOutput ? .output : .decoding)
    }

    /// What a cell leads to: the actions, and whether the watch then holds, waits or is off.
    struct Outcome: Equatable, CustomStringConvertible {
        var actions: [Action]
        var holding: Bool
        var waiting: Bool
        var off: Bool
        var description: String { "\(actions) holding:\(holding) waiting:\(waiting) off:\(off)" }
    }

    static func expected(_ stage: Stage, _ input: Input) -> Outcome {
        let waiting = [Stage.waitingOutput, .waitingDecoding, .waitingStream].contains(stage)
        let queued = stage == .waitingOutput ? 0.2 : 0
        let last = make(stage).last
        let now = Self.input(input, after: last, queued: queued).at
        func outcome(_ actions: [Action], holding: Bool = false, waiting: Bool = false, off: Bool = false) -> Outcome {
            Outcome(actions: actions, holding: holding || waiting, waiting: waiting, off: off)
        }
        switch (stage, input) {
        case (.off, _):
            return outcome([], off: true)
        case (.fresh, _), (.settling, .moved), (.settling, .stood), (.settling, .stoodForGrace),
            (.settling, .wentBack), (.settling, .stoodPastOutputLimit):
            // The first sample (or any before the switch settles) only starts the count.
            return outcome([next])
        case (.moving, .moved):
            // It kept its pace from one sample to the next: the pipeline samples it on its own.
            return outcome([
                .watchPace(from: Self.input(input, after: last, queued: 0), rate: 1, every: Watch.calmPeriod)
            ])
        case (.moving, .stood), (.holding, .stood):
            return outcome([.hold(at: s(10.25)), next], holding: true)
        case (.moving, .stoodForGrace), (.moving, .stoodPastOutputLimit), (.holding, .stoodForGrace),
            (.holding, .stoodPastOutputLimit):
            let stall = stall(since: 0.5, now: (now - t0).seconds, queued: 0, cause: .decoding)
            return outcome([.hold(at: s(10.25)), .wait(stall), next], waiting: true)
        case (.moving, .wentBack):
            return outcome([next])
        case (.holding, .moved), (.holding, .wentBack):
            let position = input == .moved ? 10.5 : 5.25
            return outcome([.resume(at: s(position), when: now, waited: nil), next])
        case (_, .moved) where waiting, (_, .wentBack) where waiting:
            let position = input == .moved ? 10.5 : 5.25
            return outcome([.resume(at: s(position), when: now, waited: now - at(2.0)), next])
        case (_, .stood) where waiting, (.waitingOutput, .stoodForGrace), (.waitingStream, .stoodForGrace):
            return outcome([.hold(at: s(10.25)), next], waiting: true)
        case (.waitingDecoding, .stoodForGrace), (.waitingDecoding, .stoodPastOutputLimit):
            return outcome([.reload(entered(stage))], off: true)
        case (.waitingOutput, .stoodPastOutputLimit):
            return outcome([.outputFailed(entered(stage), reason: "it took no audio for 10 s")], off: true)
        case (.waitingStream, .stoodPastOutputLimit):
            return outcome([.skip(entered(stage), reason: "its audio stopped at 0:10 for 10 s")], off: true)
        default:
            Issue.record("no expectation for \(stage) × \(input)")
            return outcome([])
        }
    }

    @Test(arguments: Stage.allCases, Input.allCases)
    func cell(_ stage: Stage, _ input: Input) {
        var (watch, last) = Self.make(stage)
        let queued = stage == .waitingOutput ? 0.2 : 0
        let actions = watch.heard(Self.input(input, after: last, queued: queued))
        let outcome = Outcome(
            actions: actions, holding: watch.isHolding, waiting: watch.isWaiting, off: watch.stage == .off)
        #expect(outcome == Self.expected(stage, input), "\(stage) × \(input)")
    }

    @Test(arguments: Stage.allCases)
    func stoppingEndsEveryStage(_ stage: Stage) {
        var (watch, last) = Self.make(stage)
        watch.stopped()
        #expect(watch.stage == .off && !watch.isHolding && !watch.isWaiting)
        #expect(watch.heard(Self.sample(last + 0.25, 10.25)).isEmpty, "nothing is sampled once stopped")
    }

    // MARK: - Sequences the table does not reach

    @Test func standingAtTheTracksEndLoadsWhatFollowsAtTheGrace() {
        var watch = Watch()
        _ = watch.started(Self.file)
        _ = watch.heard(Self.sample(0.25, 29.5))
        _ = watch.heard(Self.sample(0.5, 29.7))
        #expect(watch.heard(Self.sample(0.75, 29.7)) == [.hold(at: Self.s(29.7)), Self.next])
        let stall = Stall(
            heard: Self.s(29.7), since: Self.at(0.5), stoodFor: Self.s(1.5), clockAdvance: Self.s(1.5),
            queued: .zero, cause: .decoding)
        #expect(watch.heard(Self.sample(2.0, 29.7)) == [.loadNext(stall)], "whatever the cause")
        #expect(watch.stage == .off)
    }

    /// A Snapcast pipe nobody reads (snapserver stopped): never a failed output. Sampled once
    /// a second after the output limit, and resumed where it stood when snapserver reads again.
    @Test func anOutputWhoseReaderComesBackIsWaitedForWithoutEnd() {
        var watch = Watch()
        watch.waitsForOutput = true
        _ = watch.started(Self.file)
        _ = watch.heard(Self.sample(0.25, 10))
        _ = watch.heard(Self.sample(0.5, 10.25))
        _ = watch.heard(Self.sample(2.0, 10.25, queued: 0.2))
        #expect(watch.isWaiting)
        for time in [11.0, 60.0, 600.0] {
            #expect(
                watch.heard(Self.sample(time, 10.25, queued: 0.2)) == [
                    .hold(at: Self.s(10.25)), .sample(after: Watch.readerPeriod),
                ], "still waited for at \(time) s")
        }
        #expect(
            watch.heard(Self.sample(601.0, 11.0, queued: 0.2)) == [
                .resume(at: Self.s(11), when: Self.at(601), waited: Self.s(599)), Self.next,
            ])
        var decoding = Watch()
        decoding.waitsForOutput = true
        _ = decoding.started(Self.stream)
        _ = decoding.heard(Self.sample(0.25, 10))
        _ = decoding.heard(Self.sample(0.5, 10.25))
        _ = decoding.heard(Self.sample(2.0, 10.25))
        #expect(
            decoding.heard(Self.sample(11.0, 10.25)).first
                == .skip(
                    Self.stall(since: 0.5, now: 2.0, queued: 0, cause: .decoding),
                    reason: "its audio stopped at 0:10 for 10 s"),
            "a stream whose decoding stopped is skipped as on any output")
    }

    /// A machine too busy to run Quaver (its threads wait for a CPU far longer than they
    /// run) is no fault of the file nor of the output: a stall is neither loaded again,
    /// skipped nor taken for a failed output while the samples say so, which the log says
    /// once; its limits count from the last such sample.
    @Test func aStallOnAStarvedMachineIsWaitedFor() {
        func starved(_ time: Double, queued: Double = 0) -> Watch.Sample {
            var sample = Self.sample(time, 10.25, queued: queued)
            sample.starved = true
            return sample
        }
        func isBusy(_ action: Action) -> Bool { if case .busy = action { true } else { false } }
        var watch = Watch()
        _ = watch.started(Self.file)
        _ = watch.heard(Self.sample(0.25, 10))
        _ = watch.heard(Self.sample(0.5, 10.25))
        let entered = watch.heard(starved(2.0))
        #expect(entered.contains(where: isBusy) && watch.isWaiting, "said at once: \(entered)")
        for time in [3.0, 5.0, 8.0] {
            #expect(
                watch.heard(starved(time)) == [.hold(at: Self.s(10.25)), Self.next], "still waited for at \(time) s")
        }
        // The machine runs Quaver again and the audio still stands: the limit counts from 8 s.
        #expect(watch.heard(Self.sample(10.5, 10.25)) == [.hold(at: Self.s(10.25)), Self.next])
        let reloaded = watch.heard(Self.sample(11.0, 10.25))
        #expect(reloaded.count == 1 && reloaded.first.map { if case .reload = $0 { true } else { false } } == true)

        var output = Watch()
        _ = output.started(Self.file)
        _ = output.heard(Self.sample(0.25, 10))
        _ = output.heard(Self.sample(0.5, 10.25))
        #expect(output.heard(starved(2.0, queued: 0.2)).contains(where: isBusy))
        for time in stride(from: 3.0, through: 20.0, by: 1.0) {
            let actions = output.heard(starved(time, queued: 0.2))
            #expect(actions == [.hold(at: Self.s(10.25)), Self.next], "the output is not failed at \(time) s")
        }
    }

    @Test func aNetworkStreamToFollowIsWaitedForAtTheEnd() {
        var watch = Watch()
        _ = watch.started(Self.file)
        _ = watch.heard(Self.sample(0.25, 29.5), nextIsWatched: true)
        _ = watch.heard(Self.sample(0.5, 29.7), nextIsWatched: true)
        let actions = watch.heard(Self.sample(2.0, 29.7), nextIsWatched: true)
        #expect(actions.contains { if case .wait = $0 { true } else { false } }, "\(actions)")
        #expect(
            watch.heard(Self.sample(12.0, 29.7), nextIsWatched: true) == [.hold(at: Self.s(29.7)), Self.next],
            "neither loaded again, skipped nor failed: the stream's own watch decides")
        #expect(watch.isWaiting)
    }

    @Test func aFileWhoseDecodingStopsIsLoadedAgainOnceThenSkipped() {
        var watch = Watch()
        for round in 0..<2 {
            _ = watch.started(Self.file)
            _ = watch.heard(Self.sample(0.25, 10))
            _ = watch.heard(Self.sample(0.5, 10.25))
            _ = watch.heard(Self.sample(2.0, 10.25))
            let actions = watch.heard(Self.sample(3.5, 10.25))
            let stall = Stall(
                heard: Self.s(10.25), since: Self.at(0.5), stoodFor: Self.s(1.5), clockAdvance: Self.s(1.5),
                queued: .zero, cause: .decoding)
            #expect(
                actions
                    == (round == 0 ? [.reload(stall)] : [.skip(stall, reason: "its decoding stopped at 0:10, twice")]))
        }
        #expect(watch.reloadedEntry == nil, "a skipped entry is forgotten")
    }

    @Test func anotherEntryStartingForgetsTheReload() {
        var watch = Watch()
        _ = watch.started(Self.file)
        for (time, position) in [(0.25, 10.0), (0.5, 10.25), (2.0, 10.25), (3.5, 10.25)] {
            _ = watch.heard(Self.sample(time, position))
        }
        #expect(watch.reloadedEntry == 1)
        _ = watch.started(Watch.Stream(entry: 3, isLocal: true, duration: nil, rate: 1))
        #expect(watch.reloadedEntry == nil)
    }

    @Test func withoutAQueueTheClockTellsTheCause() {
        let since = Watch.Sample(position: .seconds(4), clock: .seconds(100), at: Self.at(0))
        let standing = Watch.Sample(position: .seconds(4), clock: .seconds(100), at: Self.at(1.5))
        let running = Watch.Sample(position: .seconds(4), clock: Self.s(101.5), at: Self.at(1.5))
        #expect(Watch.stall(since: since, now: standing).cause == .output, "the clock stands with the output")
        #expect(Watch.stall(since: since, now: running).cause == .decoding)
        let noClock = Watch.Sample(position: .seconds(4), clock: nil, at: Self.at(1.5))
        #expect(Watch.stall(since: since, now: noClock).cause == .output)
    }

    @Test func theRateSetsWhatCountsAsMoving() {
        let previous = Self.sample(0, 10)
        let oneX = Self.sample(0.25, 10.25)
        #expect(Watch.moved(from: previous, to: oneX, rate: 1))
        #expect(Watch.moved(from: previous, to: oneX, rate: 2), "half of what rate 2 makes still moves")
        #expect(Watch.moved(from: previous, to: Self.sample(0.25, 10.1), rate: 1), "a slow output's burst moves")
        #expect(!Watch.moved(from: previous, to: Self.sample(0.25, 10.04), rate: 1))
        #expect(Watch.moved(from: previous, to: Self.sample(0.25, 10.07), rate: 0.5))
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension ProgressWatch {
    /// A sample as a real pipeline reports it: while the watch is calm, as the first sample
    /// off the pace watch, with the calm one before it.
    mutating func heard(_ sample: Sample, nextIsWatched: Bool = false) -> [Action] {
        guard case .calm(_, let reference) = stage else { return sampled(sample, nextIsWatched: nextIsWatched) }
        return sampled(sample, since: reference, nextIsWatched: nextIsWatched)
    }
}
