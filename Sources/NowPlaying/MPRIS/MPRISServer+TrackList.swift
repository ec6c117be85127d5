import DBus

/// `org.mpris.MediaPlayer2.TrackList`, exported with a `trackList` source.
extension MPRISServer {
    func trackListInterfaceDeclaration() -> Interface {
        let metadataType = DataType.dictionary(key: .string, value: .variant)
        return Interface(
            Self.trackListInterface,
            methods: [
                Method(
                    "GetTracksMetadata", in: [Argument("TrackIds", .array(.objectPath))],
                    out: [Argument("Metadata", .array(metadataType))]
                ) { [unowned self] arguments throws(BusError) in
                    let paths = arguments[0].objectPaths
                    guard paths.count <= Self.maximumTracksPerCall else {
                        throw BusError(
                            .invalidArgs, "at most \(Self.maximumTracksPerCall) track ids per call, not \(paths.count)")
                    }
                    let ids = paths.compactMap { itemID(of: $0) }
                    let found = trackList?.trackListMetadata(ids) ?? []
                    return [.array(metadataType, found.map { metadataValue($0) })]
                },
                Method(
                    "AddTrack",
                    in: [
                        Argument("Uri", .string), Argument("AfterTrack", .objectPath),
                        Argument("SetAsCurrent", .boolean),
                    ]
                ) { [unowned self] arguments, reply in
                    let uri = arguments[0].string!
                    let after = arguments[1].objectPath!
                    var afterID: UInt64?
                    do throws(BusError) {
                        try checkURI(uri)
                        if after != Self.noTrack {
                            guard let id = itemID(of: after), trackList?.trackListMetadata([id]).isEmpty == false
                            else {
                                throw BusError(.invalidArgs, "AfterTrack \(after) is not in the track list")
                            }
                            afterID = id
                        }
                    } catch {
                        return reply.fail(error)
                    }
                    run(
                        commandCenter.addTrackCommand,
                        AddTrackCommandEvent(uri: uri, afterItemID: afterID, setAsCurrent: arguments[2].boolean!),
                        reply: reply)
                },
                Method("RemoveTrack", in: [Argument("TrackId", .objectPath)]) { [unowned self] arguments, reply in
                    runOnTrack(commandCenter.removeTrackCommand, arguments[0].objectPath!, reply: reply)
                },
                Method("GoTo", in: [Argument("TrackId", .objectPath)]) { [unowned self] arguments, reply in
                    runOnTrack(commandCenter.goToTrackCommand, arguments[0].objectPath!, reply: reply)
                },
            ],
            properties: [
                Property("Tracks", .array(.objectPath), emitsChangedSignal: .invalidates) { [unowned self] in
                    trackIDs(trackList?.trackListWindow() ?? [])
                },
                Property("CanEditTracks", .boolean) { [unowned self] in
                    .boolean(commandCenter.addTrackCommand.isActive && commandCenter.removeTrackCommand.isActive)
                },
            ],
            signals: [
                SignalDeclaration(
                    "TrackListReplaced",
                    [Argument("Tracks", .array(.objectPath)), Argument("CurrentTrack", .objectPath)]),
                SignalDeclaration(
                    "TrackAdded", [Argument("Metadata", metadataType), Argument("AfterTrack", .objectPath)]),
                SignalDeclaration("TrackRemoved", [Argument("TrackId", .objectPath)]),
                SignalDeclaration(
                    "TrackMetadataChanged", [Argument("TrackId", .objectPath), Argument("Metadata", metadataType)]),
            ])
    }

    /// The item id of one of this server's track ids, or nil for any other path.
    func itemID(of trackID: ObjectPath) -> UInt64? {
        let prefix = configuration.trackIDPrefix.rawValue + "/"
        guard trackID.rawValue.hasPrefix(prefix) else { return nil }
        return UInt64(trackID.rawValue.dropFirst(prefix.count))
    }

    func trackIDs(_ ids: [UInt64]) -> Value {
        .array(.objectPath, ids.map { .objectPath(trackID(for: $0)) })
    }

    /// `RemoveTrack` and `GoTo`: a path that is not a track id is an error; the id of an
    /// item no longer queued does nothing, as the spec says.
    private func runOnTrack(_ command: RemoteCommand<TrackCommandEvent>, _ path: ObjectPath, reply: MethodReply) {
        guard let id = itemID(of: path) else {
            return reply.fail(BusError(.invalidArgs, "\(path) is not a track id of this player"))
        }
        guard trackList?.trackListMetadata([id]).isEmpty == false else {
            logger.debug("\(command.name) ignored: \(path) is not in the track list")
            return reply.succeed()
        }
        run(command, TrackCommandEvent(itemID: id), reply: reply)
    }
}
