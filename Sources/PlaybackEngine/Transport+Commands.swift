import PlaybackPipeline
import PlaybackVocabulary

/// The commands the transport takes: what the listener asked for.
extension Transport {
    /// Loads an entry and heads for `intent` (paused or playing).
    mutating func load(_ load: Load, intent: PlaybackStatus) -> [Action] {
        precondition(intent != .stopped, "a load heads for paused or playing")
        let heading: Heading = intent == .playing ? .playing : .paused
        if case .prerolling(let current, let seek, _, _) = phase {
            enter(.prerolling(current, seek: seek, queued: load, toward: heading))
            return [.awaitPreroll]
        }
        return start(load, toward: heading)
    }

    /// Play: resumes what is loaded, or loads again an entry whose output failed.
    /// ``Action/refused`` when nothing is loaded (the owner then loads the selected entry).
    mutating func play() -> [Action] {
        switch phase {
        case nil, .idle:
            return [.refused]
        case .outputLost(let load, let at):
            return start(load.at(at), toward: .playing)
        case .prerolling(let load, let seek, let queued, _):
            enter(.prerolling(load, seek: seek, queued: queued, toward: .playing))
            return []
        case .seeking(let load, let target, let reached, _):
            enter(.seeking(load, target: target, reached: reached, toward: .playing))
            return []
        case .buffering:
            return []
        case .loaded(let load, let heading, let confirmed):
            if heading == .playing && confirmed { return settle(load.entry) }
            enter(.loaded(load, .playing, confirmed: false))
            return [.setState(.playing)]
        }
    }

    /// Pause: what is loaded pauses; a load or seek in progress settles paused.
    mutating func pause() -> [Action] {
        switch phase {
        case nil, .outputLost:
            return []
        case .loaded(let load, let heading, let confirmed):
            if heading == .paused && confirmed { return settle(load.entry) }
            enter(.loaded(load, .paused, confirmed: false))
            return [.setState(.paused)]
        case .buffering(let load):
            enter(.loaded(load, .paused, confirmed: false))
            return [.setState(.paused)]
        case .idle:
            enter(.idle(.paused))
            return []
        case .prerolling(let load, let seek, let queued, _):
            // A load in progress settles paused. Nothing is heard meanwhile (what played was
            // taken down for it), so clients told Playing are told Paused at once: a stream
            // that takes long to connect must not show Playing until it does.
            let before = shown
            let told = before.map { Shown(status: .paused, entry: $0.entry, reloaded: $0.reloaded) }
            state = .active(.prerolling(load, seek: seek, queued: queued, toward: .paused), shown: told)
            return told != before ? [.publish] : []
        case .seeking(let load, let target, let reached, _):
            enter(.seeking(load, target: target, reached: reached, toward: .paused))
            return []  // as does a seek
        }
    }

    /// Stop: what is loaded is taken down, and clients are told Stopped at once.
    mutating func stop() -> [Action] {
        let wasLoaded = loaded != nil
        let fresh = takeFailure()
        state = .stopped
        retryingAfterStuck = nil
        return (wasLoaded ? [.unload(fresh: fresh)] : []) + [.publish]
    }

    /// Seeks within the loaded entry. `nextTaken`: playbin already holds the next URI for a
    /// gapless switch, so a seek would land in that track: the entry is loaded again there.
    /// ``Action/refused`` when nothing is loaded to seek in.
    mutating func seek(to target: Duration, nextTaken: Bool = false) -> [Action] {
        let target = max(target, .zero)
        switch phase {
        case nil, .idle:
            return [.refused]
        case .outputLost(let load, _):
            enter(.outputLost(load, at: target))
            return [.publish]
        case .prerolling(let load, let seek, let queued?, let heading):
            enter(.prerolling(load, seek: seek, queued: queued.at(target), toward: heading))
            return []
        case .prerolling(let load, _, nil, let heading):
            enter(.prerolling(load, seek: target, queued: nil, toward: heading))
            return []
        case .seeking(let load, _, let reached, let heading):
            return seek(load, to: target, reached: reached, toward: heading, nextTaken: nextTaken)
        case .loaded(let load, let heading, let confirmed):
            return seek(load, to: target, reached: confirmed ? heading : nil, toward: heading, nextTaken: nextTaken)
        case .buffering(let load):
            return seek(load, to: target, reached: nil, toward: .playing, nextTaken: nextTaken)
        }
    }

    private mutating func seek(
        _ load: Load, to target: Duration, reached: Heading?, toward heading: Heading, nextTaken: Bool
    ) -> [Action] {
        if nextTaken { return start(load.at(target), toward: heading) }
        changeUnderWay = false
        enter(.seeking(load, target: target, reached: reached, toward: heading))
        return [.seek(target)]
    }

    /// Sets the rate; a loaded stream seeks to `position` (where it is) to apply it.
    mutating func setRate(_ rate: Double, position: Duration) -> [Action] {
        guard rate != self.rate else { return [] }
        self.rate = rate
        switch phase {
        case .prerolling(let load, let seek, let queued, let heading):
            if queued == nil, seek == nil { enter(.prerolling(load, seek: .zero, queued: nil, toward: heading)) }
            return []
        case .loaded, .seeking, .buffering:
            return seek(to: position)
        case nil, .idle, .outputLost:
            return [.publish]
        }
    }
}
