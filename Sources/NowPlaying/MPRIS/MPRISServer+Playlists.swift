import DBus

/// `org.mpris.MediaPlayer2.Playlists`, exported with a `playlists` source.
extension MPRISServer {
    private static let playlistType = DataType.structure([.objectPath, .string, .string])

    func playlistsInterfaceDeclaration() -> Interface {
        Interface(
            Self.playlistsInterface,
            methods: [
                Method("ActivatePlaylist", in: [Argument("PlaylistId", .objectPath)]) {
                    [unowned self] arguments, reply in
                    let path = arguments[0].objectPath!
                    let prefix = configuration.playlistIDPrefix.rawValue + "/"
                    guard path.rawValue.hasPrefix(prefix), let id = UInt64(path.rawValue.dropFirst(prefix.count)),
                        playlists?.playlist(id: id) != nil
                    else {
                        return reply.fail(BusError(.invalidArgs, "\(path) is not one of this player's playlists"))
                    }
                    run(
                        commandCenter.activatePlaylistCommand, ActivatePlaylistCommandEvent(playlistID: id),
                        reply: reply)
                },
                Method(
                    "GetPlaylists",
                    in: [
                        Argument("Index", .uint32), Argument("MaxCount", .uint32), Argument("Order", .string),
                        Argument("ReverseOrder", .boolean),
                    ],
                    out: [Argument("Playlists", .array(Self.playlistType))]
                ) { [unowned self] arguments throws(BusError) in
                    let wire = arguments[2].string!
                    guard let source = playlists, let ordering = MediaPlaylistOrdering(wire: wire),
                        source.playlistOrderings.contains(ordering)
                    else {
                        let offered = (playlists?.playlistOrderings ?? []).map(\.rawValue).joined(separator: ", ")
                        throw BusError(.invalidArgs, "unknown ordering '\(wire.prefix(100))': use one of \(offered)")
                    }
                    let found = source.playlists(
                        from: Int(arguments[0].uint32!), maxCount: Int(arguments[1].uint32!), ordering: ordering,
                        reversed: arguments[3].boolean!)
                    return [.array(Self.playlistType, found.map { playlistValue($0) })]
                },
            ],
            properties: [
                Property("PlaylistCount", .uint32) { [unowned self] in
                    .uint32(UInt32(clamping: playlists?.playlistCount ?? 0))
                },
                Property("Orderings", .array(.string)) { [unowned self] in
                    .strings((playlists?.playlistOrderings ?? []).map(\.rawValue))
                },
                Property("ActivePlaylist", .structure([.boolean, Self.playlistType])) { [unowned self] in
                    if let active = playlists?.activePlaylist {
                        return .structure([.boolean(true), playlistValue(active)])
                    }
                    return .structure([
                        .boolean(false), .structure([.objectPath(ObjectPath("/")!), .string(""), .string("")]),
                    ])
                },
            ],
            signals: [SignalDeclaration("PlaylistChanged", [Argument("Playlist", Self.playlistType)])])
    }

    func playlistValue(_ playlist: MediaPlaylist) -> Value {
        .structure([
            .objectPath(configuration.playlistIDPrefix.appending(String(playlist.id))!),
            .string(playlist.name), .string(playlist.icon),
        ])
    }
}
