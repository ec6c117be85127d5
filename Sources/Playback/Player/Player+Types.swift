/// The values the player's clients see: its entries, its status, its options, and what
/// changed.
extension Player {
    /// One entry of the queue.
    public struct Entry: Sendable, Equatable, Identifiable {
        /// Unique in this process, never reused: the same file queued twice has two ids.
        public let id: UInt64
        /// What plays: a `file:` URI or a network stream's URL.
        public let uri: String
        /// The tags, once read (boxed, so that an entry of a long queue stays small).
        public internal(set) var info: TrackInfo? {
            get { infoBox?.info }
            set { infoBox = newValue.map(InfoBox.init) }
        }
        /// Why the entry cannot be played, once that is known.
        public internal(set) var failure: String?
        private var infoBox: InfoBox?

        init(id: UInt64, uri: String) {
            self.id = id
            self.uri = uri
        }

        /// A local file (its tags are read before it plays), not a network stream.
        var isLocal: Bool { uri.hasPrefix("file:") }
        /// A local file whose tags are still to be read.
        var needsRead: Bool { info == nil && failure == nil && isLocal }

        /// Equal when the id, the URI, the failure and the tags are (the tags by value, not
        /// by box).
        public static func == (a: Entry, b: Entry) -> Bool {
            a.id == b.id && a.uri == b.uri && a.failure == b.failure && a.info == b.info
        }
    }

    private final class InfoBox: Sendable {
        let info: TrackInfo
        init(_ info: TrackInfo) { self.info = info }
    }

    /// What clients are told of the transport.
    public enum Status: String, Sendable { case stopped, paused, playing }

    /// What follows the last entry, or the current one at its end.
    public enum RepeatMode: String, Sendable, CaseIterable { case off, one, all }

    /// What kind of change the observer is told about.
    public enum Change: Sendable, Equatable {
        /// Status, current entry, position or rate changed (a moment to republish the timing).
        case transport
        /// The current entry's metadata changed.
        case metadata
        /// The volume changed.
        case volume
        /// Repeat or shuffle changed.
        case options
        /// Entries were added, removed or replaced (`queueRevision` changed).
        case queue
        /// The tags of an entry were read, or it was found unplayable.
        case entryInfo(UInt64)
    }
}
