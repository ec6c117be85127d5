import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The player's small pure parts: each decision with its inputs made up.
@Suite("Player parts")
struct PlayerPartsTests {
    let start = ContinuousClock.now

    @Test func backgroundReadsRunAFewAtATimeEachEntryOnce() {
        var schedule = ReadSchedule(concurrent: 2, maximumPending: 3)
        var needed: Set<UInt64> = [1, 2, 3, 4, 5]
        schedule.request([1, 2, 1, 9]) { needed.contains($0) }
        #expect(schedule.pending == [1, 2], "asked once each; 9 needs no read")
        schedule.request([3, 4, 5]) { needed.contains($0) }
        #expect(schedule.pending == [3, 4, 5], "only the latest requests are kept")
        needed.remove(3)
        #expect(after { schedule.next { needed.contains($0) } } == 4, "3 was read meanwhile")
        #expect(after { schedule.next { needed.contains($0) } } == 5)
        #expect(after { schedule.next { needed.contains($0) } } == nil, "two run already")
        #expect(schedule.inFlight == 2)
        schedule.request([1]) { needed.contains($0) }
        schedule.finished()
        #expect(after { schedule.next { needed.contains($0) } } == 1, "requests dropped before can be asked again")
    }

    @Test func aReloadAfterAFailedHandOverIsTimedRetriedOnceThenSkipped() {
        var watch = PrerollWatch()
        watch.handOverFailed()
        #expect(after { watch.loadStarted(1, isLocal: true) } == PrerollWatch.limit)
        #expect(after { watch.timedOut(decodedAudio: false) } == .retry, "after a hand-over, playbin is at fault")
        #expect(after { watch.loadStarted(1, isLocal: true) } == PrerollWatch.limit, "the retry is timed too")
        #expect(after { watch.timedOut(decodedAudio: false) } == .skip)
        #expect(watch.stage == .off)
        #expect(after { watch.timedOut(decodedAudio: false) } == nil)
    }

    @Test func anOrdinaryLoadThatNeverPrerollsIsRetriedOnceThenTheOutputFails() {
        var watch = PrerollWatch()
        #expect(
            after { watch.loadStarted(1, isLocal: true) } == PrerollWatch.outputLimit,
            "every local load is timed, generously")
        #expect(PrerollWatch.outputLimit > PrerollWatch.limit)
        #expect(after { watch.timedOut(decodedAudio: true) } == .retry)
        #expect(after { watch.loadStarted(1, isLocal: true) } == PrerollWatch.outputLimit)
        #expect(
            after { watch.timedOut(decodedAudio: true) } == .outputFailed,
            "audio waits for the output: the track is not at fault, the output is")
        #expect(
            after { watch.loadStarted(2, isLocal: true) } == PrerollWatch.outputLimit, "the next load is timed afresh")
        #expect(after { watch.loadStarted(3, isLocal: false) } == nil, "a stream has its stall watch")
    }

    @Test func anOrdinaryLoadThatDecodesNothingIsLoadedOnceMoreThenSkipped() {
        var watch = PrerollWatch()
        _ = watch.loadStarted(1, isLocal: true)
        #expect(
            after { watch.timedOut(decodedAudio: false) } == .retryUndecoded,
            "a demuxer can race playbin as it links it: once more, from NULL")
        #expect(after { watch.loadStarted(1, isLocal: true) } == PrerollWatch.limit, "the last try is timed shorter")
        #expect(
            after { watch.timedOut(decodedAudio: false) } == .undecodable, "no decoder made audio: the file's fault")
        #expect(watch.stage == .off)

        // The last try decodes audio: the file plays, and its output has the usual limit.
        _ = watch.loadStarted(4, isLocal: true)
        _ = watch.timedOut(decodedAudio: false)
        _ = watch.loadStarted(4, isLocal: true)
        #expect(after { watch.timedOut(decodedAudio: true) } == .retry)
        #expect(after { watch.loadStarted(4, isLocal: true) } == PrerollWatch.outputLimit)
        #expect(after { watch.timedOut(decodedAudio: true) } == .outputFailed)

        // Another entry's load, or a preroll, ends the last try.
        _ = watch.loadStarted(5, isLocal: true)
        _ = watch.timedOut(decodedAudio: false)
        #expect(after { watch.loadStarted(6, isLocal: true) } == PrerollWatch.outputLimit)
        _ = watch.timedOut(decodedAudio: false)
        _ = watch.loadStarted(6, isLocal: true)
        watch.prerolled()
        #expect(watch.stage == .off)
        _ = watch.loadStarted(2, isLocal: true)
        #expect(after { watch.timedOut(decodedAudio: true) } == .retry)
        _ = watch.loadStarted(2, isLocal: true)
        #expect(
            after { watch.timedOut(decodedAudio: false) } == .undecodable,
            "a retry that decodes nothing is the file's fault too")
    }

    @Test func aPrerollOrAnotherLoadEndsThePrerollWatch() {
        var watch = PrerollWatch()
        watch.handOverFailed()
        #expect(after { watch.loadStarted(1, isLocal: false) } == nil, "a stream has its stall watch")
        #expect(watch.stage == .off)
        watch.handOverFailed()
        _ = watch.loadStarted(1, isLocal: true)
        watch.prerolled()
        #expect(after { watch.timedOut(decodedAudio: true) } == nil)
        watch.handOverFailed()
        _ = watch.loadStarted(1, isLocal: true)
        #expect(after { watch.timedOut(decodedAudio: true) } == .retry)
        #expect(
            after { watch.loadStarted(2, isLocal: true) } == PrerollWatch.outputLimit,
            "another entry: the retry is moot")
        #expect(watch.stage == .watching(entry: 2, retried: false, afterHandOver: false))
        watch.handOverFailed()
        watch.prerolled()
        #expect(watch.stage == .reloadAfterHandOver, "a seek's completion does not forget the reload to come")
    }

    @Test func onlyAnInterruptionNobodyActedOnResumes() {
        var interruption = Interruption()
        #expect(interruption.response(to: .paused, requested: .playing) == .pause)
        #expect(interruption.response(to: .paused, requested: .paused) == .nothing)
        #expect(interruption.response(to: .playing, requested: .paused) == .nothing, "not paused by an interruption")
        interruption.interrupted()
        #expect(interruption.response(to: .playing, requested: .paused) == .resume)
        interruption.userActed()
        #expect(interruption.response(to: .playing, requested: .paused) == .nothing, "someone acted since")
    }

    @Test func errorsOfAFailedHandOversDecoderAreEchoes() {
        var errors = ErrorAttribution()
        let decoder = "/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1"
        #expect(!errors.isEcho(ElementPath(decoder + "/GstSoupHTTPSrc:source")))
        errors.handOverFailed(source: ElementPath(decoder + "/GstSoupHTTPSrc:source"))
        #expect(errors.ignoredSource == ElementPath(decoder))
        #expect(errors.isEcho(ElementPath(decoder + "/GstDecodeBin:decodebin3")))
        #expect(
            !errors.isEcho(ElementPath("/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin0/GstFileSrc:source")))
        // uridecodebin1 is not inside uridecodebin10, though one name starts the other.
        #expect(!errors.isEcho(ElementPath("/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin10/GstFileSrc:s")))
        #expect(ElementPath("/GstPlayBin:quaver-playbin/GstPlaySink:playsink").decoderBin == nil)
    }

    @Test func warningsAreToldOnceOrNotAtAll() {
        var errors = ErrorAttribution()
        #expect(after { errors.classify(warning: "no output", source: "quaver-audio-sink") } == .noOutput)
        #expect(after { errors.classify(warning: "no output", source: "autoaudiosink0") } == .noOutputAgain)
        #expect(
            after { errors.classify(warning: "No decoder available for type 'video/x-h264'", source: "decodebin0") }
                == .notDecoded)
        #expect(after { errors.classify(warning: "Internal data stream error", source: "decodebin0") } == .other)
    }

    @Test func aVolumeSetLatelyComingBackIsNoChange() {
        var echoes = VolumeEchoes()
        echoes.set(0.5, at: start)
        echoes.set(0.6, at: start + .milliseconds(100))
        #expect(!echoes.isChange(0.5004, current: 0.6, at: start + .seconds(1)), "an echo of the earlier one")
        #expect(!echoes.isChange(0.6, current: 0.6, at: start + .seconds(1)))
        #expect(echoes.isChange(0.3, current: 0.6, at: start + .seconds(1)), "a mixer")
        #expect(echoes.isChange(0.5, current: 0.6, at: start + .seconds(3)), "long after: a mixer")
        #expect(!echoes.isChange(.nan, current: 0.6, at: start))
    }

    @Test func thePositionIsAskedForOnceASecondAndNotRightAfterASwitch() {
        var follow = PositionFollow()
        #expect(!after { follow.shouldQuery(now: start, isPlaying: false) })
        #expect(after { follow.shouldQuery(now: start, isPlaying: true) })
        #expect(!after { follow.shouldQuery(now: start + .milliseconds(500), isPlaying: true) })
        #expect(after { follow.shouldQuery(now: start + .seconds(1), isPlaying: true) })
        follow.switched(at: start + .seconds(2))
        #expect(!after { follow.shouldQuery(now: start + .seconds(3), isPlaying: true) })
        #expect(!follow.follows(.seconds(9), predicted: .zero, at: start + .seconds(3)), "the old stream's answer")
        #expect(after { follow.shouldQuery(now: start + .seconds(5), isPlaying: true) })
        #expect(follow.follows(.seconds(9), predicted: .zero, at: start + .seconds(5)))
        #expect(!follow.follows(.milliseconds(200), predicted: .zero, at: start + .seconds(5)), "within the tolerance")
        #expect(follow.follows(.zero, predicted: .milliseconds(300), at: start + .seconds(5)), "behind")
        #expect(
            !follow.follows(.milliseconds(100), predicted: .seconds(41), at: start + .seconds(5), nextTaken: true),
            "the next stream's answer, before its STREAM_START is heard")
        #expect(
            follow.follows(.seconds(40), predicted: .seconds(41), at: start + .seconds(5), nextTaken: true),
            "a drift of the current one")
    }

    @Test func theFurthestShownPositionIsPerLoad() {
        var follow = PositionFollow()
        follow.shown(.seconds(5), load: 1)
        follow.shown(.seconds(3), load: 1)
        #expect(follow.furthestShown(load: 1) == .seconds(5))
        #expect(follow.furthestShown(load: 2) == nil)
        follow.shown(.seconds(1), load: 2)
        #expect(follow.furthestShown(load: 2) == .seconds(1))
    }

    @Test func onlyAReadFileOrAStreamIsHandedOverForAGaplessSwitch() {
        var current = Player.Entry(id: 1, uri: "file:///a.flac")
        let unread = Player.Entry(id: 2, uri: "file:///b.flac")
        var read = unread
        read.info = TrackInfo()
        let stream = Player.Entry(id: 3, uri: "http://radio.example/live")
        #expect(HandOverPlan(current: current, next: read) == .nothing, "what the current file holds is not known")
        current.info = TrackInfo()
        #expect(HandOverPlan(current: current, next: nil) == .nothing)
        #expect(HandOverPlan(current: current, next: unread) == .readFirst(entry: 2, uri: "file:///b.flac"))
        #expect(HandOverPlan(current: current, next: read) == .handOver(.init(entryID: 2, uri: "file:///b.flac")))
        #expect(
            HandOverPlan(current: current, next: stream)
                == .handOver(.init(entryID: 3, uri: "http://radio.example/live")))
        current.info?.oversizedPictureBytes = 20_000_000
        #expect(HandOverPlan(current: current, next: read) == .nothing, "a load frees the oversized picture")
    }

    @Test func anOvertakenSeeksCompletionIsNotTheStreamsNewPlace() {
        var seeks = SeeksInFlight()
        seeks.sent()
        #expect(after { seeks.completed(landed: .seconds(3), target: .seconds(9)) }, "the only seek: wherever it lands")
        seeks.sent()
        seeks.sent()
        #expect(
            !after { seeks.completed(landed: .seconds(3), target: .seconds(9)) },
            "the first of two, far from the newest target")
        #expect(seeks.count == 1)
        #expect(after { seeks.completed(landed: .milliseconds(9_200), target: .seconds(9)) })
        #expect(seeks.count == 0)
        seeks.sent()
        seeks.sent()
        #expect(
            after { seeks.completed(landed: .milliseconds(8_800), target: .seconds(9)) },
            "close enough to be the newest")
        seeks.sent()
        seeks.loaded()
        #expect(seeks.count == 0)
    }

    @Test func aStreamShowsItsTagsInPlaceOfEarlierOnes() {
        var facts = Pipeline.Facts()
        facts.isSeekable = false
        var tags = StreamTags()
        tags.organization = "Radio X"
        let first = tags.info(known: nil, facts: facts)
        #expect(first.title == "Radio X" && first.album == "Radio X" && first.isLive && first.duration == nil)
        var known = first
        known.artists = ["Old"]
        tags.title = "Song"
        let next = tags.info(known: known, facts: facts)
        #expect(
            next.title == "Song" && next.artists == ["Radio X"], "earlier tags go; the station stands for the artist")
        facts.duration = .seconds(200)
        facts.isSeekable = true
        let measured = next.withDurationLearned(from: facts)
        #expect(measured?.duration == .seconds(200) && measured?.isLive == false && measured?.isSeekable == true)
        #expect(measured?.withDurationLearned(from: facts) == nil, "published once")
    }
}

/// Runs a mutating step outside the `#expect` macro, which cannot take one.
func after<T>(_ step: () -> T) -> T { step() }

@Suite("a stream that ends before its length")
struct EarlyEndTests {
    @Test func aFileEndingFarBeforeItsLengthIsLoadedAgainOnceThenGoesOn() {
        var early = EarlyEnd()
        #expect(early.ended(1, at: .zero, length: .seconds(30), isLocal: true) == .reload(at: .zero))
        #expect(early.reloaded == 1)
        #expect(early.ended(1, at: .seconds(2), length: .seconds(30), isLocal: true) == .endedEarlyAgain)
        #expect(early.reloaded == nil)
        #expect(
            early.ended(1, at: .seconds(3), length: .seconds(30), isLocal: true) == .reload(at: .seconds(3)),
            "a later early end of the same entry is judged afresh")
    }

    @Test func anEndNearTheLengthAStreamOrAnUnknownLengthIsTheEnd() {
        var early = EarlyEnd()
        #expect(early.ended(1, at: .seconds(29), length: .seconds(30), isLocal: true) == .ended)
        #expect(early.ended(1, at: .seconds(29.9), length: .seconds(30), isLocal: true) == .ended)
        #expect(early.ended(2, at: .zero, length: .seconds(30), isLocal: false) == .ended, "a stream's server decides")
        #expect(early.ended(3, at: .zero, length: nil, isLocal: true) == .ended)
        #expect(early.ended(4, at: .zero, length: .seconds(1), isLocal: true) == .ended, "too short to tell")
        #expect(early.reloaded == nil)
    }

    @Test func anotherEntryEndingEarlyIsLoadedAgainToo() {
        var early = EarlyEnd()
        #expect(early.ended(1, at: .zero, length: .seconds(30), isLocal: true) == .reload(at: .zero))
        #expect(early.ended(2, at: .zero, length: .seconds(30), isLocal: true) == .reload(at: .zero))
        #expect(early.reloaded == 2)
    }
}
