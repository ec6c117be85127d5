public import DBus

extension MPRISServer {
    /// How the player presents itself on the bus.
    public struct Configuration: Sendable {
        /// The part after `org.mpris.MediaPlayer2.` in the bus name.
        public var playerName: String
        /// The name desktops show for the player (MPRIS `Identity`), such as "Quaver".
        public var identity: String
        /// The base name of the player's `.desktop` file, which desktops take its icon
        /// from (MPRIS `DesktopEntry`); nil: none.
        public var desktopEntry: String?
        /// The URI schemes `OpenUri` and `AddTrack` accept (MPRIS `SupportedUriSchemes`);
        /// others get `InvalidArgs` before any handler runs.
        public var supportedURISchemes: [String] = ["file", "http", "https"]
        /// The MIME types the player can play (MPRIS `SupportedMimeTypes`).
        public var supportedMIMETypes: [String] = []
        /// Prefix of `mpris:trackid` paths; must not lie under `/org/mpris`.
        public var trackIDPrefix: ObjectPath
        /// Prefix of playlist ids.
        public var playlistIDPrefix: ObjectPath
        /// The namespace of the errors returned for failed commands.
        public var errorNamespace: String
        /// How far (µs) a new elapsed time may differ from the predicted one before it counts
        /// as a jump and `Seeked` is sent.
        public var seekTolerance: Duration = .milliseconds(100)

        /// A player on `org.mpris.MediaPlayer2.<playerName>`, shown as `identity`; track and
        /// playlist ids and error names are made from `playerName`.
        public init(playerName: String, identity: String, desktopEntry: String? = nil) {
            self.playerName = playerName
            self.identity = identity
            self.desktopEntry = desktopEntry
            let safe = Self.nameElement(playerName)
            self.trackIDPrefix = ObjectPath("/" + safe + "/track") ?? ObjectPath("/player/track")!
            self.playlistIDPrefix = ObjectPath("/" + safe + "/playlist") ?? ObjectPath("/player/playlist")!
            self.errorNamespace = "org.mpris.MediaPlayer2." + safe + ".Error"
        }

        /// `name` as one element valid in both object paths and error names: ASCII letters,
        /// digits and `_`, not starting with a digit (a bus name may hold `-`, these may not).
        static func nameElement(_ name: String) -> String {
            let mapped = String(
                name.unicodeScalars.map { scalar in
                    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
                        ? Character(scalar) : "_"
                })
            guard let first = mapped.first else { return "player" }
            return first.isNumber ? "_" + mapped : mapped
        }
    }
}
