import Logging
import Media
import PlaybackPipeline
import PlaybackVocabulary

extension EngineState {
    /// What the engine carries out, in order: the one answer of every step of its state.
    ///
    /// Each case carries what the engine needs, so that it decides nothing itself: it talks
    /// to the pipeline, starts and stops its timers, reports to its owner and logs. A step
    /// answers with the transport's actions as they are (``transport(_:)``), and the engine
    /// hands each back, when its turn comes, to ``EngineState/carryingOut(_:now:)``: the
    /// state takes its part of it then (a load makes the reports of what was loaded stale),
    /// so that the commands it comes to carry the numbers of that moment.
    enum Action: Sendable, Equatable {
        /// An action of the transport, carried out through ``EngineState/carryingOut(_:now:)``.
        case transport(Transport.Action)
        /// After the transport moved: the state check and the progress watches follow it
        /// (``EngineState/followProgress(now:)``), then the owner hears of a timing that
        /// changed with no state to settle (`timingChanged`).
        case followTransport(timingChanged: Bool)

        /// Loads `uri` toward `state` as load number `load` (to NULL first when `fresh`), at
        /// the gain `loudness`.
        case loadPipeline(uri: String, Pipeline.State, load: Int, fresh: Bool, loudness: LoudnessPlan?)
        /// Takes down what is loaded; what the pipeline says of it from now on is about load
        /// number `load` (to NULL when `fresh`).
        case unloadPipeline(load: Int, fresh: Bool)
        /// Asks the pipeline for a state.
        case setPipelineState(Pipeline.State)
        /// Seeks the loaded stream to a position, at `rate`.
        case seekPipeline(Duration, rate: Double)
        /// The pipeline is stuck: a new one, number `number`, takes its place.
        case replacePipeline(number: Int)
        /// Sets the pipeline's volume, on the cubic scale of desktop mixers.
        case setPipelineVolume(Double)
        /// Asks the pipeline where it is (it answers with a position report).
        case queryPosition
        /// Asks the pipeline where it is twice in the next second and a half, while load
        /// number `load` plays: an output with latency of its own starts its clock late.
        case checkPositionSoon(load: Int)
        /// Lists the elements the loaded stream plays through, when the log shows them.
        case describeElements

        /// Times the preroll of `load`, load number `number`: the step after `limit` is
        /// ``EngineState/prerollLimitPassed(of:number:limit:decodedAudio:now:)``.
        case timePreroll(Transport.Load, limit: Duration, number: Int)
        /// The preroll is no longer timed.
        case stopPrerollTimer
        /// Waits a second at most for the preroll in progress, then takes
        /// ``EngineState/prerollOverdue()``.
        case awaitPreroll
        /// Arms the watch over the network stream `entry` with what the sources have sent by
        /// now (``EngineState/armStreamWatch(_:bytes:now:since:)``), the wait counted from
        /// `since` (nil: from when the running wait began, else now).
        case armStreamWatch(UInt64, since: Instant?)
        /// Starts the countdown after which the watched stream counts as stalled.
        case startStreamTimer(after: Duration)
        /// The stream watch's countdown stops.
        case stopStreamTimer
        /// Samples the audio's progress after a while.
        case sampleProgress(after: Duration)
        /// The transport no longer plays: the progress sampler and the look for a sound
        /// server stop.
        case stopProgressWatches
        /// While the fallback sink plays: looks whether a sound server answers now, and looks
        /// again in a while if none does (see ``EngineState/serverAnswered(at:now:)``).
        case checkForServer

        /// Tells the owner, once the step is done.
        case report(EngineReport)
        /// One line in the log.
        case log(Logger.Level, String)
    }

    /// The transport's `actions` as the engine's, then the state check and the progress
    /// watches following the transport they moved.
    static func moved(_ actions: [Transport.Action]) -> [Action] {
        actions.map(Action.transport) + [.followTransport(timingChanged: actions.contains(.timingChanged))]
    }

    /// The state's part of carrying out `action` at `now`, when its turn comes, and the
    /// pipeline's commands, timers and reports it comes to: a load or unload makes the reports
    /// of what was loaded stale and starts the stream afresh, a pause stops the clock, a seek
    /// is counted in flight, a replaced pipeline is counted, a settled transport runs the
    /// clock. Never a ``Action/transport(_:)``.
    mutating func carryingOut(_ action: Transport.Action, now: Instant) -> [Action] {
        switch action {
        case .load(let load, let target, let fresh):
            let isLocal = MediaSources.isLocal(load.uri)
            let prerollLimit = loadStarted(load, isLocal: isLocal, now: now)
            let began = streamBegan(load.entry, isStream: !isLocal, handedOver: false)
            let loudness = entries[load.entry]?.loudness
            // playbin asks for the next URI as soon as it has read this one, which for a
            // short file is during preroll: the owner answers at once.
            return began + [
                .loadPipeline(uri: load.uri, target, load: loadNumber, fresh: fresh, loudness: loudness),
                prerollLimit.map { .timePreroll(load, limit: $0, number: loadNumber) } ?? .stopPrerollTimer,
                .report(.loadStarted(load.entry)),
            ]
        case .unload(let fresh):
            unloaded(now: now)
            return disarmStreamWatch() + [.unloadPipeline(load: loadNumber, fresh: fresh)]
        case .setState(let target):
            if target == .paused { clock.changeRate(to: 0, at: now) }
            return [.setPipelineState(target)]
        case .reselectClock:
            return [.setPipelineState(.paused), .setPipelineState(.playing)]
        case .seek(let target):
            seeks.sent()
            return [.seekPipeline(target, rate: transport.rate)]
        case .awaitPreroll:
            return [.awaitPreroll]
        case .replacePipeline:
            pipelineReplaced()
            return [.replacePipeline(number: pipelineNumber)]
        case .publish:
            return settle(now: now)
        case .skip(let id, let reason):
            return [.report(.failed(id, reason: reason))]
        case .advance(let id):
            return [.report(.ended(id))]
        case .refused, .timingChanged:
            return []  // answers to the command: the engine reads them off the step's actions
        }
    }

    /// The transport settled at `now`: the clock runs at the rate while the pipeline plays
    /// and the audio moves, a network stream that plays is no longer watched for a stall
    /// (its server sent what was awaited), and the owner tells its observer.
    private mutating func settle(now: Instant) -> [Action] {
        var actions: [Action] = []
        if transport.status != .stopped, let id = transport.settledEntry, let loaded = transport.loaded,
            loaded.entry == id, !MediaSources.isLocal(loaded.uri)
        {
            actions += disarmStreamWatch()
        }
        if transport.status == .playing || transport.status == .paused {
            if !transport.isPlaying { positionFollow.paceInterrupted() }
            let holding = progress.watch.isHolding
            clock.changeRate(to: transport.isPlaying && !holding ? runningRate : 0, at: now)
        }
        if transport.isPlaying { actions.append(.checkPositionSoon(load: loadNumber)) }
        return actions + [.report(.settled)]
    }

    /// A stream starts in the pipeline: loaded (`handedOver` false) or switched to gaplessly.
    /// Its tags start afresh; a loaded network stream is watched from its load on, and a
    /// handed-over one was watched since playbin took it.
    mutating func streamBegan(_ id: UInt64, isStream: Bool, handedOver: Bool) -> [Action] {
        streamTags = StreamTags()
        streamWatch.streamBegan()
        return isStream && !handedOver ? [.armStreamWatch(id, since: nil)] : disarmStreamWatch()
    }

    /// (Re)arms the watch over the stream `id`, the sources having sent `bytes` by `now`
    /// (see ``StreamWatch/arm(_:bytes:now:since:)``), and starts its countdown.
    mutating func armStreamWatch(_ id: UInt64, bytes: UInt64, now: Instant, since: Instant?) -> [Action] {
        streamWatch.arm(id, bytes: bytes, now: now, since: since)
        return [.startStreamTimer(after: streamWatch.stallLimit)]
    }

    /// No stream is waited for.
    mutating func disarmStreamWatch() -> [Action] {
        streamWatch.disarm()
        return [.stopStreamTimer]
    }
}
