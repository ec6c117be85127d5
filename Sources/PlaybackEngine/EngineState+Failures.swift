import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the pipeline reported going wrong, and the engine's timers that fired on a pipeline
/// gone silent: errors and warnings, a preroll or a state that never came, a stuck call.
extension EngineState {
    /// An error: the handed-over next stream's (the current one goes on), the output's (paused
    /// until Play), or the loaded stream's (skipped). `handedOver`: the stream playbin held
    /// next, which the engine takes off the pipeline's hand-over for an error that is neither
    /// the output's nor an echo (see ``ErrorAttribution``). The error's URI, the decoder's
    /// that posted it, says whose it is.
    ///
    /// The warning that follows (a track skipped, the output lost) says what failed and why
    /// in the user's terms; GStreamer's debug string (source file, function, element path) is
    /// for developers, so it goes to the debug level, with the URI it was about.
    mutating func pipelineFailed(_ error: PipelineError, handedOver: GaplessHandoff.Item?, now: Instant) -> [Action] {
        let inOutput = error.inOutput
        let message = error.reason
        // The output's error is about what plays now, which a gapless switch may have
        // changed since the URI was loaded.
        let about = inOutput ? transport.loaded?.uri ?? error.uri : error.uri
        let name = about.map { MediaSources.displayName($0) } ?? "nothing loaded"
        var actions: [Action] = [.log(.debug, "pipeline error on \(name): \(error) (\(error.debug ?? "no details"))")]
        if errors.isEcho(error.source) {
            return actions + [.log(.debug, "ignoring a further error of a skipped stream: \(message)")]
        }
        // A network stream handed over for gapless playback that fails while the current
        // one still plays is the one that failed: it is skipped, and the current one goes on
        // where it was.
        if !inOutput, let handedOver, transport.loadedEntry != nil, !MediaSources.isLocal(handedOver.uri) {
            errors.handOverFailed(source: error.source)
            prerollWatch.handOverFailed()
            let reloaded = transport.handOverFailed(position: clock.position(at: now))
            return actions + [.report(.handOverFailed(handedOver.entryID, reason: message))] + Self.moved(reloaded)
        }
        // A file handed over whose own decoder fails was read whole for its tags: the switch
        // to it failed, not the file (plugins-bad's aiffparse in GStreamer 1.22 can push
        // before playbin has linked its pad, and stop with "not-linked"). The loaded track
        // plays to its end; there playbin ends the stream, or the audio stands and the
        // progress watch takes it for ended (`loadNext`), and either way what follows is
        // loaded afresh. The same file loaded and handed over leaves the error with the
        // loaded one.
        if !inOutput, let handedOver, let loaded = transport.loaded, error.uri == handedOver.uri,
            handedOver.uri != loaded.uri
        {
            errors.handOverFailed(source: error.source)
            let next = MediaSources.displayName(handedOver.uri)
            let note =
                "the gapless switch to \(next) failed (\(message)); \(loadedName ?? name) plays to its end, and \(next) is loaded afresh there"
            return actions + [.log(.info, note)]
        }
        // A file that stops as playbin links it, before it prerolled (plugins-bad's aiffparse
        // in GStreamer 1.22 can push before its pad is linked), is not at fault: it is loaded
        // once more from NULL, and skipped with the reason should that stop too.
        if !inOutput, error.stoppedUnlinked, case .prerolling(let load, _, nil, _) = transport.phase,
            MediaSources.isLocal(load.uri), prerollWatch.stoppedUnlinked(load.entry)
        {
            let note = "\(Self.name(of: load)) stopped as it was linked (\(message)); loading it once more"
            return actions + [.log(.info, note)] + Self.moved(transport.prerollTimedOut())
        }
        let failed = loadedName
        var position = transport.pendingPosition ?? clock.position(at: now)
        // A failed output pauses where clients last saw it, never before.
        if inOutput, let shown = positionFollow.furthestShown(load: loadNumber) { position = max(position, shown) }
        let taken = transport.failed(reason: message, inOutput: inOutput, position: position)
        if inOutput, let failed, case .outputLost = transport.phase {
            let note = "the audio output failed (\(message)); paused at \(position.clock) of \(failed) until Play"
            actions.append(.log(.warning, note))
        } else if inOutput {
            actions.append(.log(.warning, "the audio output failed: \(message)"))
        }
        return actions + Self.moved(taken)
    }

    /// A GStreamer warning `message` from the element `source`.
    mutating func warned(_ message: String, source: String) -> [Action] {
        switch errors.classify(warning: message, source: source) {
        case .noOutput:
            let note =
                "no sound server or audio device reachable (\(message)); playing into a null sink that keeps real time"
            return [.log(.warning, note)] + fallbackInUse()
        case .noOutputAgain:
            return fallbackInUse()
        case .notDecoded:
            return [.log(.debug, "not decoded, as intended: \(message)")]
        case .other:
            return [.log(.warning, "GStreamer warning from \(source): \(message)")]
        }
    }

    /// The preroll limit `limit` of `load`, load number `number`, passed at `now`;
    /// `decodedAudio`: some of its decoded audio reached the output. Nothing when that load is
    /// gone or no longer prerolls; else what ``PrerollWatch`` decided: the load again, the
    /// entry skipped, or the output's failure, as if it had said so (paused there until Play).
    mutating func prerollLimitPassed(
        of load: Transport.Load, number: Int, limit: Duration, decodedAudio: Bool, now: Instant
    ) -> [Action] {
        guard number == loadNumber, case .prerolling = transport.phase,
            let decision = prerollWatch.timedOut(decodedAudio: decodedAudio)
        else { return [] }
        let seconds = StreamWatch.seconds(limit)
        let name = Self.name(of: load)
        switch decision {
        case .skip:
            let reason = "it did not start within \(seconds)"
            return Self.moved(transport.failed(reason: reason, inOutput: false, position: .zero))
        case .undecodable:
            let first = StreamWatch.seconds(PrerollWatch.outputLimit)
            let reason =
                limit == PrerollWatch.outputLimit
                ? "no audio was decoded from it within \(seconds)"
                : "no audio was decoded from it within \(first), nor within \(seconds) of loading it again"
            return Self.moved(transport.failed(reason: reason, inOutput: false, position: .zero))
        case .retryUndecoded:
            let note = "no audio was decoded from \(name) within \(seconds); loading it once more"
            return [.log(.info, note)] + Self.moved(transport.prerollTimedOut())
        case .retry:
            let note = "\(name) did not start within \(seconds); loading it again"
            return [.log(.warning, note)] + Self.moved(transport.prerollTimedOut())
        case .outputFailed:
            let error = PipelineError(
                message: "it took no audio of \(name) within \(seconds), twice", domain: .other("quaver"), code: 0,
                source: ElementPath("/quaver-audio-sink"), uri: load.uri, inOutput: true)
            return pipelineFailed(error, handedOver: nil, now: now)
        }
    }

    /// The load waiting for the preroll in progress waited a second: it is loaded anyway.
    mutating func prerollOverdue() -> [Action] {
        let actions = transport.prerollOverdue()
        guard !actions.isEmpty else { return Self.moved(actions) }
        let note = "the previous track did not preroll within a second; loading the next one anyway"
        return [.log(.debug, note)] + Self.moved(actions)
    }

    /// A call into GStreamer made at `since` did not return in time (see
    /// ``Transport/stuck(position:ended:)``). The audio stood from then on, so the entry
    /// goes on from where the clock had it when the call was made, never from a time the
    /// clock ran on while GStreamer was stuck; at or past its known length, it has ended.
    mutating func stuck(since: Instant) -> [Action] {
        let stuckEntry = transport.loaded.map { Self.name(of: $0) }
        let length = loadedLength
        let position = clock.position(at: max(since, clock.stamp))
        let actions = transport.stuck(position: position, ended: length.map { position >= $0 } ?? false)
        // Skipped or at its end, nothing plays until what follows is loaded.
        if case .idle = transport.phase { clock.set(position, rate: 0, at: max(since, clock.stamp)) }
        guard case .outputLost(_, let at) = transport.phase, let stuckEntry else { return Self.moved(actions) }
        let note = "GStreamer got stuck twice on \(stuckEntry); paused at \(at.clock) until Play tries again"
        return Self.moved(actions) + [.log(.error, note)]
    }

    /// The pipeline answered a state check (see ``Engine/stateCheckDelay``): it is `current`,
    /// heading for `pending`. A state it never confirmed is asked for again, a seek that
    /// never landed is loaded again, with a line in the log.
    mutating func stateChecked(current: Pipeline.State, pending: Pipeline.State, now: Instant) -> [Action] {
        let asked = transport.intent == .playing ? "playing" : "paused"
        let checked = transport.loaded.map { Self.name(of: $0) }
        let position = clock.position(at: now)
        let seekTarget: Duration? =
            if case .seeking(_, let target, _, _) = transport.phase { target ?? .zero } else { nil }
        let actions = transport.stateChecked(current: current, pending: pending, position: position)
        var notes: [Action] = [.log(.debug, "state check: the pipeline is \(current), heading for \(pending)")]
        if !actions.isEmpty, let checked, let seekTarget {
            let from = transport.loaded?.position.map { "at \($0.clock)" } ?? "from the start"
            notes.append(
                .log(.warning, "the seek to \(seekTarget.clock) in \(checked) never landed; loading it again \(from)"))
        } else if !actions.isEmpty, let checked {
            let change = pending == .voidPending ? "with no change under way" : "heading for \(pending)"
            let outcome: String =
                switch transport.phase {
                case .prerolling: ": loading it again at \(position.clock)"
                case .outputLost: ", again: paused at \(position.clock) until Play tries again"
                default: ""
                }
            let limit = StreamWatch.seconds(Self.stateCheckDelay)
            notes.append(
                .log(
                    .info,
                    "the pipeline had not confirmed \(asked) for \(checked) within \(limit): it is \(current), \(change)\(outcome)"
                ))
        }
        return notes + Self.moved(actions)
    }

    /// The pipeline lost its clock (see ``Transport/clockLost()``).
    mutating func clockLost() -> [Action] { Self.moved(transport.clockLost()) }

    /// The pipeline could not change state.
    mutating func stateChangeFailed() -> [Action] { Self.moved(transport.stateChangeFailed()) }

    /// The pipeline refused the seek to `target`: it is asked where it is.
    mutating func seekRefused(_ target: Duration) -> [Action] {
        [.log(.warning, "seek to \(target.clock) refused by the pipeline"), .queryPosition]
            + Self.moved(transport.seekRefused())
    }
}
