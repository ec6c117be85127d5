/// The orderings of MPRIS `GetPlaylists` that a folder of files supports.
public enum PlaylistOrdering: String, CaseIterable, Sendable {
    // The raw values are the strings on the wire.
    /// By title.
    case alphabetical = "Alphabetical"
    /// By when the file was created.
    case created = "Created"
    /// By when the file last changed.
    case modified = "Modified"
}
