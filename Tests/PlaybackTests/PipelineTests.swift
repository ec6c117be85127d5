import Dispatch
import Foundation
import PlaybackVocabulary
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

@Suite("GaplessHandoff")
struct GaplessHandoffTests {
    private static let a = GaplessHandoff.Item(entryID: 7, uri: "file:///a.flac")
    private static let b = GaplessHandoff.Item(entryID: 8, uri: "file:///b.flac")

    /// `handoff.commit()` on a thread of its own, as GStreamer's streaming thread calls it,
    /// with how long it took.
    private static func commitOnAnotherThread(_ handoff: GaplessHandoff) async -> (String?, Duration) {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let start = ContinuousClock.now
                let uri = handoff.commit()
                continuation.resume(returning: (uri, ContinuousClock.now - start))
            }
        }
    }

    /// Waits until the handler on another thread waits for an answer (at most 30 s).
    private static func waitUntilAsking(_ handoff: GaplessHandoff) async throws {
        let asking = try await Waiter.poll(timeout: .seconds(30), every: .milliseconds(5)) { handoff.isAsking }
        try #require(asking, "the handler never waited")
    }

    /// A handoff whose stream has always sent more decoded audio when playbin asks.
    private static func handoff(answerWait: Duration) -> GaplessHandoff {
        let reads = Locked<UInt64>(0)
        return GaplessHandoff(answerWait: answerWait) {
            reads.withLock {
                $0 += 1
                return $0
            }
        }
    }

    /// A stream with no decoded audio since it started (libav's half-second ALAC) is not
    /// handed over from: playbin ends it, and what follows is loaded afresh.
    @Test func aStreamThatSentNoDecodedAudioIsNotHandedOverFrom() {
        let decoded = Locked<UInt64>(0)
        let handoff = GaplessHandoff(answerWait: .milliseconds(20)) { decoded.withLock { $0 } }
        handoff.loaded(1, loudness: nil)
        handoff.answer(.item(Self.a), load: 1)
        #expect(handoff.commit() == nil, "nothing decoded: the stream ends")
        #expect(!handoff.hasCommitted)
        decoded.withLock { $0 = 4096 }
        #expect(handoff.commit() == Self.a.uri)
        #expect(handoff.takeCommitted() == Self.a)
        handoff.answer(.item(Self.b), load: 1)
        #expect(handoff.commit() == nil, "the stream switched to has sent nothing since")
        decoded.withLock { $0 = 8192 }
        #expect(handoff.commit() == Self.b.uri)
        // A new load counts from its start (the pipeline resets the count as it loads).
        decoded.withLock { $0 = 0 }
        handoff.loaded(2, loudness: nil)
        handoff.answer(.item(Self.a), load: 2)
        #expect(handoff.commit() == nil)
        decoded.withLock { $0 = 1 }
        #expect(handoff.commit() == Self.a.uri)
    }

    @Test func commitHandsOverTheAnsweredURIOnce() {
        let handoff = Self.handoff(answerWait: .milliseconds(20))
        #expect(handoff.commit() == nil, "nothing is loaded")
        handoff.loaded(1, loudness: nil)
        handoff.answer(.item(Self.a), load: 1)
        #expect(!handoff.hasCommitted)
        #expect(handoff.commit() == Self.a.uri)
        #expect(handoff.hasCommitted)
        #expect(handoff.committedEntryID == Self.a.entryID)
        #expect(handoff.commit() == nil, "an answer is handed over only once")
        #expect(handoff.takeCommitted() == Self.a)
        #expect(handoff.takeCommitted() == nil)
        #expect(!handoff.hasCommitted)
    }

    @Test func anAnswerMadeBeforeTheTakenURIStartedIsIgnored() {
        let handoff = Self.handoff(answerWait: .milliseconds(20))
        handoff.loaded(1, loudness: nil)
        handoff.answer(.item(Self.a), load: 1)
        #expect(handoff.commit() == Self.a.uri)
        // The main actor, not yet told of the switch, answers again for the stream before:
        // handed over, it would play the same track twice.
        handoff.answer(.item(Self.a), load: 1)
        #expect(handoff.takeCommitted() == Self.a)
        #expect(handoff.commit() == nil)
        handoff.answer(.item(Self.b), load: 1)
        #expect(handoff.commit() == Self.b.uri, "the answer given once the switch is known")
    }

    @Test func theLatestAnswerWinsAndNothingEndsTheStream() {
        let handoff = Self.handoff(answerWait: .seconds(60))
        handoff.loaded(1, loudness: nil)
        handoff.answer(.item(Self.a), load: 1)
        handoff.answer(.nothing, load: 1)
        let start = ContinuousClock.now
        #expect(handoff.commit() == nil)
        #expect(ContinuousClock.now - start < .seconds(30), "an answer of nothing is not waited for")
        handoff.answer(.item(Self.a), load: 1)
        handoff.answer(.item(Self.b), load: 1)
        #expect(handoff.commit() == Self.b.uri)
    }

    @Test func aMissingAnswerIsWaitedForUntilItComes() async throws {
        let handoff = Self.handoff(answerWait: .seconds(60))
        handoff.loaded(1, loudness: nil)
        handoff.answer(.pending, load: 1)
        async let committed = Self.commitOnAnotherThread(handoff)
        try await Self.waitUntilAsking(handoff)
        #expect(!handoff.hasCommitted)
        #expect(handoff.takesNext, "a seek now would race the hand-over")
        handoff.answer(.item(Self.a), load: 1)
        let (uri, took) = await committed
        #expect(uri == Self.a.uri, "the answer given while the handler waited")
        #expect(took < .seconds(30))
    }

    @Test func aMissingAnswerIsWaitedForAtMostTheLimit() async {
        let handoff = Self.handoff(answerWait: .milliseconds(200))
        handoff.loaded(1, loudness: nil)
        let (uri, took) = await Self.commitOnAnotherThread(handoff)
        #expect(uri == nil)
        #expect(took >= .milliseconds(200) && took < .seconds(30))
    }

    @Test func abandoningTheStreamEndsTheWaitAtOnce() async throws {
        let handoff = Self.handoff(answerWait: .seconds(60))
        handoff.loaded(1, loudness: nil)
        async let committed = Self.commitOnAnotherThread(handoff)
        try await Self.waitUntilAsking(handoff)
        handoff.abandon()
        let (uri, took) = await committed
        #expect(uri == nil)
        #expect(took < .seconds(30))
        handoff.answer(.item(Self.a), load: 1)
        #expect(handoff.commit() == nil, "nothing is handed over for a stream taken down")
    }

    @Test func anAnswerCountsOnlyForItsOwnLoad() {
        let handoff = Self.handoff(answerWait: .milliseconds(20))
        handoff.loaded(1, loudness: nil)
        // The main actor answers for load 2 as soon as it asks for it, before the pipeline's
        // queue has taken load 1 down.
        handoff.answer(.item(Self.a), load: 2)
        #expect(handoff.commit() == nil, "not for load 1")
        handoff.abandon()
        handoff.loaded(2, loudness: nil)
        #expect(handoff.commit() == Self.a.uri, "the answer for load 2 stands once it is loaded")
        handoff.abandon()
        handoff.loaded(3, loudness: nil)
        #expect(handoff.takeCommitted() == nil)
        #expect(handoff.commit() == nil, "an answer for an earlier load is never used")
        handoff.abandon(retiring: true)
        handoff.loaded(4, loudness: nil)
        handoff.answer(.item(Self.b), load: 4)
        #expect(handoff.commit() == nil, "a load finishing after the release arms nothing")
    }

    @Test func loudnessFollowsTheStreamsInTheOrderTheyStart() {
        var quiet = Loudness.neutralPlan
        quiet.preamp = -6
        var loud = Loudness.neutralPlan
        loud.preamp = 3
        let handoff = Self.handoff(answerWait: .milliseconds(20))
        handoff.loaded(1, loudness: quiet)
        var next = Self.a
        next.loudness = loud
        handoff.answer(.item(next), load: 1)
        #expect(handoff.commit() == next.uri)
        #expect(handoff.streamStarts() == (true, quiet))
        #expect(handoff.streamStarts() == (true, loud))
        #expect(handoff.streamStarts() == (false, nil), "none given: the one applied goes on")
        handoff.abandon()
        #expect(handoff.streamStarts() == (false, nil), "a stream taken down starts nothing")
    }

    @Test func durationNanoseconds() {
        #expect(Duration.seconds(1.5).nanoseconds == 1_500_000_000)
        #expect(Duration.milliseconds(20).nanoseconds == 20_000_000)
        #expect(Duration.seconds(3600).nanoseconds == 3_600_000_000_000)
        #expect(Duration.zero.nanoseconds == 0)
    }
}

@Suite("Pipeline (real GStreamer, fake sink)")
@MainActor
struct PipelineTests {
    @Test func invalidSinkDescriptionIsRejected() {
        #expect(throws: Pipeline.SetupError.self) { try Pipeline.validate(audioSink: "nosuchelement-quaver ! alsonot") }
        do {
            try Pipeline.validate(audioSink: "fakesink sync=true !")
            Issue.record("a dangling link was accepted")
        } catch {
            #expect(error.description.contains("fakesink sync=true !"))
        }
    }

    @Test func playsAFileToTheEnd() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 0.5, in: folder)
        let probe = PipelineProbe()
        let pipeline: Pipeline = probe.pipeline
        pipeline.queryPosition()
        #expect(await probe.waitForEvent { if case .position = $0 { true } else { false } })
        #expect(probe.lastPosition == nil, "nothing loaded, nowhere to be")

        pipeline.load(files[0].absoluteString, state: .playing, number: 1, fresh: false)
        #expect(await probe.waitForEvent { if case .asyncDone = $0 { true } else { false } })
        #expect(await probe.wait { probe.reachedPlaying })
        #expect(probe.events.contains { if case .streamStart = $0 { true } else { false } })
        let facts = try #require(probe.lastFacts)
        #expect(abs((facts.duration?.inSeconds ?? 0) - 0.5) < 0.05)
        #expect(facts.isSeekable)
        #expect(
            probe.loads.dropFirst().allSatisfy { $0 == 1 },
            "every event after the load carries its number: \(probe.loads)")

        #expect(await probe.wait(upTo: .seconds(4)) { probe.endedStream })
        #expect(probe.errorMessage == nil)
        pipeline.queryPosition()
        #expect(await probe.wait { probe.lastPosition != nil })
        let position = try #require(probe.lastPosition).inSeconds
        #expect(abs(position - 0.5) < 0.1, "position at the end: \(position)")
        pipeline.release()
    }

    private static func isProgress(_ event: Pipeline.Event) -> Bool {
        if case .progress = event { true } else { false }
    }

    /// Plays `file` and takes a plain progress sample of it (nil, with the issue recorded,
    /// when none comes): what a pace watch starts from.
    private static func playingSample(of file: URL, in probe: PipelineProbe) async -> Pipeline.Progress? {
        probe.pipeline.load(file.absoluteString, state: .playing, number: 1, fresh: false)
        #expect(await probe.wait { probe.reachedPlaying })
        probe.pipeline.sampleProgress()
        #expect(await probe.waitForEvent(isProgress))
        guard case .progress(let reference, nil)? = probe.events.last(where: isProgress) else {
            Issue.record("no plain sample: \(probe.events)")
            return nil
        }
        return reference
    }

    /// While the audio keeps its pace, the output's streaming thread judges it, no job runs
    /// and nothing is reported; once it stops (paused here), the first sample off the pace
    /// comes with the calm one before it, and the watch stops.
    @Test func aPaceWatchReportsOnlyTheFirstSampleOffThePace() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 10, in: folder)
        let probe = PipelineProbe()
        let pipeline: Pipeline = probe.pipeline
        guard let reference = await Self.playingSample(of: files[0], in: probe) else { return }
        pipeline.watchPace(PaceWatch(reference: reference, rate: 1, share: 0.8, period: .milliseconds(200)))
        try await Task.sleep(for: .milliseconds(100))
        let jobs = pipeline.jobs.jobsStarted
        // Ten periods of a playing pipeline, measured as a window: nothing is reported, and
        // the output's streaming thread judges the pace, so that no job runs for it.
        try await Task.sleep(for: .seconds(2))
        #expect(probe.events.filter(Self.isProgress).count == 1, "calm samples are not reported: \(probe.events)")
        #expect(pipeline.jobs.jobsStarted == jobs, "no job ran while the audio kept its pace")
        pipeline.setState(.paused)
        #expect(await probe.wait(upTo: .seconds(5)) { probe.events.filter(Self.isProgress).count == 2 })
        guard case .progress(let off, let calm?)? = probe.events.last(where: Self.isProgress) else {
            Issue.record("the report carries no calm sample: \(probe.events)")
            return
        }
        let (calmAt, offAt, from) = (
            try #require(calm.position), try #require(off.position), try #require(reference.position)
        )
        #expect(calmAt > from, "the calm sample moved on from the reference")
        #expect(offAt - calmAt < (off.at - calm.at) * 0.8, "off the pace: \(calmAt) → \(offAt)")
        try await Task.sleep(for: .seconds(1))
        #expect(probe.events.filter(Self.isProgress).count == 2, "sampling stopped with its report")
        pipeline.release()
    }

    /// An output that takes the audio at a third of its pace, or less (each buffer held for
    /// 300 ms before a synchronised sink): the audio moves, but off its pace, and that is
    /// reported with a calm sample behind the one off the pace.
    @Test func aPaceWatchReportsAnOutputSlowerThanThePace() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 30, in: folder)
        let probe = PipelineProbe(audioSink: "identity sleep-time=300000 ! fakesink sync=true")
        let pipeline: Pipeline = probe.pipeline
        guard let reference = await Self.playingSample(of: files[0], in: probe) else { return }
        let watched = ContinuousClock.now
        pipeline.watchPace(PaceWatch(reference: reference, rate: 1, share: 0.8, period: .milliseconds(500)))
        #expect(await probe.wait(upTo: .seconds(5)) { probe.events.filter(Self.isProgress).count == 2 })
        guard case .progress(let off, let calm?)? = probe.events.last(where: Self.isProgress) else {
            Issue.record("the report carries no calm sample: \(probe.events)")
            return
        }
        #expect(off.at - watched < .seconds(3), "reported within a few periods: \(off.at - watched)")
        let (calmAt, offAt, from) = (
            try #require(calm.position), try #require(off.position), try #require(reference.position)
        )
        #expect(calmAt >= from, "the calm sample is not behind the reference")
        #expect(offAt > calmAt, "the audio moved: \(calmAt) → \(offAt)")
        #expect(offAt - calmAt < (off.at - calm.at) * 0.8, "off the pace: \(calmAt) → \(offAt)")
        pipeline.release()
    }

    @Test func pausedSeekLandsOnTheTarget() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = PipelineProbe()
        let pipeline: Pipeline = probe.pipeline
        pipeline.load(files[0].absoluteString, state: .paused, number: 1, fresh: false)
        #expect(await probe.waitForEvent { if case .asyncDone = $0 { true } else { false } })
        let before = probe.events.count
        pipeline.seek(to: .milliseconds(2200), rate: 1)
        #expect(
            await probe.wait {
                probe.events.dropFirst(before).contains { if case .asyncDone = $0 { true } else { false } }
            })
        let position = try #require(probe.lastFacts?.position).inSeconds
        #expect(abs(position - 2.2) < 0.05, "position after the seek: \(position)")
        pipeline.release()
    }

    @Test func brokenFileIsAnErrorEvent() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = try folder.write("garbage.flac", data: garbageBytes)
        let probe = PipelineProbe()
        probe.pipeline.load(file.absoluteString, state: .paused, number: 1, fresh: false)
        #expect(await probe.wait { probe.errorMessage != nil })
        #expect(!(probe.errorMessage ?? "").isEmpty)
        #expect(probe.errorURI == file.absoluteString, "the error names the URI that failed")
        probe.pipeline.release()
    }

    /// Events of a stream taken down are never mistaken for the next one's: what was still
    /// queued is dropped, and what comes after a load carries its number.
    @Test func eventsCarryTheirLoad() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 1, in: folder)
        let probe = PipelineProbe()
        probe.pipeline.load(files[0].absoluteString, state: .playing, number: 1, fresh: false)
        probe.pipeline.load(files[1].absoluteString, state: .paused, number: 2, fresh: false)
        #expect(
            await probe.wait {
                probe.events.indices.contains { probe.loads[$0] == 2 && probe.isAsyncDone(probe.events[$0]) }
            })
        let firstOfSecond = try #require(probe.loads.firstIndex(of: 2))
        #expect(!probe.loads[firstOfSecond...].contains(1), "nothing of the first load after the second began")
        probe.pipeline.release()
    }

    @Test func audioOnlyElements() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 1, in: folder)
        let probe = PipelineProbe()
        probe.pipeline.load(files[0].absoluteString, state: .paused, number: 1, fresh: false)
        #expect(await probe.wait { !probe.elements.isEmpty })
        let names = probe.elements
        #expect(names.contains("fakesink"))
        #expect(names.contains("scaletempo"), "keeps the pitch when the rate changes")
        #expect(names.contains("flacdec"))
        #expect(!names.contains { $0.contains("video") || $0.contains("text") || $0.contains("subparse") }, "\(names)")
        probe.pipeline.release()
    }

    @Test
    func videoStreamsAreNeverDecoded() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.path("clip.ogv")
        try await Media.videoWithAudio(file)
        let probe = PipelineProbe()
        probe.pipeline.load(file.absoluteString, state: .paused, number: 1, fresh: false)
        #expect(await probe.wait { !probe.elements.isEmpty })
        #expect(probe.errorMessage == nil)
        let names = probe.elements
        #expect(names.contains("vorbisdec"), "\(names)")
        #expect(!names.contains { $0.contains("video") }, "no video sink or converter: \(names)")
        #expect(!names.contains("theoradec"), "\(names)")
        probe.pipeline.release()
    }

    /// A state change that GStreamer does not return from (here an element that sleeps five
    /// seconds on every buffer: taking its pad down waits for the sleep) never holds the
    /// caller: the command returns at once, the pipeline reports itself stuck after the
    /// limit, reports nothing more, and is freed once GStreamer lets go of it.
    @Test func stateChangeThatDoesNotReturnIsReportedStuck() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 3, in: folder)
        let probe = PipelineProbe(
            audioSink: "identity sleep-time=5000000 ! fakesink sync=false", stuckLimit: .milliseconds(300))
        let pipeline: Pipeline = probe.pipeline
        pipeline.load(files[0].absoluteString, state: .playing, number: 1, fresh: false)
        #expect(await probe.wait(upTo: .seconds(20)) { probe.reachedPlaying })
        // The first buffer has passed; the element sleeps on the next one now. Nothing
        // announces that its streaming thread has entered the sleep: this margin arranges
        // GStreamer's state for the test, it waits for nothing the test could observe.
        try await Task.sleep(for: .milliseconds(200))
        let asked = ContinuousClock.now
        pipeline.setState(.ready)
        pipeline.queryPosition()
        pipeline.seek(to: .zero, rate: 1)
        #expect(ContinuousClock.now - asked < .milliseconds(50), "the commands waited \(ContinuousClock.now - asked)")
        #expect(await probe.waitForEvent(upTo: .seconds(5)) { if case .stuck = $0 { true } else { false } })
        let waited = ContinuousClock.now - asked
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "reported after \(waited)")
        let reported = probe.events.count
        var freed = false
        pipeline.release {
            freed = true
            probe.recheck()
        }
        #expect(
            await probe.wait(upTo: .seconds(10)) { freed }, "the element's sleep ends, and with it the state change")
        #expect(probe.events.count == reported, "nothing is reported after a pipeline got stuck")
    }

    @Test func volumeIsSet() async throws {
        let probe = PipelineProbe(audioSink: "fakesink")
        probe.pipeline.setVolume(0.25)
        #expect(
            await probe.waitForEvent {
                if case .outputVolumeChanged(let heard) = $0 { abs(heard - 0.25) < 0.001 } else { false }
            })
        probe.pipeline.release()
    }
}

@Suite("Pipeline: whose error it is")
struct PipelineErrorSourceTests {
    @Test(
        "an error of the audio sink is the output's; of a converter, a decoder or a source, the track's",
        arguments: [
            (
                "/GstPlayBin:quaver-playbin/GstPlaySink:playsink/GstBin:abin/GstAutoAudioSink:quaver-audio-sink/GstPulseSink:quaver-audio-sink-actual-sink-pulse",
                true
            ),
            ("/GstPlayBin:quaver-playbin/GstPlaySink:playsink/GstBin:abin/GstBin:bin0/GstPulseSink:pulsesink0", true),
            ("/GstPlayBin:quaver-playbin/GstPlaySink:playsink/GstBin:abin/GstBin:bin0/GstFileSink:filesink0", true),
            (
                "/GstPlayBin:quaver-playbin/GstPlaySink:playsink/GstBin:abin/GstPlaySinkAudioConvert:aconv/GstAudioConvert:conv",
                false
            ),
            (
                "/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1/GstDecodeBin:decodebin0/GstFlacDec:flacdec0",
                false
            ),
            ("/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1/GstSoupHTTPSrc:source", false),
        ])
    func errorSource(path: String, isOutput: Bool) {
        #expect(ElementPath(path).isOutput == isOutput)
        #expect(ElementPath(path).description == path, "read back as GStreamer wrote it")
    }

    /// The parts of a GStreamer error the pipeline keeps: its domain and code, by name.
    @Test func anErrorKeepsItsDomainAndCode() {
        let decode = PipelineError(
            message: "Could not decode stream.", domain: .init("gst-stream-error-quark"), code: 7,
            source: ElementPath("/GstPlayBin:p/GstURIDecodeBin:uridecodebin0/GstDecodeBin:d/GstFlacDec:f"))
        #expect(decode.domain == .stream && decode.code == 7 && !decode.inOutput)
        #expect(decode.source.decoderBin == ElementPath("/GstPlayBin:p/GstURIDecodeBin:uridecodebin0"))
        #expect(PipelineError.Domain("gst-resource-error-quark") == .resource)
        #expect(PipelineError.Domain("my-element-error") == .other("my-element-error"))
        #expect(decode.description == "stream error 7 from \(decode.source): Could not decode stream.")
    }

    static func error(_ message: String, debug: String?, source: String, code: Int32 = 1) -> String {
        PipelineError(message: message, debug: debug, domain: .stream, code: code, source: ElementPath(source)).reason
    }

    static let http = "/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin0/GstSoupHTTPSrc:source"

    /// A user acts on "Connection refused", not on "Could not establish connection".
    @Test func aNetworkErrorSaysItsCause() {
        let debug =
            "../ext/soup/gstsouphttpsrc.c(1627): gst_soup_http_src_parse_status (): \(Self.http):\nCould not connect: Connection refused"
        #expect(
            Self.error("Could not establish connection to server.", debug: debug, source: Self.http)
                == "Could not establish connection to server. (Could not connect: Connection refused)")
    }

    /// libsoup 3's source says only "Internal data stream error" when the connection fails.
    @Test func aBareFlowErrorOfANetworkSourceSaysTheConnectionFailed() {
        let debug =
            "../libs/gst/base/gstbasesrc.c(3132): gst_base_src_loop (): \(Self.http):\nstreaming stopped, reason error (-5)"
        #expect(
            Self.error("Internal data stream error.", debug: debug, source: Self.http)
                == "the connection to the server failed (refused, unreachable or dropped)")
    }

    @Test func aCauseTheMessageGivesOrAnotherElementsIsLeftOut() {
        let notFound =
            "gstsouphttpsrc.c(1627): parse_status (): \(Self.http):\nNot Found (404), URL: http://h/x.mp3, Redirect to: (NULL)"
        #expect(Self.error("Not Found", debug: notFound, source: Self.http) == "Not Found")
        let decoder =
            "/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin0/GstDecodeBin:decodebin0/GstFlacDec:flacdec0"
        #expect(
            Self.error(
                "Internal data stream error.", debug: "gstflacdec.c(1): x:\nstreaming stopped", source: decoder)
                == "Internal data stream error.")
        #expect(Self.error("Could not read.", debug: nil, source: Self.http) == "Could not read.")
    }
}

/// The loudness chain converts samples to floats only for plans that limit.
@Suite("loudness chain")
struct LoudnessChainTests {
    @Test func theLimiterIsInTheChainOnlyWhenAskedFor() throws {
        GStreamer.initialize()
        let handoff = GaplessHandoff(answerWait: .seconds(1)) { 0 }
        let plain = try #require(LoudnessChain.make(handoff: handoff, limiter: false) { _ in })
        #expect(!plain.hasLimiter)
        let limiting = try #require(LoudnessChain.make(handoff: handoff, limiter: true) { _ in })
        #expect(limiting.hasLimiter)
    }
}
