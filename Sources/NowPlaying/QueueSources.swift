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
    /// The name shown to the user.
    public var name: String
    /// A URI of an icon, or empty.
    public var icon: String

    /// A playlist `id` named `name`, with the icon at the URI `icon` (empty: none).
    public init(id: UInt64, name: String, icon: String = "") {
        self.id = id
        self.name = name
        self.icon = icon
    }
}

/// An order clients may ask playlists in (MPRIS `Playlist_Ordering`).
public enum MediaPlaylistOrdering: String, CaseIterable, Sendable {
    /// By name.
    case alphabetical = "Alphabetical"
    /// By when each playlist was made, oldest first.
    case created = "Created"
    /// By when each playlist last changed, oldest first.
    case modified = "Modified"
    /// By when each playlist last played, least recently first.
    case played = "Played"
    /// In the player's own order.
    case user = "User"

    /// From the string on the wire (`Created`), or the specification's enum name
    /// (`CreationDate`), which some clients send.
    init?(wire: String) {
        switch wire {
        case "CreationDate": self = .created
        case "ModifiedDate": self = .modified
        case "LastPlayDate": self = .played
        case "UserDefined": self = .user
        default: self.init(rawValue: wire)
        }
    }
}

/// The playlists a player can switch to: MPRIS `org.mpris.MediaPlayer2.Playlists`.
/// Tell the server about changes with `MPRISServer.playlistsDidChange(renamed:)`;
/// activation comes in as the `activatePlaylist` command.
@MainActor
public protocol PlaylistsDataSource: AnyObject {
    /// How many playlists there are (MPRIS `PlaylistCount`).
    var playlistCount: Int { get }
    /// The orderings ``playlists(from:maxCount:ordering:reversed:)`` accepts (MPRIS
    /// `Orderings`); a client asking for another gets `InvalidArgs`.
    var playlistOrderings: [MediaPlaylistOrdering] { get }
    /// Up to `maxCount` playlists from `index` in `ordering` (ascending, oldest first for
    /// dates), reversed when asked.
    func playlists(from index: Int, maxCount: Int, ordering: MediaPlaylistOrdering, reversed: Bool) -> [MediaPlaylist]
    /// The playlist playing now, if the queue is one.
    var activePlaylist: MediaPlaylist? { get }
    /// The playlist with this id, nil when there is none.
    func playlist(id: UInt64) -> MediaPlaylist?
}
