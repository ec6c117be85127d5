import Media
import PlaybackPipeline
import PlaybackVocabulary

/// Whether the audio of a stream that should play moves: Playing is backed by progress.
///
/// Pure: the pipeline's samples (the stream's position and the pipeline's clock, with the
/// instant they were taken) are handed in. While the transport plays, its owner samples the
/// pipeline every ``period`` (while the audio keeps its pace, the output judges it, see
/// ``calmPeriod``) and feeds each sample here; nothing runs otherwise, so a paused
/// player never wakes for it. Audio that did not move since the sample before is held: the
/// position clock stands where the audio is, so that Position never runs ahead of what was
/// heard by more than a sample or two. Audio that has not moved for ``grace`` is waited for:
/// clients see playback waiting (Apple's rate 0, which MPRIS shows as `Paused`), with one log
/// line. What the stall is comes from the pipeline's clock:
/// - The clock stands too: the output takes no audio (a sound server that lost its sink, or
///   corked or unlinked the stream). Playback goes on by itself when the audio moves again,
///   and after ``outputLimit`` the output counts as failed: paused where the audio is. An
///   output whose reader comes back by itself (``waitsForOutput``) is waited for without end.
/// - The clock runs: nothing more is decoded. A local file is loaded again once where it
///   stopped, then skipped, after ``decodeLimit``; a network stream is skipped after
///   ``outputLimit`` (its own watch usually does first).
/// Whatever the cause, audio that stands for the grace at the track's end (within
/// ``endMargin``) loads what follows afresh: a gapless switch that never happened. Unless
/// what follows is a network stream, which its own watch gives the stall limit to start:
/// playback waits for it.
struct ProgressWatch: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    /// One look at the pipeline.
    struct Sample: Sendable, Equatable {
        var position: Duration
        /// The pipeline clock's time (nil: it has none).
        var clock: Duration?
        /// The decoded audio waiting in front of the sink (nil: not known).
        var queued: Duration? = nil
        var at: Instant
        /// Since the sample before, the process waited for a CPU far longer than it ran.
        var starved = false
    }

    /// The stream watched.
    struct Stream: Sendable, Equatable {
        var entry: UInt64
        var isLocal: Bool
        /// Its length, when known.
        var duration: Duration?
        /// The playback rate: how fast the position should move.
        var rate: Double
    }

    /// Why the audio stands, from the pipeline's clock.
    enum Cause: Sendable, Equatable {
        /// The clock stands too: the output takes no audio.
        case output
        /// The clock runs: nothing more reaches the sink.
        case decoding
    }

    /// Audio that stopped moving.
    struct Stall: Sendable, Equatable {
        /// Where the audio stands.
        var heard: Duration
        /// When it was last seen moving.
        var since: Instant
        /// How long it has stood when the stall was declared.
        var stoodFor: Duration
        /// How far the pipeline's clock went meanwhile (nil: it has none).
        var clockAdvance: Duration?
        /// The decoded audio waiting in front of the sink (nil: not known).
        var queued: Duration?
        var cause: Cause
        /// The last sample at which the process was starved of CPU: the stall's limits count
        /// from it, not from its start (nil: never while it stood).
        var starvedAt: Instant? = nil
    }

    enum Stage: Sendable, Equatable {
        case off
        /// Sampling. `previous`: the last sample; `stoodSince`: the last sample at which the
        /// audio moved, while it stands (nil: it moves); samples before `judgeFrom` are not
        /// judged (playbin still answers about the stream a gapless switch left).
        case watching(Stream, previous: Sample?, stoodSince: Sample?, judgeFrom: Instant?)
        /// The audio has stood for the grace: clients see playback waiting.
        case waiting(Stream, Stall, previous: Sample)
        /// The audio keeps its pace: the pipeline samples it on its own from `reference`, and
        /// reports only the first sample off that pace, with the calm one before it.
        case calm(Stream, reference: Sample)
    }

    /// What the owner does, in order.
    enum Action: Sendable, Equatable {
        /// Samples the pipeline again after a while.
        case sample(after: Duration)
        /// Has the pipeline sample the stream every `period` on its own, from `reference`,
        /// and report the first sample that moves less than ``calmShare`` of what `rate`
        /// makes (see ``PaceWatch``).
        case watchPace(from: Sample, rate: Double, every: Duration)
        /// The position clock stands at this position (nothing is published).
        case hold(at: Duration)
        /// Clients see playback waiting where the audio stands; one log line says why.
        case wait(Stall)
        /// The audio stands while the machine gives the process no CPU: the stall's limits
        /// count from the last such sample (one log line a stall).
        case busy(Stall)
        /// The audio moves again, from `position` at `at`: the clock runs from there and
        /// clients are told (a `Seeked` if it jumped). `waited`: how long clients saw it
        /// waiting (nil: they never did).
        case resume(at: Duration, when: Instant, waited: Duration?)
        /// A local file's decoding stopped mid-track: it is loaded again where it stood.
        case reload(Stall)
        /// The entry cannot go on: it is skipped, for `reason`.
        case skip(Stall, reason: String)
        /// The track stands at its end: what follows is loaded afresh.
        case loadNext(Stall)
        /// The output took no audio for ``outputLimit``: it counts as failed, paused where the
        /// audio stands, for `reason`.
        case outputFailed(Stall, reason: String)
    }

    /// How often a playing pipeline is sampled: from its start, and while its audio is off
    /// its pace.
    static let period = Duration.milliseconds(250)
    /// How long audio that keeps its pace may fall behind it before the pipeline samples it
    /// (``Action/watchPace(from:rate:every:)``). While it keeps it, nothing is sampled: the
    /// output's streaming thread, which wakes for every buffer anyway, judges the pace as
    /// each buffer enters the output, so that no thread of the daemon's own wakes while a
    /// music player plays for hours. Audio that stops is sampled within this period
    /// and the length of the last buffer the output took, with a calm sample where the
    /// output's audio last kept its pace, and sampling goes back to ``period``: Position runs
    /// ahead of the audio by about a second before it is held, and clients see playback
    /// waiting within 2.3 s of the audio stopping (the ``grace`` counts from the calm
    /// sample). An output whose pad cannot be watched is sampled this often instead, with
    /// the same bounds.
    static let calmPeriod = Duration.seconds(1)
    /// The share of the expected progress that counts as keeping pace.
    static let calmShare = 0.8
    /// How long the audio may stand before clients see playback waiting.
    static let grace = Duration.milliseconds(1500)
    /// How long the decoding may stand before the track is loaded again or skipped.
    static let decodeLimit = Duration.seconds(3)
    /// How long the output may take no audio before it counts as failed.
    static let outputLimit = Duration.seconds(10)
    /// How near its end a track that stands counts as ended.
    static let endMargin = Duration.milliseconds(500)
    /// The share of the expected progress below which audio counts as standing. An output
    /// slower than real time takes its audio in bursts (a buffer at a time): over one sample
    /// it can move well under half of the expected progress, and held at every such sample,
    /// the clock's resumes told clients a backward `Seeked` about once a second (28 in 23 s
    /// at 0.69x). A fifth still tells audio that stands from audio that moves slowly.
    static let movingShare = 0.2
    /// How much decoded audio in front of the sink shows that the sink takes none.
    static let queuedAudio = Duration.milliseconds(20)

    /// Whether an output that takes no audio is waited for without end, sampled every
    /// ``readerPeriod`` after ``outputLimit`` (a Snapcast pipe that snapserver will read
    /// again), rather than counted as failed.
    var waitsForOutput = false
    /// How often an output waited for without end is sampled.
    static let readerPeriod = Duration.seconds(1)

    private(set) var stage = Stage.off
    /// The entry loaded again for a decoding stall: a second stall skips it.
    private(set) var reloadedEntry: UInt64?

    /// Clients are shown playback waiting for the audio.
    var isWaiting: Bool {
        if case .waiting = stage { return true }
        return false
    }

    /// The position clock stands where the audio is (it stood for a sample, or is waited for).
    var isHolding: Bool {
        switch stage {
        case .off: false
        case .watching(_, _, let stoodSince, _): stoodSince != nil
        case .waiting: true
        case .calm: false
        }
    }

    // MARK: - Inputs

    /// The transport plays `stream` (a load confirmed playing, Play, a seek done, or a gapless
    /// switch at `now`, whose first ``PositionFollow/switchSettling`` is not judged).
    mutating func started(_ stream: Stream, switchedAt now: Instant? = nil) -> [Action] {
        if let reloadedEntry, reloadedEntry != stream.entry { self.reloadedEntry = nil }
        stage = .watching(
            stream, previous: nil, stoodSince: nil, judgeFrom: now.map { $0 + PositionFollow.switchSettling })
        return [.sample(after: Self.period)]
    }

    /// The transport no longer plays (paused, seeking, loading, stopped): nothing is sampled.
    mutating func stopped() {
        stage = .off
    }

    /// A sample taken while playing: asked for (``Action/sample(after:)``), or the first of a
    /// ``Action/watchPace(from:rate:every:)`` off its pace, `since` the last calm one.
    /// `nextIsWatched`: playbin holds a network stream to follow, whose own watch
    /// (``StreamWatch``) decides when it has failed to start: a track that stands at its end
    /// waits for it.
    mutating func sampled(_ sample: Sample, since calmSample: Sample? = nil, nextIsWatched: Bool = false) -> [Action] {
        // A sample of the other kind than the stage expects was taken before it changed.
        if case .calm(let stream, _) = stage {
            guard let calmSample else { return [] }
            stage = .watching(stream, previous: calmSample, stoodSince: nil, judgeFrom: nil)
        } else if calmSample != nil {
            return []
        }
        let next = Action.sample(after: Self.period)
        switch stage {
        case .off, .calm:
            return []
        case .watching(let stream, _, _, let judgeFrom?) where sample.at < judgeFrom:
            stage = .watching(stream, previous: nil, stoodSince: nil, judgeFrom: judgeFrom)
            return [next]
        case .watching(let stream, let previous, let stoodSince, _):
            guard let previous, sample.position >= previous.position else {
                // The first sample, or one behind the last (playbin answering about the stream
                // a gapless switch left): a new start, from which the audio is seen to move.
                stage = .watching(stream, previous: sample, stoodSince: nil, judgeFrom: nil)
                return (stoodSince == nil ? [] : [.resume(at: sample.position, when: sample.at, waited: nil)]) + [next]
            }
            if Self.moved(from: previous, to: sample, rate: stream.rate) {
                stage = .watching(stream, previous: sample, stoodSince: nil, judgeFrom: nil)
                guard stoodSince == nil else {
                    return [.resume(at: sample.position, when: sample.at, waited: nil), next]
                }
                guard Self.moved(from: previous, to: sample, rate: stream.rate, share: Self.calmShare) else {
                    return [next]
                }
                stage = .calm(stream, reference: sample)
                return [.watchPace(from: sample, rate: stream.rate, every: Self.calmPeriod)]
            }
            let since = stoodSince ?? previous
            guard sample.at - since.at >= Self.grace else {
                stage = .watching(stream, previous: sample, stoodSince: since, judgeFrom: nil)
                return [.hold(at: sample.position), next]
            }
            var stall = Self.stall(since: since, now: sample)
            if Self.isAtEnd(sample, of: stream), !nextIsWatched {
                stage = .off
                return [.loadNext(stall)]
            }
            if sample.starved { stall.starvedAt = sample.at }
            stage = .waiting(stream, stall, previous: sample)
            return [.hold(at: sample.position), .wait(stall)] + (sample.starved ? [.busy(stall)] : []) + [next]
        case .waiting(let stream, var stall, let previous):
            if sample.position < previous.position || Self.moved(from: previous, to: sample, rate: stream.rate) {
                stage = .watching(stream, previous: sample, stoodSince: nil, judgeFrom: nil)
                return [
                    .resume(at: sample.position, when: sample.at, waited: sample.at - stall.since - stall.stoodFor),
                    next,
                ]
            }
            stall.heard = sample.position
            // A machine too busy to run the process is no fault of the file or the output:
            // the limits wait until it runs the process again.
            var busy: [Action] = []
            if sample.starved {
                if stall.starvedAt == nil { busy = [.busy(stall)] }
                stall.starvedAt = sample.at
            }
            stage = .waiting(stream, stall, previous: sample)
            let stood = sample.at - (stall.starvedAt ?? stall.since)
            if nextIsWatched, Self.isAtEnd(sample, of: stream) { return busy + [.hold(at: sample.position), next] }
            if stood >= Self.decodeLimit, stall.cause == .decoding, stream.isLocal {
                stage = .off
                guard reloadedEntry == stream.entry else {
                    reloadedEntry = stream.entry
                    return [.reload(stall)]
                }
                reloadedEntry = nil
                return [.skip(stall, reason: "its decoding stopped at \(stall.heard.clock), twice")]
            }
            if stood >= Self.outputLimit {
                if stall.cause == .output, waitsForOutput {
                    return busy + [.hold(at: sample.position), .sample(after: Self.readerPeriod)]
                }
                stage = .off
                let seconds = StreamWatch.seconds(Self.outputLimit)
                guard stall.cause == .output else {
                    return [.skip(stall, reason: "its audio stopped at \(stall.heard.clock) for \(seconds)")]
                }
                return [.outputFailed(stall, reason: "it took no audio for \(seconds)")]
            }
            return busy + [.hold(at: sample.position), next]
        }
    }

    // MARK: - Helpers

    /// Whether `sample` stands within ``endMargin`` of the end of `stream`.
    static func isAtEnd(_ sample: Sample, of stream: Stream) -> Bool {
        stream.duration.map { sample.position >= $0 - endMargin } ?? false
    }

    /// Whether the position moved from one sample to the next by at least `share` (by
    /// default ``movingShare``) of what the time between them and the rate make.
    static func moved(from previous: Sample, to sample: Sample, rate: Double, share: Double = movingShare) -> Bool {
        PaceWatch.moved(sample.position - previous.position, over: sample.at - previous.at, rate: rate, share: share)
    }

    /// The stall seen at `now`, the audio having stood since `since`. The output's when
    /// decoded audio waits in front of the sink (it takes none), the decoding's when none
    /// does; without a queue to look at, the output's when the pipeline's clock stood too
    /// (a sound server's clock can run on without a device, so the queue comes first).
    static func stall(since: Sample, now: Sample) -> Stall {
        let stood = now.at - since.at
        var advance: Duration?
        if let start = since.clock, let end = now.clock { advance = end - start }
        let cause: Cause =
            if let queued = now.queued {
                queued >= queuedAudio ? .output : .decoding
            } else {
                advance.map { $0 >= stood / 2 } ?? false ? .decoding : .output
            }
        return Stall(
            heard: now.position, since: since.at, stoodFor: stood, clockAdvance: advance, queued: now.queued,
            cause: cause)
    }
}
