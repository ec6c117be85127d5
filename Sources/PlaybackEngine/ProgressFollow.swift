import FoundationEssentials
import Logging

/// The engine's watches that run only while the transport plays: whether the audio moves
/// (``ProgressWatch``), and, while the silent fallback sink plays because no sound server
/// answered, whether one answers now.
///
/// A part of the ``Engine``, which it acts through: it samples the pipeline, and carries out
/// the watch's decisions with the transport's own inputs (a failed output, a failed track,
/// the end of a stream, a reload). Both countdowns stop as soon as the transport does not
/// play, so a paused player never wakes for them.
@MainActor
package final class ProgressFollow {
    /// Whether the audio moves.
    private(set) var watch = ProgressWatch()
    /// `autoaudiosink` fell back to its silent sink: no sound server or device answered.
    private(set) var onFallbackSink = false
    /// How often a player on the fallback sink looks for a sound server.
    static let serverCheckInterval = Duration.seconds(2)

    private let sampler = Countdown()
    private let serverCheck = Countdown()
    /// The load and entry watched (a gapless switch changes the entry, not the load).
    private var followed: (load: Int, entry: UInt64)?
    /// The name of the pipeline's clock in the last sample, for the log.
    private var clockName: String?
    private unowned let engine: Engine

    init(engine: Engine) {
        self.engine = engine
    }

    private var logger: Logger { engine.logger }

    /// Clients are shown playback waiting for the audio (Apple's rate 0).
    package var isWaiting: Bool { watch.isWaiting }
    /// The position clock stands where the audio is.
    var isHolding: Bool { watch.isHolding }

    /// After the transport's actions ran: the watches run while it plays, and start anew for
    /// each load and each gapless switch.
    func sync() {
        let transport = engine.transport
        guard transport.isPlaying, let load = transport.loaded else {
            if followed != nil {
                followed = nil
                sampler.cancel()
                serverCheck.cancel()
                watch.stopped()
            }
            return
        }
        guard followed.map({ $0.load != engine.loadNumber || $0.entry != load.entry }) ?? true else { return }
        let switched = followed?.load == engine.loadNumber
        followed = (engine.loadNumber, load.entry)
        let stream = ProgressWatch.Stream(
            entry: load.entry, isLocal: MediaSources.isLocal(load.uri),
            duration: duration(of: load, switched: switched),
            rate: engine.rate)
        carryOut(watch.started(stream, switchedAt: switched ? .now : nil))
        checkForServer()
    }

    /// `autoaudiosink` said it found no output and plays into its silent sink.
    func fallbackInUse() {
        onFallbackSink = true
        if followed != nil { checkForServer() }
    }

    /// What the pipeline answered to ``Pipeline/sampleProgress()``.
    func sampled(_ progress: Pipeline.Progress) {
        guard followed != nil, let position = progress.position else { return }
        clockName = progress.clockName
        let sample = ProgressWatch.Sample(
            position: position, clock: progress.clock, queued: progress.queued, at: progress.at)
        carryOut(watch.sampled(sample, nextIsWatched: nextIsStream))
    }

    /// playbin holds a network stream to follow the loaded entry (see ``StreamWatch``).
    private var nextIsStream: Bool {
        guard let id = engine.pipeline.handoff.committedEntryID, let next = engine.owner?.entry(id: id) else {
            return false
        }
        return !MediaSources.isLocal(next.uri)
    }

    /// The length of the entry loaded: its tags', else what the pipeline said of its own load.
    private func duration(of load: Transport.Load, switched: Bool) -> Duration? {
        engine.owner?.entry(id: load.entry)?.info?.duration ?? (switched ? nil : engine.facts.duration)
    }

    // MARK: - Carrying out the watch's decisions

    private func carryOut(_ actions: [ProgressWatch.Action]) {
        for action in actions {
            switch action {
            case .sample(let delay):
                sampler.start(after: delay, leeway: .milliseconds(20)) { [weak self] in
                    self?.engine.pipeline.sampleProgress()
                }
            case .hold(let position):
                engine.setClock(position, rate: 0)
            case .wait(let stall):
                logger.warning("\(describe(stall)); clients see it waiting")
                engine.owner?.engineChanged(.transport)
            case .resume(let position, let at, let waited):
                engine.setClock(position, rate: engine.rate, at: at)
                if let waited, let name = loadedName {
                    logger.info(
                        "the audio of \(name) moves again at \(position.clock), after \(Self.seconds(waited)) of waiting"
                    )
                }
                engine.owner?.engineChanged(.transport)
            case .reload(let stall):
                logger.warning("\(describe(stall)); loading it again there")
                engine.noteFailure()
                engine.reload(at: stall.heard)
            case .skip(let stall, let reason):
                logger.debug("\(describe(stall))")
                engine.run(engine.decide { $0.failed(reason: reason, inOutput: false, position: stall.heard) })
            case .loadNext(let stall):
                logger.warning("\(describe(stall)), at its end: what follows never started; loading it afresh")
                engine.noteFailure()
                engine.run(engine.decide { $0.endOfStream() })
            case .outputFailed(let stall, let reason):
                let name = loadedName
                engine.run(engine.decide { $0.failed(reason: reason, inOutput: true, position: stall.heard) })
                if let name {
                    logger.warning(
                        "the audio output failed (\(reason)); paused at \(stall.heard.clock) of \(name) until Play")
                }
            }
        }
    }

    private var loadedName: String? {
        engine.transport.loaded.flatMap { engine.transport.loadedEntry != nil ? engine.name(of: $0) : nil }
    }

    /// One line on a stall: what the pipeline reports (its position standing, for how long)
    /// and what its clock, the sound server's when a server's sink provides it, did meanwhile.
    private func describe(_ stall: ProgressWatch.Stall) -> String {
        let clock =
            stall.clockAdvance.map { "its clock (\(clockName ?? "unnamed")) advanced \(Self.seconds($0))" }
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
        guard onFallbackSink, engine.audioSink == nil, followed != nil else { return serverCheck.cancel() }
        let environment = ProcessInfo.processInfo.environment
        guard let socket = SoundServerSocket.path(environment: environment) else { return }
        guard SoundServerSocket.accepts(socket) else {
            serverCheck.start(after: Self.serverCheckInterval, leeway: .milliseconds(200)) { [weak self] in
                self?.checkForServer()
            }
            return
        }
        onFallbackSink = false  // said again by the new sink if it still finds nothing
        serverCheck.cancel()
        let position = engine.clock.position()
        logger.info("a sound server answers at \(socket) now; playing on through it from \(position.clock)")
        engine.noteFailure()
        engine.reload(at: position)
    }
}
