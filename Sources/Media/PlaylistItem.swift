public import FoundationEssentials

/// One playlist file of a `PlaylistFolder`, as the MPRIS Playlists interface shows it.
public struct PlaylistItem: Sendable, Equatable, Identifiable {
    /// Unique in this process, never reused, starting at 1. A file keeps its id while its
    /// path stays the same (even when an editor saves by renaming a new file over it) and
    /// when it is renamed inside the folder.
    public let id: UInt64
    /// The `#PLAYLIST:` directive of an `.m3u`/`.m3u8` file if present and not empty, else
    /// the file name without its extension.
    public var title: String
    /// The file.
    public var url: URL
    /// When the file's contents last changed (`st_mtime`).
    public var modified: Date
    /// When the file was created: its birth time (`statx` btime) where the file system
    /// records one, else the moment this process first saw it. A file replaced by a new
    /// one under the same path, or renamed, keeps the earlier date.
    public var created: Date

    /// A playlist with these values.
    public init(id: UInt64, title: String, url: URL, modified: Date, created: Date) {
        self.id = id
        self.title = title
        self.url = url
        self.modified = modified
        self.created = created
    }
}
