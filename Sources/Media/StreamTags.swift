package import CGStreamer
package import FoundationEssentials

/// What a network stream says about itself while it plays: the tags GStreamer reports on the
/// bus (ICY `StreamTitle` as the title, `icy-name` as the organization, `icy-genre`, and any
/// tags inside the stream), accumulated over the stream's life. Only the fields a message
/// carries replace earlier ones: a tag list with only a bit rate changes nothing.
package struct StreamTags: Sendable, Equatable {
    var title: String?
    var artists: [String] = []
    var album: String?
    var genres: [String] = []
    /// The station's name (`icy-name`).
    var organization: String?
    /// A picture the stream carries (its front cover first), as found: one message's, for the
    /// player to keep in the artwork cache. Copied out of GStreamer's buffer only when asked
    /// for: the tags of a file, which the player never keeps, cost no copy.
    var image: Data? {
        get { picture?.bytes }
        set { picture = newValue.map { .data($0) } }
    }
    private var picture: Picture?
    /// Where the stream's picture was kept (set by the player once it is).
    package var artworkURL: String?

    package init() {}

    /// The tags of one message (a borrowed `GstTagList`).
    package init(_ list: UnsafePointer<GstTagList>) {
        let tags = TagReader(list)
        title = tags.strings(GST_TAG_TITLE).first
        artists = tags.strings(GST_TAG_ARTIST)
        album = tags.strings(GST_TAG_ALBUM).first
        genres = tags.strings(GST_TAG_GENRE)
        organization = tags.strings(GST_TAG_ORGANIZATION).first
        picture = tags.coverSample(maximumBytes: ArtworkCache.maximumImageBytes) { ImageFormat(magic: $0) != nil }
            .map { .sample(SampleReference(taking: $0)) }
    }

    /// The tags ``init(_:)`` reads, by GStreamer's names.
    static let readTags = [
        GST_TAG_TITLE, GST_TAG_ARTIST, GST_TAG_ALBUM, GST_TAG_GENRE, GST_TAG_ORGANIZATION, GST_TAG_IMAGE,
        GST_TAG_PREVIEW_IMAGE,
    ]

    /// Whether two messages' tag lists (borrowed) hold the same values of every tag
    /// ``init(_:)`` reads. A decoder posts a stream's whole tag list again each time its bit
    /// rate moves, every few seconds of playing; a list that agrees with the one before it
    /// says nothing new and need not be read (reading cleans its text scalar by scalar).
    package static func agree(_ a: UnsafePointer<GstTagList>, _ b: UnsafePointer<GstTagList>) -> Bool {
        readTags.allSatisfy { tag in
            let count = gst_tag_list_get_tag_size(a, tag)
            guard count == gst_tag_list_get_tag_size(b, tag) else { return false }
            return (0..<min(count, guint(TagReader.maximumValues))).allSatisfy { index in
                guard let x = gst_tag_list_get_value_index(a, tag, index),
                    let y = gst_tag_list_get_value_index(b, tag, index)
                else { return false }
                if gst_value_compare(x, y) == GST_VALUE_EQUAL { return true }
                // Samples (pictures) do not compare; a repeated list holds the same one.
                let sample = gst_sample_get_type()
                return x.pointee.g_type == sample && y.pointee.g_type == sample
                    && g_value_get_boxed(x) == g_value_get_boxed(y)
            }
        }
    }

    /// Takes the picture out of these tags, uncopied: whoever keeps it reads its bytes, on
    /// a queue of its own, so that a picture of megabytes is never copied on the main actor.
    package mutating func takePicture() -> Picture? {
        defer { picture = nil }
        return picture
    }

    /// A picture: GStreamer's sample as the tags hold it, or bytes.
    package enum Picture: Sendable, Equatable {
        case sample(SampleReference)
        case data(Data)

        /// The picture's bytes: a copy out of GStreamer's buffer, read where it is asked for.
        package var bytes: Data? {
            switch self {
            case .sample(let reference): TagReader.withBytes(of: reference.sample) { Data($0) }
            case .data(let data): data
            }
        }
    }

    /// Owns one reference to a `GstSample`, which GStreamer never changes once made (so any
    /// thread may read it).
    package final class SampleReference: @unchecked Sendable, Equatable {
        let sample: OpaquePointer

        init(taking sample: OpaquePointer) { self.sample = sample }

        deinit { gst_sample_unref(sample) }

        package static func == (a: SampleReference, b: SampleReference) -> Bool { a.sample == b.sample }
    }

    /// Nothing a listener would see (a bit rate, a codec).
    package var isEmpty: Bool { self == StreamTags() }

    /// Takes the fields `newer` carries.
    package mutating func merge(_ newer: StreamTags) {
        if let title = newer.title { self.title = title }
        if !newer.artists.isEmpty { artists = newer.artists }
        if let album = newer.album { self.album = album }
        if !newer.genres.isEmpty { genres = newer.genres }
        if let organization = newer.organization { self.organization = organization }
        if let artworkURL = newer.artworkURL { self.artworkURL = artworkURL }
    }

    /// `info` (what the pipeline told of the stream) with these tags: the stream title as the
    /// title (the station's name until a title comes), the station's name as the artist and
    /// the album when the stream names none: GNOME Shell and KDE show the artist under the
    /// title, and read "Unknown artist" without one. ICY titles are often "Artist - Title";
    /// they are kept whole, not guessed apart.
    package func applied(to info: TrackInfo) -> TrackInfo {
        var info = info
        if let title = title ?? organization { info.title = title }
        if !artists.isEmpty {
            info.artists = artists
        } else if let organization {
            info.artists = [organization]
        }
        if let album = album ?? organization { info.album = album }
        if !genres.isEmpty { info.genres = genres }
        if let artworkURL {
            info.artworkURL = artworkURL
            info.artworkSearched = true
        }
        return info
    }
}
