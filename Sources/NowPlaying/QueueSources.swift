/// What a player shows of its queue: MPRIS `org.mpris.MediaPlayer2.TrackList`.
///
/// The track list is a window of context around the current item, not the whole queue
/// (the MPRIS spec suggests about 20 entries), while every queued item stays addressable
/// by id: `GetTracksMetadata`, `AddTrack`, `RemoveTrack` and `GoTo` accept any of them.
/// Tell the server about changes with `MPRISServer.trackListDidChange(replaced:)` and
/// `MPRISServer.trackMetadataDidChange(_:)`; edits come in as the `addTrack`,
/// `removeTrack` and `goToTrack` commands of the `RemoteCommandCenter`.
@MainActor
public protocol TrackListDataSource: AnyObject {
    /// The item ids shown as `Tracks`, in queue order.
    func trackListWindow() -> [UInt64]
    /// What is known of each queued item among `ids`, in the same order; ids of items not
    /// in the queue are left out.
    func trackListMetadata(_ ids: [UInt64]) -> [NowPlayingInfo]
}

/// A playlist offered to clients: MPRIS `(oss)`.
public struct MediaPlaylist: Sendable, Equatable {
    /// Stable for the playlist while the player runs, across renames.
    public var id: UInt64
    public var name: String
    /// A URI of an icon, or empty.
    public var icon: String

    public init(id: UInt64, name: String, icon: String = "") {
        self.id = id
        self.name = name
        self.icon = icon
    }
}

/// The playlists a player can switch to: MPRIS `org.mpris.MediaPlayer2.Playlists`.
/// Tell the server about changes with `MPRISServer.playlistsDidChange(renamed:)`;
/// activation comes in as the `activatePlaylist` command.
@MainActor
public protocol PlaylistsDataSource: AnyObject {
    var playlistCount: Int { get }
    /// The MPRIS orderings `playlists(...)` accepts: `Alphabetical`, `Created`,
    /// `Modified`, `Played` or `User`.
    var playlistOrderings: [String] { get }
    /// Up to `maxCount` playlists from `index` in `ordering` (ascending, oldest first for
    /// dates), reversed when asked; nil when `ordering` is not one this source offers.
    func playlists(from index: Int, maxCount: Int, ordering: String, reversed: Bool) -> [MediaPlaylist]?
    /// The playlist playing now, if the queue is one.
    var activePlaylist: MediaPlaylist? { get }
    /// The playlist with this id, nil when there is none.
    func playlist(id: UInt64) -> MediaPlaylist?
}
