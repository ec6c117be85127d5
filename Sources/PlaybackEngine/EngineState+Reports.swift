import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the pipeline reported about the loaded stream going well: the states it reached,
/// where it is, the stream it started and the end of it.
extension EngineState {
    /// The pipeline as a whole reached `new`, at `position` as of `at`.
    mutating func stateReached(_ new: Pipeline.State, position: Duration?, at: Instant) -> [Action] {
        let actions = transport.stateReached(new)
        // The clock takes the pipeline's word as of when it spoke, however late that is read.
        if let position, transport.isSettledLoad, (new == .playing) == transport.isPlaying {
            clock.set(position, rate: runningRate, at: at)
        }
        return Self.moved(actions)
    }

    /// ASYNC_DONE with the pipeline's `facts`: the preroll is no longer timed. When it is an
    /// earlier seek's, overtaken by one still on its way, nothing else changes.
    mutating func asyncDone(_ facts: Pipeline.Facts) -> [Action] {
        prerollWatch.prerolled()
        let seeking = transport.isSeeking
        if seeking, !seeks.completed(landed: facts.position, target: transport.pendingPosition) {
            return [.stopPrerollTimer]
        }
        self.facts = facts
        let actions = transport.asyncDone(current: facts.current, pending: facts.pending)
        if seeking || transport.isSettledLoad, let position = facts.position {
            clock.set(position, rate: runningRate, at: facts.at)
        }
        return [.stopPrerollTimer] + Self.moved(actions)
    }

    /// The pipeline said the loaded stream is `facts.duration` long now, and whether it seeks.
    mutating func durationChanged(_ facts: Pipeline.Facts) -> [Action] {
        self.facts.duration = facts.duration
        self.facts.isSeekable = facts.isSeekable
        return transport.loadedEntry.map { [.report(.streamDurationChanged($0))] } ?? []
    }

    /// The elements the loaded stream plays through are `names`: said once per load, at
    /// debug level (tests read it to check that no video decoder is ever made).
    mutating func elementsMade(_ names: [String]) -> [Action] {
        elementNames = names
        guard let load = transport.loaded, transport.loadedEntry != nil else { return [] }
        return [.log(.debug, "pipeline for \(Self.name(of: load)): \(names.joined(separator: " "))")]
    }

    /// STREAM_START at `now`: the loaded stream's own, or a gapless switch to `handedOver`,
    /// the stream playbin held next (taken off the pipeline's hand-over only for a switch:
    /// see ``awaitingOwnStreamStart``). On a switch the clock starts again from zero, the
    /// stream begins afresh and the owner hears of it.
    mutating func streamStarted(handedOver: GaplessHandoff.Item?, now: Instant) -> [Action] {
        guard !awaitingOwnStreamStart else {
            awaitingOwnStreamStart = false
            return []
        }
        guard let handedOver else { return [] }
        let load = Transport.Load(entry: handedOver.entryID, uri: handedOver.uri, position: nil)
        let previous = transport.loadedEntry
        positionFollow.switched(at: now)
        pace = 1
        clock.set(.zero, rate: runningRate, at: now)
        let actions = transport.switched(to: load)
        let began = streamBegan(load.entry, isStream: !MediaSources.isLocal(load.uri), handedOver: true)
        return began + [.report(.switched(from: previous, to: load.entry))] + Self.moved(actions) + [.describeElements]
    }

    /// The pipeline said it is at `reported` as of `at`; `holding`: the progress watch holds
    /// the clock where the audio stands; `nextTaken`: playbin holds the next stream's URI
    /// (see ``PositionFollow/follows(_:predicted:at:nextTaken:)``). When the clock takes the
    /// pipeline's word, clients are told the new timing.
    mutating func positionReported(_ reported: Duration?, at: Instant, holding: Bool, nextTaken: Bool = false)
        -> [Action]
    {
        guard let reported, transport.isSettledLoad, !holding, at >= clock.stamp else { return [] }
        if transport.isPlaying { positionFollow.answered(reported, at: at) }
        let predicted = clock.position(at: at)
        guard positionFollow.follows(reported, predicted: predicted, at: at, nextTaken: nextTaken) else {
            return refinePace(reported, predicted: predicted, at: at)
        }
        // A first drift, not far, before any pace could be measured: the next answer measures
        // it, so that an output slower than real time costs one correction, not two.
        let drift = reported - predicted
        if transport.isPlaying, pace == 1, drift < PositionFollow.tolerance * 2,
            drift > .zero - PositionFollow.tolerance * 2,
            positionFollow.stretchPace(to: reported, at: at) == nil
        {
            return []
        }
        // The clock drifted: at the pace the audio really moves, when that is not the rate.
        // Only the pipeline's own answers measure the pace: the clock's snapshot (a state
        // reached) comes before an output's latency, which would pass for a slow pace.
        if transport.isPlaying, transport.rate > 0, let observed = positionFollow.corrected(to: reported, at: at) {
            let measured = observed / transport.rate
            pace = abs(measured - 1) < Self.paceTolerance || measured <= 0 ? 1 : measured
        }
        clock.set(reported, rate: runningRate, at: at)
        return Self.followed(reported, predicted)
    }

    /// The clock followed the pipeline's word `reported`, where it had `predicted`.
    private static func followed(_ reported: Duration, _ predicted: Duration) -> [Action] {
        [
            .log(.debug, "the pipeline is at \(reported), not \(predicted): the position follows it"),
            .report(.changed(.transport)),
        ]
    }

    /// A slow (or fast) output whose position is still within the tolerance: the pace
    /// measured over the longer stretch is taken as the clock's rate from where the clock has
    /// it, so that the first estimate's error does not grow into a second correction (a
    /// `Seeked`). Clients see the rate change and no jump. Only a difference that would have
    /// moved the position by ``paceRefinement`` over the stretch counts: a bursty output's
    /// answers jitter by about that much, and a rate change each second would be noise.
    /// Nothing happens when the pace stays.
    private mutating func refinePace(_ reported: Duration, predicted: Duration, at: Instant) -> [Action] {
        guard pace != 1, transport.isPlaying, transport.rate > 0,
            let (observed, stretch) = positionFollow.stretchPace(to: reported, at: at)
        else { return [] }
        let measured = observed / transport.rate
        guard measured > 0, stretch * abs(measured - pace) > Self.paceRefinement else { return [] }
        pace = measured
        clock.set(predicted, rate: runningRate, at: at)
        return Self.followed(reported, predicted)
    }

    /// The loaded stream ended with the output at `reported` (the pipeline's word, which an
    /// output faster than real time, a render to a file, puts far ahead of the clock; nil:
    /// where the clock is at `now`). A file that ended far before its known length is loaded
    /// again there, once, from NULL: the pipeline that ended it keeps, through READY, what
    /// made it end (see ``EarlyEnd``); otherwise what follows plays. Only a settled stream
    /// is judged (a preroll or seek that ended is not).
    mutating func endOfStream(at reported: Duration?, now: Instant) -> [Action] {
        guard let load = transport.loaded, transport.isSettledLoad else { return Self.moved(transport.endOfStream()) }
        let length = loadedLength
        let position = reported ?? clock.position(at: now)
        let decision = earlyEnd.ended(
            load.entry, at: position, length: length, isLocal: MediaSources.isLocal(load.uri))
        switch decision {
        case .reload(let at):
            let note = "\(Self.name(of: load)) ended at \(at.clock) of \((length ?? .zero).clock), before its end"
            let failed = transport.failedElsewhere()
            return [.log(.info, "\(note): loading it again there")] + reload(at: at, now: now, after: failed)
        case .endedEarlyAgain:
            let note = "\(Self.name(of: load)) ended early again, at \(position.clock): going on"
            return [.log(.info, note)] + Self.moved(transport.endOfStream())
        case .ended:
            return Self.moved(transport.endOfStream())
        }
    }

    /// The output's volume is now `heard`: a mixer changed it, which the engine's volume
    /// then follows, or it is an echo of Quaver's own change (then nothing happens).
    mutating func outputVolumeChanged(_ heard: Double, now: Instant) -> [Action] {
        guard volumeEchoes.isChange(heard, current: volume, at: now) else { return [] }
        volume = min(max(heard, 0), 1)
        return [
            .log(.debug, "the stream's volume was changed outside Quaver, to \(volume)"),
            .report(.changed(.volume)),
        ]
    }
}
