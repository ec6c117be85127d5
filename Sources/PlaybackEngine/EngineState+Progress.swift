import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the progress watches decide with, part of the engine's state.
struct ProgressFollow: Sendable {
    /// The load and entry watched (a gapless switch changes the entry, not the load).
    struct Followed: Sendable, Equatable {
        var load: Int
        var entry: UInt64
    }

    /// Whether the audio moves.
    var watch = ProgressWatch()
    /// `autoaudiosink` fell back to its silent sink: no sound server or device answered.
    var onFallbackSink = false
    /// What is watched (nil: the transport does not play).
    var followed: Followed?
    /// The name of the pipeline's clock in the last sample, for the log.
    var clockName: String?
    /// Why the output takes no audio, as the log says it (see ``AudioOutput/stallReason``).
    var outputStallReason = AudioOutput.system.stallReason
}

/// The watches that run only while the transport plays: whether the audio moves
/// (``ProgressWatch``), and, while the silent fallback sink plays because no sound server
/// answered, whether one answers now. Their decisions come to the transport's own inputs (a
/// failed output, a failed track, the end of a stream, a reload).
extension EngineState {
    /// After the transport moved, at `now`: the watches run while it plays, and start anew
    /// for each load and each gapless switch; they stop as soon as it does not play, so a
    /// paused player never wakes for them.
    mutating func followProgress(now: Instant) -> [Action] {
        guard transport.isPlaying, let load = transport.loaded else {
            guard progress.followed != nil else { return [] }
            progress.followed = nil
            progress.watch.stopped()
            return [.stopProgressWatches]
        }
        let followed = ProgressFollow.Followed(load: loadNumber, entry: load.entry)
        guard progress.followed != followed else { return [] }
        let switched = progress.followed?.load == loadNumber
        progress.followed = followed
        let stream = ProgressWatch.Stream(
            entry: load.entry, isLocal: MediaSources.isLocal(load.uri),
            duration: entries[load.entry]?.length ?? (switched ? nil : facts.duration), rate: transport.rate)
        return progressActions(progress.watch.started(stream, switchedAt: switched ? now : nil), now: now)
            + [.checkForServer]
    }

    /// What the pipeline answered to ``Pipeline/sampleProgress()`` at `now`, or the first
    /// sample of its ``Pipeline/watchPace(_:)`` off the pace, `since` the last calm one;
    /// `nextIsWatched`: playbin holds a network stream to follow (see ``StreamWatch``).
    mutating func progressSampled(
        _ sampled: Pipeline.Progress, since calm: Pipeline.Progress? = nil, nextIsWatched: Bool, now: Instant
    ) -> [Action] {
        guard progress.followed != nil, let sample = Self.sample(sampled) else { return [] }
        progress.clockName = sampled.clockName
        let calmSample = calm.flatMap(Self.sample)
        return progressActions(
            progress.watch.sampled(sample, since: calmSample, nextIsWatched: nextIsWatched), now: now)
    }

    /// The pipeline's sample as the watch takes it (nil: no position).
    private static func sample(_ sampled: Pipeline.Progress) -> ProgressWatch.Sample? {
        sampled.position.map {
            ProgressWatch.Sample(
                position: $0, clock: sampled.clock, queued: sampled.queued, at: sampled.at, starved: sampled.starved)
        }
    }

    /// `autoaudiosink` said it found no output and plays into its silent sink: while the
    /// transport plays, the engine looks for a sound server.
    mutating func fallbackInUse() -> [Action] {
        progress.onFallbackSink = true
        return progress.followed != nil ? [.checkForServer] : []
    }

    /// Whether the engine looks for a sound server now: only while the fallback sink plays
    /// and the system output is asked for (`systemOutput`).
    func looksForServer(systemOutput: Bool) -> Bool {
        progress.onFallbackSink && systemOutput && progress.followed != nil
    }

    /// A sound server answers at `socket` now: playback moves to it, the track loaded again
    /// where it is, from NULL, so that `autoaudiosink` chooses again.
    mutating func serverAnswered(at socket: String, now: Instant) -> [Action] {
        progress.onFallbackSink = false  // said again by the new sink if it still finds nothing
        let position = clock.position(at: now)
        let note = "a sound server answers at \(socket) now; playing on through it from \(position.clock)"
        return [.log(.info, note)] + Self.moved(transport.failedElsewhere()) + reload(at: position, now: now)
    }

    /// The watch's `actions` as the engine's, their part of the state taken at `now`.
    private mutating func progressActions(_ actions: [ProgressWatch.Action], now: Instant) -> [Action] {
        actions.flatMap { action -> [Action] in
            switch action {
            case .sample(let delay):
                return [.sampleProgress(after: delay)]
            case .watchPace(let from, let rate, let period):
                let reference = Pipeline.Progress(
                    position: from.position, clock: from.clock, queued: from.queued, at: from.at)
                return [
                    .watchPace(
                        PaceWatch(reference: reference, rate: rate, share: ProgressWatch.calmShare, period: period))
                ]
            case .hold(let position):
                clock.set(position, rate: 0, at: now)
                return []
            case .wait(let stall):
                return [.log(.warning, "\(describe(stall)); clients see it waiting"), .report(.changed(.transport))]
            case .busy(let stall):
                let note =
                    "the machine gives Quaver no CPU (its threads wait for one far longer than they run) while the audio of \(loadedName ?? "the loaded track") stands at \(stall.heard.clock): waiting for it, neither loading it again nor giving up"
                return [.log(.info, note)]
            case .resume(let position, let at, let waited):
                clock.set(position, rate: runningRate, at: at)
                guard let waited, let name = loadedName else { return [.report(.changed(.transport))] }
                let note =
                    "the audio of \(name) moves again at \(position.clock), after \(Self.seconds(waited)) of waiting"
                return [.log(.info, note), .report(.changed(.transport))]
            case .reload(let stall):
                let note = "\(describe(stall)); loading it again there"
                return [.log(.warning, note)] + Self.moved(transport.failedElsewhere())
                    + reload(at: stall.heard, now: now)
            case .skip(let stall, let reason):
                let note = describe(stall)
                return [.log(.debug, note)]
                    + Self.moved(transport.failed(reason: reason, inOutput: false, position: stall.heard))
            case .loadNext(let stall):
                let note = "\(describe(stall)), at its end: what follows never started; loading it afresh"
                return [.log(.warning, note)] + Self.moved(transport.failedElsewhere())
                    + Self.moved(transport.endOfStream())
            case .outputFailed(let stall, let reason):
                let name = loadedName
                let failed = Self.moved(transport.failed(reason: reason, inOutput: true, position: stall.heard))
                guard let name else { return failed }
                let note = "the audio output failed (\(reason)); paused at \(stall.heard.clock) of \(name) until Play"
                return failed + [.log(.warning, note)]
            }
        }
    }

    /// One line on a stall: what the pipeline reports (its position standing, for how long)
    /// and what its clock, the sound server's when a server's sink provides it, did meanwhile.
    private func describe(_ stall: ProgressWatch.Stall) -> String {
        let clock =
            stall.clockAdvance.map {
                "its clock (\(progress.clockName ?? "unnamed")) advanced \(Self.seconds($0))"
            }
            ?? "it has no clock"
        let queue = stall.queued.map { ", \(Self.seconds($0)) of audio waits in front of the sink" } ?? ""
        let cause =
            stall.cause == .output
            ? progress.outputStallReason
            : "nothing more reaches the output (the decoding stopped)"
        return
            "the audio of \(loadedName ?? "the loaded track") stopped at \(stall.heard.clock): the pipeline plays, its position has stood at \(Self.seconds(stall.heard)) for \(Self.seconds(stall.stoodFor)) and \(clock) meanwhile\(queue): \(cause)"
    }
}
