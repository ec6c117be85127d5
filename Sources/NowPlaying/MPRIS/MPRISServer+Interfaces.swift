import DBus
import Dispatch

/// The interfaces the object exports: the root one, the player, and the track list and
/// playlists when they have a source.
extension MPRISServer {
    /// What decides which optional members are exported: `LoopStatus` and `Shuffle` exist
    /// only while their commands have handlers.
    var optionalMembers: [Bool] {
        [
            commandCenter.changeRepeatModeCommand.hasTargets, commandCenter.changeShuffleModeCommand.hasTargets,
            trackList != nil, playlists != nil,
        ]
    }

    func makeInterfaces() -> [Interface] {
        exportedOptionalMembers = optionalMembers
        var interfaces = [
            rootInterfaceDeclaration(),
            Interface(
                Self.playerInterface, methods: playerMethods(), properties: playerProperties(),
                signals: [
                    SignalDeclaration("Seeked", [Argument("Position", .int64)])
                ]),
        ]
        if trackList != nil { interfaces.append(trackListInterfaceDeclaration()) }
        if playlists != nil { interfaces.append(playlistsInterfaceDeclaration()) }
        return interfaces
    }

    private func rootInterfaceDeclaration() -> Interface {
        Interface(
            Self.rootInterface,
            methods: [
                Method("Raise") { [weak self] _ in
                    self?.raiseHandler?()
                    return []
                },
                Method("Quit") { [weak self] _ throws(BusError) in
                    guard let handler = self?.quitHandler else {
                        throw BusError(.notSupported, "this player cannot quit")
                    }
                    // Reply first, then quit on the next turn.
                    DispatchQueue.main.async { MainActor.assumeIsolated { handler() } }
                    return []
                },
            ],
            properties: [
                Property("CanQuit", .boolean) { [unowned self] in .boolean(quitHandler != nil) },
                Property("CanRaise", .boolean) { [unowned self] in .boolean(raiseHandler != nil) },
                Property("HasTrackList", .boolean) { [unowned self] in .boolean(trackList != nil) },
                Property("Identity", .string) { [unowned self] in .string(configuration.identity) },
                Property("DesktopEntry", .string) { [unowned self] in .string(configuration.desktopEntry ?? "") },
                Property("SupportedUriSchemes", .array(.string)) { [unowned self] in
                    .strings(configuration.supportedURISchemes)
                },
                Property("SupportedMimeTypes", .array(.string)) { [unowned self] in
                    .strings(configuration.supportedMIMETypes)
                },
            ])
    }
}
