import PlaybackVocabulary

/// One entry of the queue.
///
/// Small, for queues of 100,000 entries: the folder part of its URI is shared with the
/// entries queued with it from the same folder, and what most entries lack (tags before
/// they are read, a failure) sits in one optional box.
public struct QueueEntry: Sendable, Equatable, Identifiable {
    /// Unique in this process, never reused: the same file queued twice has two ids.
    public let id: UInt64
    /// Everything up to the last `/` of the URI, shared; nil when the URI has none.
    private let folder: SharedPrefix?
    /// The rest of the URI: a file name fits in the string itself when it is short.
    private let leaf: String
    private var extras: Extras?

    /// What plays: a `file:` URI or a network stream's URL.
    public var uri: String { folder.map { $0.text + leaf } ?? leaf }

    /// The tags, once read.
    public package(set) var info: TrackInfo? {
        get { extras?.info }
        set { extras = Extras.make(info: newValue, failure: failure, playlistTitle: playlistTitle) }
    }

    /// Why the entry cannot be played, once that is known.
    public package(set) var failure: String? {
        get { extras?.failure }
        set { extras = Extras.make(info: info, failure: newValue, playlistTitle: playlistTitle) }
    }

    /// What the playlist it was queued from calls it (`#EXTINF`, `TitleN=`), if anything.
    public var playlistTitle: String? { extras?.playlistTitle }

    /// An entry for `uri`, sharing its folder part with `prefixes` (the entries made
    /// with the same table share it), called `title` by its playlist.
    package init(id: UInt64, uri: String, title: String? = nil, prefixes: inout [Substring: SharedPrefix]) {
        self.id = id
        extras = Extras.make(info: nil, failure: nil, playlistTitle: title)
        guard let slash = uri.lastIndex(of: "/") else {
            folder = nil
            leaf = uri
            return
        }
        let prefix = uri[...slash]
        if let shared = prefixes[prefix] {
            folder = shared
        } else {
            let shared = SharedPrefix(String(prefix))
            prefixes[prefix] = shared
            folder = shared
        }
        leaf = String(uri[uri.index(after: slash)...])
    }

    package init(id: UInt64, uri: String, title: String? = nil) {
        var prefixes: [Substring: SharedPrefix] = [:]
        self.init(id: id, uri: uri, title: title, prefixes: &prefixes)
    }

    /// A local file (its tags are read before it plays), not a network stream.
    package var isLocal: Bool { leaf.hasPrefix("file:") || folder?.text.hasPrefix("file:") == true }
    /// A local file whose tags are still to be read.
    package var needsRead: Bool { info == nil && failure == nil && isLocal }

    /// Equal when the id, the URI, the failure, the tags and the playlist's title are
    /// (by value, not by box).
    public static func == (a: Self, b: Self) -> Bool {
        a.id == b.id && a.uri == b.uri && a.failure == b.failure && a.info == b.info
            && a.playlistTitle == b.playlistTitle
    }
}

/// The folder part of URIs, one copy for every entry queued from that folder at once.
package final class SharedPrefix: Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}

/// What an entry learns after it is queued, and its playlist's title, boxed so that an
/// entry without them stays small.
private final class Extras: Sendable {
    let info: TrackInfo?
    let failure: String?
    let playlistTitle: String?

    private init(info: TrackInfo?, failure: String?, playlistTitle: String?) {
        self.info = info
        self.failure = failure
        self.playlistTitle = playlistTitle
    }

    static func make(info: TrackInfo?, failure: String?, playlistTitle: String?) -> Extras? {
        info == nil && failure == nil && playlistTitle == nil
            ? nil : Extras(info: info, failure: failure, playlistTitle: playlistTitle)
    }
}

extension QueueEntry {
    /// What clients are shown of the entry: its tags (nil before they are read), with what
    /// its playlist calls it where they say nothing.
    ///
    /// For a network stream the playlist's title is the station's name, in the places an
    /// ICY `icy-name` takes (`StreamTags`), when the stream sends none: the title until the
    /// stream names one, the artist and the album when it names none. GNOME Shell and KDE
    /// would otherwise show the URL's file name and "Unknown artist". For a file it fills the
    /// title and the artist its tags lack, read as "Artist - Title" when it has that form.
    public var shownInfo: TrackInfo? {
        guard let name = playlistTitle else { return info }
        var shown = info ?? TrackInfo()
        if isLocal {
            let (artist, title) = Self.artistAndTitle(name)
            if shown.title == nil { shown.title = title }
            if shown.artists.isEmpty, let artist { shown.artists = [artist] }
        } else {
            if shown.title == nil { shown.title = name }
            if shown.artists.isEmpty { shown.artists = [name] }
            if shown.album == nil { shown.album = name }
        }
        return shown
    }

    /// "Artist - Title" (the form M3U files are written in) as its two parts; any other text
    /// as a title alone.
    package static func artistAndTitle(_ text: String) -> (artist: String?, title: String) {
        guard let dash = text.firstRange(of: " - ") else { return (nil, text) }
        let artist = text[..<dash.lowerBound].trimmingSpaces()
        let title = text[dash.upperBound...].trimmingSpaces()
        return artist.isEmpty || title.isEmpty ? (nil, text) : (artist, title)
    }
}
