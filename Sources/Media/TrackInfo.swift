import PlaybackVocabulary

/// What a media file says about itself: tags and duration, read before it plays.
public struct TrackInfo: Sendable, Equatable {
    /// The title tag.
    public var title: String?
    /// The artists, each once, in the tags' order.
    public var artists: [String] = []
    /// The album tag.
    public var album: String?
    /// The album's artists, each once.
    public var albumArtists: [String] = []
    /// The genres, each once.
    public var genres: [String] = []
    /// The track's number on its album.
    public var trackNumber: Int?
    /// The disc's number in its set.
    public var discNumber: Int?
    /// The length, when known (nil for an endless stream).
    public var duration: Duration?
    /// How many audio streams the file holds.
    public var audioStreams = 0
    /// How many video streams the file holds (never shown, nor decoded).
    public var videoStreams = 0
    /// Whether a position in it can be sought.
    public var isSeekable = true
    /// Whether it is a live source (a stream that cannot pause).
    public var isLive = false
    /// A `file://` URL of the cover image in the artwork cache (never image bytes: a queue
    /// may hold 100,000 entries).
    public var artworkURL: String?
    /// Whether artwork was looked for (embedded, then beside the file) when this was read.
    public var artworkSearched = false
    /// The size in bytes of the largest embedded picture over `ArtworkCache.maximumImageBytes`,
    /// if the tags hold one. GStreamer keeps several copies of such a picture while the file
    /// is loaded, and after a gapless switch still in playbin's previous group, until the
    /// pipeline goes to READY.
    public var oversizedPictureBytes: Int?
    /// The ReplayGain values of the tags (Opus R128 gains converted), if they hold any.
    public var replayGain: ReplayGainTags?
    /// For a local file without ReplayGain values: its path, size and modification time when
    /// it was read, which its measured loudness is kept under. Taken with the tags, off the
    /// main actor, so that no file is looked at there when the track is loaded.
    public var signature: TrackSignature?

    /// Nothing known yet.
    public init() {}
}
