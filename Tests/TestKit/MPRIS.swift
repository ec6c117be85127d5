public import DBus

/// The names of the MPRIS specification's interfaces and object, and the errors the tests
/// expect by name.
public enum MPRISNames {
    /// The root interface (Raise, Quit, Identity…), also the prefix of every player's bus name.
    public static let root = "org.mpris.MediaPlayer2"
    /// The Player interface.
    public static let player = "org.mpris.MediaPlayer2.Player"
    /// The TrackList interface.
    public static let trackList = "org.mpris.MediaPlayer2.TrackList"
    /// The Playlists interface.
    public static let playlists = "org.mpris.MediaPlayer2.Playlists"
    /// D-Bus's standard properties interface (Get, Set, GetAll, PropertiesChanged).
    public static let properties = "org.freedesktop.DBus.Properties"
    /// The one object every player exports.
    public static let path = ObjectPath("/org/mpris/MediaPlayer2")!
    /// The track id that means "no track" (TrackList's AddTrack after it: at the start).
    public static let noTrack = ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!
    /// D-Bus's error for arguments out of range or of the wrong type.
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    /// Quaver's error for a URI that names nothing it can play.
    public static let noSuchContent = "org.mpris.MediaPlayer2.quaver.Error.NoSuchContent"
}

/// A signal as a client (or a signal sink) received it, with what MPRIS clients read from it.
public struct RecordedSignal: CustomStringConvertible, Sendable {
    /// The signal's name, such as `PropertiesChanged` or `Seeked`.
    public var member: String
    /// The interface it belongs to.
    public var interface: String?
    /// Its arguments, in order.
    public var arguments: [Value]
    /// The unique bus name of the sender, when it came over a bus.
    public var sender: String?
    /// When it was recorded.
    public var received: ContinuousClock.Instant
    /// The sender's number for it: what one sender sends is numbered in the order it was
    /// sent, replies included (0 when not known).
    public var serial: UInt32

    /// A signal with these parts, recorded now.
    public init(
        interface: String?, member: String, arguments: [Value], sender: String? = nil,
        received: ContinuousClock.Instant = .now, serial: UInt32 = 0
    ) {
        self.interface = interface
        self.member = member
        self.arguments = arguments
        self.sender = sender
        self.received = received
        self.serial = serial
    }

    /// `message`, recorded now.
    public init(_ message: Message) {
        self.init(
            interface: message.interface, member: message.member ?? "", arguments: message.arguments,
            sender: message.sender, serial: message.serial)
    }

    /// Whether it is the properties interface's `PropertiesChanged`.
    public var isPropertiesChanged: Bool { interface == MPRISNames.properties && member == "PropertiesChanged" }
    /// Whether it is the Player's `Seeked`.
    public var isSeeked: Bool { interface == MPRISNames.player && member == "Seeked" }
    /// For PropertiesChanged: the interface whose properties changed.
    public var changedInterface: String? { isPropertiesChanged ? arguments.first?.string : nil }
    /// For PropertiesChanged: the changed properties.
    public var changed: [String: Value] {
        isPropertiesChanged && arguments.count > 1 ? arguments[1].stringVariantDictionary ?? [:] : [:]
    }
    /// For PropertiesChanged: the names of the properties invalidated (changed, value not sent).
    public var invalidated: [String] {
        isPropertiesChanged && arguments.count > 2 ? arguments[2].stringArray ?? [] : []
    }
    /// For the bus's NameOwnerChanged: the name, and its new owner ("" once released).
    public var nameOwnerChange: (name: String, owner: String)? {
        guard member == "NameOwnerChanged", arguments.count == 3, let name = arguments[0].string,
            let owner = arguments[2].string
        else { return nil }
        return (name, owner)
    }
    /// The interface, the member and the arguments.
    public var description: String { "\(interface.map { $0 + "." } ?? "")\(member)\(arguments)" }
}

extension Connection {
    /// Hands `handler` each signal an MPRIS client follows, recorded as it arrives: the player
    /// object's PropertiesChanged and Seeked, and the bus's NameOwnerChanged.
    public func followMPRIS(_ handler: @escaping @MainActor (RecordedSignal) -> Void) throws {
        try onSignal(interface: MPRISNames.properties, member: "PropertiesChanged", path: MPRISNames.path) {
            handler(RecordedSignal($0))
        }
        try onSignal(interface: MPRISNames.player, member: "Seeked", path: MPRISNames.path) {
            handler(RecordedSignal($0))
        }
        // No sender: a sender's name is followed through a call, and a signal that comes
        // before its answer would be lost (only the bus sends this one anyway).
        try onSignal(interface: "org.freedesktop.DBus", member: "NameOwnerChanged") { handler(RecordedSignal($0)) }
    }
}
