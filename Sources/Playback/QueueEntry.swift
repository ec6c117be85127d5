extension Player {
    /// One entry of the queue.
    ///
    /// Small, for queues of 100,000 entries: the folder part of its URI is shared with the
    /// entries queued with it from the same folder, and what most entries lack (tags before
    /// they are read, a failure) sits in one optional box.
    public struct Entry: Sendable, Equatable, Identifiable {
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
        public internal(set) var info: TrackInfo? {
            get { extras?.info }
            set { extras = Extras.make(info: newValue, failure: failure) }
        }

        /// Why the entry cannot be played, once that is known.
        public internal(set) var failure: String? {
            get { extras?.failure }
            set { extras = Extras.make(info: info, failure: newValue) }
        }

        /// An entry for `uri`, sharing its folder part with `prefixes` (the entries made
        /// with the same table share it).
        init(id: UInt64, uri: String, prefixes: inout [Substring: SharedPrefix]) {
            self.id = id
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

        init(id: UInt64, uri: String) {
            var prefixes: [Substring: SharedPrefix] = [:]
            self.init(id: id, uri: uri, prefixes: &prefixes)
        }

        /// A local file (its tags are read before it plays), not a network stream.
        var isLocal: Bool { leaf.hasPrefix("file:") || folder?.text.hasPrefix("file:") == true }
        /// A local file whose tags are still to be read.
        var needsRead: Bool { info == nil && failure == nil && isLocal }

        /// Equal when the id, the URI, the failure and the tags are (the tags by value, not
        /// by box).
        public static func == (a: Entry, b: Entry) -> Bool {
            a.id == b.id && a.uri == b.uri && a.failure == b.failure && a.info == b.info
        }
    }

    /// The folder part of URIs, one copy for every entry queued from that folder at once.
    final class SharedPrefix: Sendable {
        let text: String
        init(_ text: String) { self.text = text }
    }

    /// What an entry learns after it is queued, boxed so that an entry without it stays small.
    private final class Extras: Sendable {
        let info: TrackInfo?
        let failure: String?

        private init(info: TrackInfo?, failure: String?) {
            self.info = info
            self.failure = failure
        }

        static func make(info: TrackInfo?, failure: String?) -> Extras? {
            info == nil && failure == nil ? nil : Extras(info: info, failure: failure)
        }
    }
}
