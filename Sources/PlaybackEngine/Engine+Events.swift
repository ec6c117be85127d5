import FoundationEssentials

/// What the pipeline reports, fed to the transport and to the parts that follow streams,
/// the volume and the position.
extension Engine {
    func receive(_ delivery: Pipeline.Delivery, fromPipeline number: Int) {
        guard number == pipelineNumber else { return }  // a replaced pipeline's
        switch delivery.event {
        case .stuck: return pipelineGotStuck()
        case .requestState(let state): return owner?.stateRequested(state) ?? ()
        case .outputVolumeChanged(let heard): return outputVolumeChanged(heard)
        case .loudnessApplied(let plan, let gain): return owner?.loudnessApplied(plan, gain: gain) ?? ()
        case .loudnessMeasured(let signature, let gain): return owner?.loudnessMeasured(signature, gain) ?? ()
        default: break
        }
        guard delivery.load == loadNumber else { return }  // about a stream taken down since
        handle(delivery.event)
    }

    private func handle(_ event: Pipeline.Event) {
        switch event {
        case .stateChanged(_, let new, let pending, let position, let at):
            guard pending == .voidPending else { return }
            let actions = transport.stateReached(new)
            // The clock takes the pipeline's word as of when it spoke, however late that is read.
            if let position, transport.isSettledLoad, (new == .playing) == transport.isPlaying {
                clock.set(position, rate: transport.isPlaying ? rate : 0, at: at)
            }
            run(actions)
        case .asyncDone(let facts):
            prerollTimer.cancel()
            prerollWatch.prerolled()
            let seeking = transport.isSeeking
            if seeking, !seeks.completed(landed: facts.position, target: transport.pendingPosition) { return }
            self.facts = facts
            let actions = transport.asyncDone(current: facts.current, pending: facts.pending)
            if seeking || transport.isSettledLoad, let position = facts.position {
                clock.set(position, rate: transport.isPlaying ? rate : 0, at: facts.at)
            }
            run(actions)
        case .streamStart:
            streamStarted()
        case .endOfStream(let position):
            endOfStream(at: position)
        case .error(let message, let debug, let source, let uri, let inOutput):
            streamFailed(message, debug: debug, source: source, uri: uri, inOutput: inOutput)
        case .warning(let message, let source):
            warned(message, source: source)
        case .buffering(let percent):
            streams.buffering(percent)
        case .tags(let tags):
            streams.tagsArrived(tags)
        case .clockLost:
            run(transport.clockLost())
        case .durationChanged(let facts):
            self.facts.duration = facts.duration
            self.facts.isSeekable = facts.isSeekable
            if let id = transport.loadedEntry { owner?.streamDurationChanged(id) }
        case .nextURITaken:
            streams.handedOverTaken()
        case .stateChangeFailed:
            run(transport.stateChangeFailed())
        case .seekRefused(let target):
            logger.warning("seek to \(target.clock) refused by the pipeline")
            pipeline.queryPosition()
            run(transport.seekRefused())
        case .stateChecked(let current, let pending):
            let asked = transport.intent == .playing ? "playing" : "paused"
            let checked = transport.loaded.map { name(of: $0) }
            let position = clock.position()
            let actions = transport.stateChecked(current: current, pending: pending, position: position)
            if !actions.isEmpty, let checked {
                let state = pending == .voidPending ? "with no change under way" : "heading for \(pending)"
                let outcome: String =
                    switch transport.phase {
                    case .prerolling: ": loading it again at \(position.clock)"
                    case .outputLost: ", again: paused at \(position.clock) until Play tries again"
                    default: ""
                    }
                logger.info(
                    "the pipeline had not confirmed \(asked) for \(checked) within \(StreamWatch.seconds(Self.stateCheckDelay)): it is \(current), \(state)\(outcome)"
                )
            }
            run(actions)
        case .position(let reported, let at):
            positionReported(reported, at: at)
        case .progress(let sample):
            progress.sampled(sample)
        case .elements(let names):
            pipelineElementNames = names
            // Once per load, at debug level: what the stream plays through (tests read it to
            // check that no video decoder is ever made).
            if let load = transport.loaded, transport.loadedEntry != nil {
                logger.debug("pipeline for \(name(of: load)): \(names.joined(separator: " "))")
            }
        case .stuck, .requestState, .outputVolumeChanged, .loudnessApplied, .loudnessMeasured:
            break  // handled above, whatever load they come with
        }
    }

    /// The loaded stream ended, with the output at `reported` (the pipeline's word, which an
    /// output faster than real time, a render to a file, puts far ahead of the clock): what
    /// follows plays, unless a file ended far before its length, which is loaded again where
    /// it ended, once (see ``EarlyEnd``).
    private func endOfStream(at reported: Duration?) {
        if let load = transport.loaded, transport.isSettledLoad {
            let position = reported ?? clock.position()
            let length = owner?.entry(id: load.entry)?.info?.duration ?? facts.duration
            switch earlyEnd.ended(load.entry, at: position, length: length, isLocal: MediaSources.isLocal(load.uri)) {
            case .ended:
                break
            case .reload(let at):
                logger.info(
                    "\(name(of: load)) ended at \(at.clock) of \((length ?? .zero).clock), before its end: loading it again there"
                )
                // From NULL: the pipeline that ended it keeps, through READY, what made it end
                // (its next load ended again during its preroll, and the track was lost).
                transport.noteFailure()
                return reload(at: at)
            case .endedEarlyAgain:
                logger.info("\(name(of: load)) ended early again, at \(position.clock): going on")
            }
        }
        run(transport.endOfStream())
    }

    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    func beginStream(_ id: UInt64, uri: String, handedOver: Bool = false) {
        if !handedOver {
            awaitingOwnStreamStart = true
            positionFollow.loaded()
            facts = Pipeline.Facts()
        }
        streams.began(id, isStream: !MediaSources.isLocal(uri), handedOver: handedOver)
    }

    /// STREAM_START: the loaded stream's own, or a gapless switch to the handed-over one.
    private func streamStarted() {
        if awaitingOwnStreamStart {
            awaitingOwnStreamStart = false
            return
        }
        guard let switched = pipeline.handoff.takeCommitted(),
            owner?.switches(from: transport.loadedEntry, to: switched.entryID) == true
        else { return }
        positionFollow.switched(at: .now)
        clock.set(.zero, rate: transport.isPlaying ? rate : 0)
        beginStream(switched.entryID, uri: switched.uri, handedOver: true)
        run(transport.switched(to: .init(entry: switched.entryID, uri: switched.uri, position: nil)))
        if logger.logLevel <= .debug { pipeline.describeElements() }
    }

    /// An error: the handed-over next stream's (the current one goes on), the output's (paused
    /// until Play), or the loaded stream's (skipped).
    ///
    /// The warning that follows (a track skipped, the output lost) says what failed and why
    /// in the user's terms; GStreamer's debug string (source file, function, element path) is
    /// for developers, so it goes to the debug level, with the URI it was about.
    func streamFailed(_ message: String, debug: String?, source: String, uri: String?, inOutput: Bool) {
        // The output's error is about what plays now, which a gapless switch may have
        // changed since the URI was loaded.
        let about = inOutput ? transport.loaded?.uri ?? uri : uri
        let name = about.map { MediaSources.displayName($0) } ?? "nothing loaded"
        logger.debug("pipeline error on \(name) from \(source): \(message) (\(debug ?? "no details"))")
        if errors.isEcho(source) {
            logger.debug("ignoring a further error of a skipped stream: \(message)")
            return
        }
        if !inOutput, let handedOver = pipeline.handoff.takeCommitted(), transport.loadedEntry != nil,
            owner?.handedOverFailed(handedOver.entryID, reason: message) == true
        {
            // The URI handed over for gapless playback failed while the current one was still
            // playing: that one is skipped, and the current one goes on where it was.
            errors.handOverFailed(source: source)
            let position = clock.position()
            prerollWatch.handOverFailed()
            run(transport.handOverFailed(position: position))
            return
        }
        let failed = transport.loaded.flatMap { transport.loadedEntry != nil ? self.name(of: $0) : nil }
        var position = transport.pendingPosition ?? clock.position()
        if inOutput, let shown = positionFollow.furthestShown(load: loadNumber) { position = max(position, shown) }
        let actions = transport.failed(reason: message, inOutput: inOutput, position: position)
        if inOutput, let failed, case .outputLost = transport.phase {
            logger.warning("the audio output failed (\(message)); paused at \(position.clock) of \(failed) until Play")
        } else if inOutput {
            logger.warning("the audio output failed: \(message)")
        }
        run(actions)
    }

    private func warned(_ message: String, source: String) {
        switch errors.classify(warning: message, source: source) {
        case .noOutput:
            logger.warning(
                "no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
            progress.fallbackInUse()
        case .noOutputAgain:
            progress.fallbackInUse()
        case .notDecoded:
            logger.debug("not decoded, as intended: \(message)")
        case .other:
            logger.warning("GStreamer warning from \(source): \(message)")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then not a change).
    private func outputVolumeChanged(_ heard: Double) {
        guard volumeEchoes.isChange(heard, current: volume, at: .now) else { return }
        volume = min(max(heard, 0), 1)
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        owner?.engineChanged(.volume)
    }

    /// The pipeline said where it is: a clock that drifted from it takes its word, and
    /// clients are told the new timing.
    private func positionReported(_ reported: Duration?, at: ContinuousClock.Instant) {
        // While the audio stands, the progress watch holds the clock where it is.
        guard let reported, transport.isSettledLoad, !progress.isHolding, at >= clock.stamp else { return }
        let predicted = clock.position(at: at)
        guard positionFollow.follows(reported, predicted: predicted, at: at, nextTaken: pipeline.handoff.hasCommitted)
        else { return }
        logger.debug("the pipeline is at \(reported), not \(predicted): the position follows it")
        clock.set(reported, rate: transport.isPlaying ? rate : 0, at: at)
        owner?.engineChanged(.transport)
    }
}
