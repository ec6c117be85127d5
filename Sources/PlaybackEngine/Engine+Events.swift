import FoundationEssentials
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the pipeline reports, fed to the transport and to the parts that follow streams,
/// the volume and the position.
extension Engine {
    func receive(_ delivery: Pipeline.Delivery, fromPipeline number: Int) {
        guard state.hears(pipeline: number) else { return }  // a replaced pipeline's
        switch delivery.event {
        case .stuck(let since): return pipelineGotStuck(since: since)
        case .slowCall(let since, let why): return callIsSlow(since: since, why)
        case .slowCallReturned(let since): return slowCallReturned(since: since)
        case .requestState(let state): return report(.stateRequested(state))
        case .outputVolumeChanged(let heard): return outputVolumeChanged(heard)
        case .loudnessApplied(let plan, let gain): return report(.loudnessApplied(plan, gain: gain))
        case .loudnessMeasured(let signature, let gain): return report(.loudnessMeasured(signature, gain))
        default: break
        }
        guard state.hears(pipeline: number, load: delivery.load) else { return }  // about a stream taken down since
        handle(delivery.event)
    }

    private func handle(_ event: Pipeline.Event) {
        switch event {
        case .stateChanged(_, let new, let pending, let position, let at):
            guard pending == .voidPending else { return }
            run(state.stateReached(new, position: position, at: at))
        case .asyncDone(let facts):
            prerollTimer.cancel()
            // Nil: an earlier seek's, overtaken by one still on its way.
            guard let actions = state.asyncDone(facts) else { return }
            run(actions)
        case .streamStart:
            streamStarted()
        case .endOfStream(let position):
            endOfStream(at: position)
        case .error(let error):
            streamFailed(error)
        case .warning(let message, let source):
            warned(message, source: source)
        case .buffering(let percent):
            streamBuffering(percent)
        case .tags(let tags):
            streamTagsArrived(tags)
        case .clockLost:
            run(state.transport.clockLost())
        case .durationChanged(let facts):
            state.facts.duration = facts.duration
            state.facts.isSeekable = facts.isSeekable
            if let id = transport.loadedEntry { report(.streamDurationChanged(id)) }
        case .nextURITaken:
            handedOverTaken()
        case .stateChangeFailed:
            run(state.transport.stateChangeFailed())
        case .seekRefused(let target):
            logger.warning("seek to \(target.clock) refused by the pipeline")
            pipeline.queryPosition()
            run(state.transport.seekRefused())
        case .stateChecked(let current, let pending):
            logger.debug("state check: the pipeline is \(current), heading for \(pending)")
            let asked = transport.intent == .playing ? "playing" : "paused"
            let checked = transport.loaded.map { name(of: $0) }
            let position = clock.position()
            let seekTarget: Duration? =
                if case .seeking(_, let target, _, _) = transport.phase { target ?? .zero } else { nil }
            let actions = state.transport.stateChecked(current: current, pending: pending, position: position)
            if !actions.isEmpty, let checked, let seekTarget {
                let from = transport.loaded?.position.map { "at \($0.clock)" } ?? "from the start"
                logger.warning("the seek to \(seekTarget.clock) in \(checked) never landed; loading it again \(from)")
            } else if !actions.isEmpty, let checked {
                let change = pending == .voidPending ? "with no change under way" : "heading for \(pending)"
                let outcome: String =
                    switch transport.phase {
                    case .prerolling: ": loading it again at \(position.clock)"
                    case .outputLost: ", again: paused at \(position.clock) until Play tries again"
                    default: ""
                    }
                logger.info(
                    "the pipeline had not confirmed \(asked) for \(checked) within \(StreamWatch.seconds(Self.stateCheckDelay)): it is \(current), \(change)\(outcome)"
                )
            }
            run(actions)
        case .position(let reported, let at):
            positionReported(reported, at: at)
        case .progress(let sample):
            progressSampled(sample)
        case .elements(let names):
            state.elementNames = names
            // Once per load, at debug level: what the stream plays through (tests read it to
            // check that no video decoder is ever made).
            if let load = transport.loaded, transport.loadedEntry != nil {
                logger.debug("pipeline for \(name(of: load)): \(names.joined(separator: " "))")
            }
        case .stuck, .slowCall, .slowCallReturned, .requestState, .outputVolumeChanged, .loudnessApplied,
            .loudnessMeasured:
            break  // handled above, whatever load they come with
        }
    }

    /// The loaded stream ended, with the output at `reported` (the pipeline's word, which an
    /// output faster than real time, a render to a file, puts far ahead of the clock): what
    /// follows plays, unless a file ended far before its length, which is loaded again where
    /// it ended, once (see ``EarlyEnd``).
    private func endOfStream(at reported: Duration?) {
        let load = transport.loaded
        let length = load.flatMap { state.entries[$0.entry]?.length } ?? facts.duration
        let (decision, actions) = state.endOfStream(at: reported, length: length, now: .now)
        switch (decision, load) {
        case (.reload(let at)?, let load?):
            logger.info(
                "\(name(of: load)) ended at \(at.clock) of \((length ?? .zero).clock), before its end: loading it again there"
            )
        case (.endedEarlyAgain?, let load?):
            let position = reported ?? clock.position()
            logger.info("\(name(of: load)) ended early again, at \(position.clock): going on")
        default:
            break
        }
        run(actions)
    }

    /// STREAM_START: the loaded stream's own, or a gapless switch to the handed-over one.
    private func streamStarted() {
        guard state.streamStarted(), let switched = pipeline.handoff.takeCommitted() else { return }
        let load = Transport.Load(entry: switched.entryID, uri: switched.uri, position: nil)
        let previous = transport.loadedEntry
        let actions = state.switched(to: load, now: .now)
        streamBegan(switched.entryID, isStream: !MediaSources.isLocal(switched.uri), handedOver: true)
        report(.switched(from: previous, to: switched.entryID))
        run(actions)
        if logger.logLevel <= .debug { pipeline.describeElements() }
    }

    /// An error: the handed-over next stream's (the current one goes on), the output's (paused
    /// until Play), or the loaded stream's (skipped).
    ///
    /// The warning that follows (a track skipped, the output lost) says what failed and why
    /// in the user's terms; GStreamer's debug string (source file, function, element path) is
    /// for developers, so it goes to the debug level, with the URI it was about.
    func streamFailed(_ error: PipelineError) {
        let inOutput = error.inOutput
        let message = error.reason
        // The output's error is about what plays now, which a gapless switch may have
        // changed since the URI was loaded.
        let about = inOutput ? transport.loaded?.uri ?? error.uri : error.uri
        let name = about.map { MediaSources.displayName($0) } ?? "nothing loaded"
        logger.debug("pipeline error on \(name): \(error) (\(error.debug ?? "no details"))")
        if state.errors.isEcho(error.source) {
            logger.debug("ignoring a further error of a skipped stream: \(message)")
            return
        }
        // A network stream handed over for gapless playback that fails while the current
        // one still plays is the one that failed: it is skipped, and the current one goes on
        // where it was. A file is handed over only once its tags were read, so an error then
        // is the loaded stream's.
        if !inOutput, let handedOver = pipeline.handoff.takeCommitted(), transport.loadedEntry != nil,
            !MediaSources.isLocal(handedOver.uri)
        {
            report(.handOverFailed(handedOver.entryID, reason: message))
            run(state.handOverFailed(source: error.source, now: .now))
            return
        }
        let failed = transport.loaded.flatMap { transport.loadedEntry != nil ? self.name(of: $0) : nil }
        let (position, actions) = state.failed(reason: message, inOutput: inOutput, now: .now)
        if inOutput, let failed, case .outputLost = transport.phase {
            logger.warning("the audio output failed (\(message)); paused at \(position.clock) of \(failed) until Play")
        } else if inOutput {
            logger.warning("the audio output failed: \(message)")
        }
        run(actions)
    }

    private func warned(_ message: String, source: String) {
        switch state.errors.classify(warning: message, source: source) {
        case .noOutput:
            logger.warning(
                "no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
            fallbackInUse()
        case .noOutputAgain:
            fallbackInUse()
        case .notDecoded:
            logger.debug("not decoded, as intended: \(message)")
        case .other:
            logger.warning("GStreamer warning from \(source): \(message)")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then not a change).
    private func outputVolumeChanged(_ heard: Double) {
        guard state.outputVolumeChanged(heard, now: .now) else { return }
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        report(.changed(.volume))
    }

    /// The pipeline said where it is: a clock that drifted from it takes its word, and
    /// clients are told the new timing.
    private func positionReported(_ reported: Duration?, at: ContinuousClock.Instant) {
        // While the audio stands, the progress watch holds the clock where it is.
        let nextTaken = pipeline.handoff.hasCommitted
        guard let reported,
            let predicted = state.positionReported(reported, at: at, holding: isHoldingClock, nextTaken: nextTaken)
        else { return }
        logger.debug("the pipeline is at \(reported), not \(predicted): the position follows it")
        report(.changed(.transport))
    }
}
