import DBus

/// `org.mpris.MediaPlayer2.Player`: its properties, and its methods turned into commands.
extension MPRISServer {
    func playerProperties() -> [Property] {
        var properties: [Property] = [
            Property("PlaybackStatus", .string) { [unowned self] in .string(playbackStatus) }
        ]
        if commandCenter.changeRepeatModeCommand.hasTargets {
            properties.append(
                Property(
                    "LoopStatus", .string,
                    get: { [unowned self] in
                        .string(Self.loopStatus(commandCenter.currentRepeatType))
                    },
                    set: { [unowned self] value throws(BusError) in
                        guard let text = value.string, let type = Self.repeatType(text) else {
                            throw BusError(.invalidArgs, "LoopStatus must be None, Track or Playlist")
                        }
                        try run(commandCenter.changeRepeatModeCommand, ChangeRepeatModeCommandEvent(repeatType: type))
                    }))
        }
        properties.append(
            Property(
                "Rate", .double, get: { [unowned self] in .double(rate) },
                set: { [unowned self] value throws(BusError) in
                    let requested = value.double ?? .nan
                    guard requested.isFinite else { throw BusError(.invalidArgs, "Rate must be a finite number") }
                    if requested == 0 {  // the spec: Rate 0 means Pause
                        try run(commandCenter.pauseCommand, RemoteCommandEvent())
                        return
                    }
                    let range = commandCenter.supportedPlaybackRates
                    guard range.contains(requested) else {
                        throw BusError(
                            .invalidArgs, "Rate \(requested) is outside \(range.lowerBound)...\(range.upperBound)")
                    }
                    try run(
                        commandCenter.changePlaybackRateCommand, ChangePlaybackRateCommandEvent(playbackRate: requested)
                    )
                }))
        if commandCenter.changeShuffleModeCommand.hasTargets {
            properties.append(
                Property(
                    "Shuffle", .boolean,
                    get: { [unowned self] in
                        .boolean(commandCenter.currentShuffleType != .off)
                    },
                    set: { [unowned self] value throws(BusError) in
                        let type: ShuffleType = value.boolean == true ? .items : .off
                        try run(
                            commandCenter.changeShuffleModeCommand, ChangeShuffleModeCommandEvent(shuffleType: type))
                    }))
        }
        properties += [
            Property("Metadata", .dictionary(key: .string, value: .variant)) { [unowned self] in metadata },
            Property(
                "Volume", .double, get: { [unowned self] in .double(infoCenter.volume) },
                set: { [unowned self] value throws(BusError) in
                    guard let requested = value.double, requested.isFinite else {
                        throw BusError(.invalidArgs, "Volume must be a finite number")
                    }
                    try run(
                        commandCenter.changeVolumeCommand, ChangeVolumeCommandEvent(volume: min(max(requested, 0), 1)))
                }),
            Property("Position", .int64, emitsChangedSignal: .false) { [unowned self] in
                .int64(infoCenter.currentPosition.microseconds)
            },
            Property("MinimumRate", .double) { [unowned self] in
                .double(min(commandCenter.supportedPlaybackRates.lowerBound, 1))
            },
            Property("MaximumRate", .double) { [unowned self] in
                .double(max(commandCenter.supportedPlaybackRates.upperBound, 1))
            },
            Property("CanGoNext", .boolean) { [unowned self] in .boolean(canGoNext) },
            Property("CanGoPrevious", .boolean) { [unowned self] in .boolean(canGoPrevious) },
            Property("CanPlay", .boolean) { [unowned self] in .boolean(canPlay) },
            Property("CanPause", .boolean) { [unowned self] in .boolean(canPause) },
            Property("CanSeek", .boolean) { [unowned self] in .boolean(canSeek) },
            Property("CanControl", .boolean, emitsChangedSignal: .false) { .boolean(true) },
        ]
        return properties
    }

    func playerMethods() -> [Method] {
        [
            Method("Next") { [unowned self] _, reply in
                run(commandCenter.nextTrackCommand, RemoteCommandEvent(), reply: reply)
            },
            Method("Previous") { [unowned self] _, reply in
                run(commandCenter.previousTrackCommand, RemoteCommandEvent(), reply: reply)
            },
            Method("Pause") { [unowned self] _, reply in
                run(commandCenter.pauseCommand, RemoteCommandEvent(), reply: reply)
            },
            Method("PlayPause") { [unowned self] _, reply in
                if commandCenter.togglePlayPauseCommand.isActive {
                    run(commandCenter.togglePlayPauseCommand, RemoteCommandEvent(), reply: reply)
                } else if playbackStatus == "Playing" {
                    run(commandCenter.pauseCommand, RemoteCommandEvent(), reply: reply)
                } else {
                    run(commandCenter.playCommand, RemoteCommandEvent(), reply: reply)
                }
            },
            Method("Stop") { [unowned self] _, reply in
                run(commandCenter.stopCommand, RemoteCommandEvent(), reply: reply)
            },
            Method("Play") { [unowned self] _, reply in
                run(commandCenter.playCommand, RemoteCommandEvent(), reply: reply)
            },
            Method("Seek", in: [Argument("Offset", .int64)]) { [unowned self] arguments, reply in
                seek(offset: .microseconds(arguments[0].int64!), reply: reply)
            },
            Method("SetPosition", in: [Argument("TrackId", .objectPath), Argument("Position", .int64)]) {
                [unowned self] arguments, reply in
                setPosition(trackID: arguments[0].objectPath!, position: arguments[1].int64!, reply: reply)
            },
            Method("OpenUri", in: [Argument("Uri", .string)]) { [unowned self] arguments, reply in
                let uri = arguments[0].string!
                do throws(BusError) {
                    try checkURI(uri)
                } catch {
                    return reply.fail(error)
                }
                run(commandCenter.openURICommand, OpenURICommandEvent(uri: uri), reply: reply)
            },
        ]
    }

    func seek(offset: Duration, reply: MethodReply) {
        guard canSeekTarget, let target = commandTarget else {
            logger.debug("Seek ignored: the current item cannot seek")
            return reply.succeed()
        }
        let position = max(target.position + offset, .zero)
        if let duration = target.duration, position >= duration {
            // Past the end acts as Next; with no next item, playback stops.
            if commandCenter.nextTrackCommand.isActive {
                run(commandCenter.nextTrackCommand, RemoteCommandEvent(), reply: reply)
            } else {
                run(commandCenter.stopCommand, RemoteCommandEvent(), reply: reply)
            }
            return
        }
        move(by: offset, to: position, reply: reply)
    }

    /// Hands a move within the item to the command that matches it best: ``seekCommand``,
    /// MPRIS `Seek`'s own counterpart with both the offset and where it leads; else the
    /// skip command of the move's direction, as code written for Apple's API expects a
    /// client's step to arrive; else ``changePlaybackPositionCommand`` with the position.
    /// A command that takes it and succeeds makes its landing announced (`seekRequested`);
    /// none taking it forgets an earlier one's.
    private func move(by offset: Duration, to position: Duration, reply: MethodReply) {
        let center = commandCenter
        let accepted: @MainActor () -> Void = { [weak self] in self?.seekRequested = true }
        if center.seekCommand.isActive {
            return run(
                center.seekCommand, SeekCommandEvent(offset: offset, position: position), reply: reply,
                succeeded: accepted)
        }
        let seconds = Double(offset.components.seconds) + Double(offset.components.attoseconds) / 1e18
        if offset > .zero, center.skipForwardCommand.isActive {
            return run(
                center.skipForwardCommand, SkipIntervalCommandEvent(interval: seconds), reply: reply,
                succeeded: accepted)
        }
        if offset < .zero, center.skipBackwardCommand.isActive {
            return run(
                center.skipBackwardCommand, SkipIntervalCommandEvent(interval: -seconds), reply: reply,
                succeeded: accepted)
        }
        if !center.changePlaybackPositionCommand.isActive { seekRequested = false }
        run(
            center.changePlaybackPositionCommand, ChangePlaybackPositionCommandEvent(positionTime: position),
            reply: reply, succeeded: accepted)
    }

    private func setPosition(trackID: ObjectPath, position: Int64, reply: MethodReply) {
        guard let target = commandTarget, trackID == self.trackID(for: target.itemID) else {
            logger.debug("SetPosition ignored: \(trackID) is not the current track")
            return reply.succeed()
        }
        let time = Duration.microseconds(position)
        guard position >= 0, let duration = target.duration, time <= duration, canSeekTarget else {
            logger.debug("SetPosition ignored: \(position) µs is outside the track, or it cannot seek")
            return reply.succeed()
        }
        if commandCenter.changePlaybackPositionCommand.isActive {
            run(
                commandCenter.changePlaybackPositionCommand, ChangePlaybackPositionCommandEvent(positionTime: time),
                reply: reply, succeeded: { [weak self] in self?.seekRequested = true })
        } else {
            // A player with relative commands alone still gets a slider's drag: the move from
            // where it is, as KDE Connect turns its own slider into a `Seek`.
            move(by: time - target.position, to: time, reply: reply)
        }
    }

    /// Whether the item commands act on can seek: a seeking command is active, and the
    /// item has a known length (a live stream has none).
    private var canSeekTarget: Bool {
        let active = commandCenter.canMoveWithinItem
        if let pending = infoCenter.pendingItem { return active && pending.duration != nil }
        return canSeek
    }

    /// A URI a client sent must be short enough (`maximumURILength`) and of a supported scheme.
    func checkURI(_ uri: String) throws(BusError) {
        guard uri.utf8.count <= Self.maximumURILength else {
            throw BusError(
                .invalidArgs, "URI of \(uri.utf8.count) bytes: at most \(Self.maximumURILength) are accepted")
        }
        guard let colon = uri.firstIndex(of: ":"),
            configuration.supportedURISchemes.contains(uri[..<colon].lowercased())
        else {
            throw BusError(
                .invalidArgs,
                "unsupported URI '\(uri.prefix(200))': schemes are \(configuration.supportedURISchemes.joined(separator: ", "))"
            )
        }
    }
}
