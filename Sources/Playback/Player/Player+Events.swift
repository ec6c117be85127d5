import FoundationEssentials

/// What the pipeline reports, fed to the transport and to the parts that follow streams,
/// the volume and the position.
extension Player {
    func receive(_ delivery: Pipeline.Delivery, fromPipeline number: Int) {
        guard number == pipelineNumber else { return }  // a replaced pipeline's
        switch delivery.event {
        case .stuck: return pipelineGotStuck()
        case .requestState(let state): return handleStateRequest(state)
        case .outputVolumeChanged(let heard): return outputVolumeChanged(heard)
        case .loudnessApplied(let plan, let gain): return loudnessApplied(plan, gain: gain)
        case .loudnessMeasured(let signature, let gain): return loudnessMeasured(signature, gain)
        default: break
        }
        guard delivery.load == loadNumber else { return }  // about a stream taken down since
        handle(delivery.event)
    }

    func handle(_ event: Pipeline.Event) {
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
        case .endOfStream:
            run(transport.endOfStream())
        case .error(let message, let debug, let source, let uri, let inOutput):
            streamFailed(message, debug: debug, source: source, uri: uri, inOutput: inOutput)
        case .warning(let message, let source):
            warned(message, source: source)
        case .buffering(let percent):
            streamBuffering(percent)
        case .tags(let tags):
            streamTagsArrived(tags)
        case .clockLost:
            run(transport.clockLost())
        case .durationChanged(let facts):
            self.facts.duration = facts.duration
            self.facts.isSeekable = facts.isSeekable
            streamDurationChanged()
        case .nextURITaken:
            watchHandedOverStream()
        case .stateChangeFailed:
            run(transport.stateChangeFailed())
        case .seekRefused(let target):
            logger.warning("seek to \(target.clock) refused by the pipeline")
            pipeline.queryPosition()
            run(transport.seekRefused())
        case .position(let reported, let at):
            positionReported(reported, at: at)
        case .elements(let names):
            pipelineElementNames = names
            // Once per load, at debug level: what the stream plays through (tests read it to
            // check that no video decoder is ever made).
            if let entry = transport.loadedEntry.flatMap({ entry(id: $0) }) {
                logger.debug("pipeline for \(MediaSources.displayName(entry.uri)): \(names.joined(separator: " "))")
            }
        case .stuck, .requestState, .outputVolumeChanged, .loudnessApplied, .loudnessMeasured:
            break  // handled above, whatever load they come with
        }
    }

    /// STREAM_START: the loaded stream's own, or a gapless switch to the handed-over one.
    func streamStarted() {
        if awaitingOwnStreamStart {
            awaitingOwnStreamStart = false
            return
        }
        guard let switched = pipeline.handoff.takeCommitted(), let index = queue.index(of: switched.entryID) else { return }
        logger.debug("gapless switch to \(MediaSources.displayName(switched.uri))")
        if let previous = transport.loadedEntry {
            reportEndIfStream(previous)
            selection.recordMove(from: previous, to: switched.entryID, forward: true)
        }
        selectedIndex = index
        positionFollow.switched(at: .now)
        clock.set(.zero, rate: transport.isPlaying ? rate : 0)
        beginStream(switched.entryID, handedOver: true)
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
        let name = uri.map { MediaSources.displayName($0) } ?? "nothing loaded"
        logger.debug("pipeline error on \(name) from \(source): \(message) (\(debug ?? "no details"))")
        if errors.isEcho(source) {
            logger.debug("ignoring a further error of a skipped stream: \(message)")
            return
        }
        if !inOutput, let handedOver = pipeline.handoff.takeCommitted(), let next = queue.index(of: handedOver.entryID),
            queue[next].info == nil || !isLocal(queue[next].uri), transport.loadedEntry != nil
        {
            // The URI handed over for gapless playback failed while the current one was still
            // playing: that one is skipped, and the current one goes on where it was.
            recordFailure(message, at: next)
            errors.handOverFailed(source: source)
            let position = clock.position()
            prerollWatch.handOverFailed()
            run(transport.handOverFailed(position: position))
            return
        }
        let failedEntry = transport.loadedEntry.flatMap { self.entry(id: $0) }
        var position = transport.pendingPosition ?? clock.position()
        if inOutput, let shown = positionFollow.furthestShown(load: loadNumber) { position = max(position, shown) }
        let actions = transport.failed(reason: message, inOutput: inOutput, position: position)
        if inOutput, let entry = failedEntry, case .outputLost = transport.phase {
            logger.warning(
                "the audio output failed (\(message)); paused at \(position.clock) of \(MediaSources.displayName(entry.uri)) until Play")
        } else if inOutput {
            logger.warning("the audio output failed: \(message)")
        }
        run(actions)
    }

    func warned(_ message: String, source: String) {
        switch errors.classify(warning: message, source: source) {
        case .noOutput:
            logger.warning("no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
        case .noOutputAgain:
            break
        case .notDecoded:
            logger.debug("not decoded, as intended: \(message)")
        case .other:
            logger.warning("GStreamer warning from \(source): \(message)")
        }
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    func handleStateRequest(_ state: Pipeline.State) {
        switch interruption.response(to: state, requested: requestedStatus) {
        case .pause:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            pause()
            interruption.interrupted()
        case .resume:
            logger.info("the interruption is over; playing again")
            play()
        case .nothing:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then not a change).
    func outputVolumeChanged(_ heard: Double) {
        guard volumeEchoes.isChange(heard, current: volume, at: .now) else { return }
        volume = min(max(heard, 0), 1)
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        onChange?(.volume)
    }

    // MARK: - Position

    /// While playing, asks the pipeline where it is, at most once a second, so that the
    /// clock follows an output slower (or faster) than real time.
    func refreshPositionIfDue() {
        if positionFollow.shouldQuery(now: .now, isPlaying: transport.isPlaying) { pipeline.queryPosition() }
    }

    /// The pipeline said where it is: a clock that drifted from it takes its word, and
    /// clients are told the new timing.
    func positionReported(_ reported: Duration?, at: ContinuousClock.Instant) {
        guard let reported, transport.isSettledLoad, at >= clock.stamp else { return }
        let predicted = clock.position(at: at)
        guard positionFollow.follows(reported, predicted: predicted, at: at) else { return }
        logger.debug("the pipeline is at \(reported), not \(predicted): the position follows it")
        clock.set(reported, rate: transport.isPlaying ? rate : 0, at: at)
        onChange?(.transport)
    }
}
