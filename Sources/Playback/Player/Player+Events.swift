import Foundation

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
            prerollWatch?.cancel()
            prerollWatch = nil
            prerollRetried = nil
            let seeking = transport.isSeeking
            if seeking, seeksInFlight > 1, let target = transport.pendingPosition, let landed = facts.position,
                landed - target > .milliseconds(250) || target - landed > .milliseconds(250)
            {
                seeksInFlight -= 1
                return  // an earlier seek's, overtaken by the one still on its way
            }
            if seeking { seeksInFlight = 0 }
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
        case .error(let message, let debug, let source, let inOutput):
            streamFailed(message, debug: debug, source: source, inOutput: inOutput)
        case .warning(let message, let source):
            warned(message, source: source)
        case .buffering(let percent):
            streamBuffering(percent)
        case .tags(let tags):
            streamTagsArrived(tags)
        case .clockLost:
            if transport.intent == .playing {
                pipeline.setState(.paused)
                pipeline.setState(.playing)
            }
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
            order.recordMove(from: previous, to: switched.entryID, forward: true)
        }
        selectedIndex = index
        switchedAt = .now
        clock.set(.zero, rate: transport.isPlaying ? rate : 0)
        beginStream(switched.entryID, handedOver: true)
        run(transport.switched(to: .init(entry: switched.entryID, uri: switched.uri, position: nil)))
        if logger.logLevel <= .debug { pipeline.describeElements() }
    }

    /// An error: the handed-over next stream's (the current one goes on), the output's (paused
    /// until Play), or the loaded stream's (skipped).
    func streamFailed(_ message: String, debug: String?, source: String, inOutput: Bool) {
        logger.debug("pipeline error from \(source): \(debug ?? "-")")
        if let ignored = ignoredErrorSource, source.hasPrefix(ignored) {
            logger.debug("ignoring a further error of a skipped stream: \(message)")
            return
        }
        if !inOutput, let handedOver = pipeline.handoff.takeCommitted(), let next = queue.index(of: handedOver.entryID),
            queue[next].info == nil || !isLocal(queue[next].uri), transport.loadedEntry != nil
        {
            // The URI handed over for gapless playback failed while the current one was still
            // playing: that one is skipped, and the current one goes on where it was.
            recordFailure(message, at: next)
            ignoredErrorSource = Self.decoderPath(of: source)
            let position = clock.position()
            reloadingAfterHandOver = true
            run(transport.handOverFailed(position: position))
            return
        }
        let failedEntry = transport.loadedEntry.flatMap { self.entry(id: $0) }
        var position = transport.pendingPosition ?? clock.position()
        if inOutput, let shown = furthestShown, shown.load == loadNumber { position = max(position, shown.position) }
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
        if source.contains("audio-sink") || source.contains("autoaudiosink") {
            guard !warnedAboutNullSink else { return }
            warnedAboutNullSink = true
            logger.warning("no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time")
        } else if Self.isSkippedStreamNotice(message) {
            // decodebin's note on a video, picture or subtitle stream whose decoder is skipped
            // on purpose: nothing is wrong.
            logger.debug("not decoded, as intended: \(message)")
        } else {
            logger.warning("GStreamer warning from \(source): \(message)")
        }
    }

    /// The sound server asks for a state: it corks a music stream (PAUSED) while a call or an
    /// alarm plays, and uncorks it (PLAYING) when that ends. Quaver pauses, and plays again
    /// only when it was playing when corked and nobody acted since.
    func handleStateRequest(_ state: Pipeline.State) {
        switch state {
        case .paused where requestedStatus == .playing:
            logger.info("the sound server asked to pause (another stream, such as a call, takes priority)")
            pause()
            resumeAfterInterruption = true
        case .playing where resumeAfterInterruption:
            logger.info("the interruption is over; playing again")
            play()
        default:
            logger.debug("the sound server asked for state \(state); nothing to do")
        }
    }

    /// The output's volume changed: a mixer changed the stream's volume, or Quaver's own
    /// change came back from the sound server (then equal but for rounding: not a change).
    func outputVolumeChanged(_ heard: Double) {
        guard heard.isFinite, abs(heard - volume) > 0.001 else { return }
        let now = ContinuousClock.now
        guard !volumeRequests.contains(where: { abs($0.volume - heard) <= 0.001 && now - $0.at < .seconds(2) }) else { return }
        volume = min(max(heard, 0), 1)
        logger.debug("the stream's volume was changed outside Quaver, to \(volume)")
        onChange?(.volume)
    }

    // MARK: - Position

    /// While playing, asks the pipeline where it is, at most once a second, so that the
    /// clock follows an output slower (or faster) than real time.
    func refreshPositionIfDue() {
        guard transport.isPlaying, switchedAt.map({ ContinuousClock.now - $0 > .seconds(2) }) ?? true else { return }
        let now = ContinuousClock.now
        if let last = lastPositionQuery, now - last < .seconds(1) { return }
        lastPositionQuery = now
        pipeline.queryPosition()
    }

    /// The pipeline said where it is: a clock that drifted from it by more than a quarter
    /// second takes its word, and clients are told the new timing.
    func positionReported(_ reported: Duration?, at: ContinuousClock.Instant) {
        guard let reported, transport.isSettledLoad, at >= clock.stamp else { return }
        if let switchedAt, at - switchedAt < .seconds(2) { return }
        let predicted = clock.position(at: at)
        let drift = reported - predicted
        guard drift > .milliseconds(250) || drift < .milliseconds(-250) else { return }
        logger.debug("the pipeline is at \(reported), not \(predicted): the position follows it")
        clock.set(reported, rate: transport.isPlaying ? rate : 0, at: at)
        onChange?(.transport)
    }

    /// Whether a warning is decodebin's "No decoder available for type '…'" about a stream
    /// that is never decoded (video, pictures, subtitles). The caps are quoted in the
    /// message whatever its language.
    static func isSkippedStreamNotice(_ message: String) -> Bool {
        [
            "'video/", "'image/", "'text/", "'subpicture/", "'subtitle/", "'closedcaption/", "'application/x-ssa",
            "'application/x-ass", "'application/x-subtitle",
        ]
        .contains { message.contains($0) }
    }

    /// `/GstPlayBin:x/GstURIDecodeBin:uridecodebin1` of an element path inside it, or nil.
    static func decoderPath(of source: String) -> String? {
        let parts = source.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = parts.firstIndex(where: { $0.hasPrefix("GstURIDecodeBin:") }) else { return nil }
        return parts[...index].joined(separator: "/")
    }
}
