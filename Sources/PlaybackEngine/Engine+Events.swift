import FoundationEssentials
import Media
import PlaybackPipeline
import PlaybackVocabulary

/// What the pipeline reports, each a step of the engine's state (with what only the
/// pipeline knows handed in), whose actions the engine carries out.
extension Engine {
    func receive(_ delivery: Pipeline.Delivery, fromPipeline number: Int) {
        guard state.hears(pipeline: number) else { return }  // a replaced pipeline's
        switch delivery.event {
        case .stuck(let since): return pipelineGotStuck(since: since)
        case .slowCall(let since, let why): return callIsSlow(since: since, why)
        case .slowCallReturned(let since): return slowCallReturned(since: since)
        case .requestState(let state): return report(.stateRequested(state))
        case .outputVolumeChanged(let heard):
            run(state.outputVolumeChanged(heard, now: .now))
            return
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
            run(state.asyncDone(facts))
        case .streamStart:
            // The stream handed over is taken off the pipeline only for a gapless switch.
            let handedOver = state.awaitingOwnStreamStart ? nil : pipeline.handoff.takeCommitted()
            run(state.streamStarted(handedOver: handedOver, now: .now))
        case .endOfStream(let position):
            run(state.endOfStream(at: position, now: .now))
        case .error(let error):
            streamFailed(error)
        case .warning(let message, let source):
            run(state.warned(message, source: source))
        case .buffering(let percent):
            run(state.streamBuffering(percent))
        case .tags(let tags):
            run(state.streamTagsArrived(tags))
        case .clockLost:
            run(state.clockLost())
        case .durationChanged(let facts):
            run(state.durationChanged(facts))
        case .nextURITaken:
            run(state.nextTaken(pipeline.handoff.committedItem))
        case .stateChangeFailed:
            run(state.stateChangeFailed())
        case .seekRefused(let target):
            run(state.seekRefused(target))
        case .stateChecked(let current, let pending):
            run(state.stateChecked(current: current, pending: pending, now: .now))
        case .position(let reported, let at):
            // While the audio stands, the progress watch holds the clock where it is.
            let nextTaken = pipeline.handoff.hasCommitted
            run(state.positionReported(reported, at: at, holding: isHoldingClock, nextTaken: nextTaken))
        case .progress(let sample, let calm):
            run(state.progressSampled(sample, since: calm, nextIsWatched: nextIsStream, now: .now))
        case .elements(let names):
            run(state.elementsMade(names))
        case .stuck, .slowCall, .slowCallReturned, .requestState, .outputVolumeChanged, .loudnessApplied,
            .loudnessMeasured:
            break  // handled above, whatever load they come with
        }
    }

    /// An error (see ``EngineState/pipelineFailed(_:handedOver:now:)``). The stream playbin
    /// holds next is taken off the pipeline's hand-over unless the error is the output's or
    /// an echo of a stream already handled.
    func streamFailed(_ error: PipelineError) {
        let mayBeHandedOver = !error.inOutput && !state.errors.isEcho(error.source)
        let handedOver = mayBeHandedOver ? pipeline.handoff.takeCommitted() : nil
        run(state.pipelineFailed(error, handedOver: handedOver, now: .now))
    }

    /// playbin holds a network stream to follow the loaded entry (see ``StreamWatch``).
    private var nextIsStream: Bool {
        guard let next = pipeline.handoff.committedItem else { return false }
        return !MediaSources.isLocal(next.uri)
    }
}
