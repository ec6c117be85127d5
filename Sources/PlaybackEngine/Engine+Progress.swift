import FoundationEssentials
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The engine's watches that run only while the transport plays: whether the audio moves
/// (``ProgressWatch``), and, while the silent fallback sink plays because no sound server
/// answered, whether one answers now.
///
/// What they decide with is the engine's state (``EngineState``); the engine samples the
/// pipeline and carries out the watch's decisions with the transport's own inputs (a failed
/// output, a failed track, the end of a stream, a reload). Both countdowns stop as soon as
/// the transport does not play, so a paused player never wakes for them.
extension Engine {
    /// How often a player on the fallback sink looks for a sound server.
    static let serverCheckInterval = Duration.seconds(2)

    /// Clients are shown playback waiting for the audio (Apple's rate 0).
    package var isWaitingForAudio: Bool { state.progress.watch.isWaiting }
    /// The position clock stands where the audio is.
    var isHoldingClock: Bool { state.progress.watch.isHolding }

    /// After the transport's actions ran: the watches run while it plays, and start anew for
    /// each load and each gapless switch.
    func syncProgress() {
        switch state.followProgress() {
        case .unchanged:
            break
        case .stopped:
            progressSampler.cancel()
            serverCheck.cancel()
        case .started(let load, let switched):
            let stream = ProgressWatch.Stream(
                entry: load.entry, isLocal: MediaSources.isLocal(load.uri),
                duration: duration(of: load, switched: switched), rate: rate)
            carryOut(state.progress.watch.started(stream, switchedAt: switched ? .now : nil))
            checkForServer()
        }
    }

    /// `autoaudiosink` said it found no output and plays into its silent sink.
    func fallbackInUse() {
        state.progress.onFallbackSink = true
        if state.progress.followed != nil { checkForServer() }
    }

    /// What the pipeline answered to ``Pipeline/sampleProgress()``.
    func progressSampled(_ progress: Pipeline.Progress) {
        guard state.progress.followed != nil, let position = progress.position else { return }
        state.progress.clockName = progress.clockName
        let sample = ProgressWatch.Sample(
            position: position, clock: progress.clock, queued: progress.queued, at: progress.at)
        let nextIsWatched = nextIsStream
        carryOut(state.progress.watch.sampled(sample, nextIsWatched: nextIsWatched))
    }

    /// playbin holds a network stream to follow the loaded entry (see ``StreamWatch``).
    private var nextIsStream: Bool {
        guard let next = pipeline.handoff.committedItem else { return false }
        return !MediaSources.isLocal(next.uri)
    }

    /// The length of the entry loaded: its tags', else what the pipeline said of its own load.
    private func duration(of load: Transport.Load, switched: Bool) -> Duration? {
        state.entries[load.entry]?.length ?? (switched ? nil : facts.duration)
    }

    // MARK: - Carrying out the watch's decisions

    private func carryOut(_ actions: [ProgressWatch.Action]) {
        for action in actions {
            switch action {
            case .sample(let delay):
                progressSampler.start(after: delay, leeway: .milliseconds(20)) { [weak self] in
                    self?.pipeline.sampleProgress()
                }
            case .hold(let position):
                state.clock.set(position, rate: 0)
            case .wait(let stall):
                logger.warning("\(describe(stall)); clients see it waiting")
                report(.changed(.transport))
            case .resume(let position, let at, let waited):
                state.clock.set(position, rate: state.runningRate, at: at)
                if let waited, let name = loadedName {
                    logger.info(
                        "the audio of \(name) moves again at \(position.clock), after \(Self.seconds(waited)) of waiting"
                    )
                }
                report(.changed(.transport))
            case .reload(let stall):
                logger.warning("\(describe(stall)); loading it again there")
                noteFailure()
                reload(at: stall.heard)
            case .skip(let stall, let reason):
                logger.debug("\(describe(stall))")
                run(state.transport.failed(reason: reason, inOutput: false, position: stall.heard))
            case .loadNext(let stall):
                logger.warning("\(describe(stall)), at its end: what follows never started; loading it afresh")
                noteFailure()
                run(state.transport.endOfStream())
            case .outputFailed(let stall, let reason):
                let name = loadedName
                run(state.transport.failed(reason: reason, inOutput: true, position: stall.heard))
                if let name {
                    logger.warning(
                        "the audio output failed (\(reason)); paused at \(stall.heard.clock) of \(name) until Play")
                }
            }
        }
    }

    private var loadedName: String? {
        transport.loaded.flatMap { transport.loadedEntry != nil ? name(of: $0) : nil }
    }

    /// One line on a stall: what the pipeline reports (its position standing, for how long)
    /// and what its clock, the sound server's when a server's sink provides it, did meanwhile.
    private func describe(_ stall: ProgressWatch.Stall) -> String {
        let clock =
            stall.clockAdvance.map {
                "its clock (\(state.progress.clockName ?? "unnamed")) advanced \(Self.seconds($0))"
            }
            ?? "it has no clock"
        let queue = stall.queued.map { ", \(Self.seconds($0)) of audio waits in front of the sink" } ?? ""
        let cause =
            stall.cause == .output
            ? "the output takes no audio (the sound server has no device for the stream, or corked it)"
            : "nothing more reaches the output (the decoding stopped)"
        return
            "the audio of \(loadedName ?? "the loaded track") stopped at \(stall.heard.clock): the pipeline plays, its position has stood at \(Self.seconds(stall.heard)) for \(Self.seconds(stall.stoodFor)) and \(clock) meanwhile\(queue): \(cause)"
    }

    /// `5.33 s`: a position or a length, to the hundredth.
    static func seconds(_ duration: Duration) -> String {
        let hundredths = Int((Double(duration.nanoseconds) / 1e7).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) s"
    }

    // MARK: - A sound server that starts after Quaver

    /// While the fallback sink plays: when a sound server answers, playback moves to it (the
    /// track is loaded again where it is, from NULL, so that `autoaudiosink` chooses again);
    /// otherwise it looks again in a while.
    private func checkForServer() {
        guard state.progress.onFallbackSink, audioSink == nil, state.progress.followed != nil else {
            return serverCheck.cancel()
        }
        let environment = ProcessInfo.processInfo.environment
        guard let socket = SoundServerSocket.path(environment: environment) else { return }
        guard SoundServerSocket.accepts(socket) else {
            serverCheck.start(after: Self.serverCheckInterval, leeway: .milliseconds(200)) { [weak self] in
                self?.checkForServer()
            }
            return
        }
        state.progress.onFallbackSink = false  // said again by the new sink if it still finds nothing
        serverCheck.cancel()
        let position = clock.position()
        logger.info("a sound server answers at \(socket) now; playing on through it from \(position.clock)")
        noteFailure()
        reload(at: position)
    }
}

/// What the progress watches decide with, part of the engine's state.
struct ProgressFollow: Sendable {
    /// The load and entry watched (a gapless switch changes the entry, not the load).
    struct Followed: Sendable, Equatable {
        var load: Int
        var entry: UInt64
    }

    /// What following the transport changed for the watches.
    enum Change: Sendable, Equatable {
        case unchanged
        /// The transport no longer plays: the watches stop.
        case stopped
        /// `load` plays, newly loaded or (`switched`) switched to gaplessly: watched anew.
        case started(Transport.Load, switched: Bool)
    }

    /// Whether the audio moves.
    var watch = ProgressWatch()
    /// `autoaudiosink` fell back to its silent sink: no sound server or device answered.
    var onFallbackSink = false
    /// What is watched (nil: the transport does not play).
    var followed: Followed?
    /// The name of the pipeline's clock in the last sample, for the log.
    var clockName: String?
}

extension EngineState {
    /// After the transport moved: the watches run while it plays, and start anew for each
    /// load and each gapless switch.
    mutating func followProgress() -> ProgressFollow.Change {
        guard transport.isPlaying, let load = transport.loaded else {
            guard progress.followed != nil else { return .unchanged }
            progress.followed = nil
            progress.watch.stopped()
            return .stopped
        }
        let now = ProgressFollow.Followed(load: loadNumber, entry: load.entry)
        guard progress.followed != now else { return .unchanged }
        let switched = progress.followed?.load == loadNumber
        progress.followed = now
        return .started(load, switched: switched)
    }
}
