import DBus

// The planner: the live object's declarations, the values to send, and the oracle that
// says what each call with the declared signature may answer. The calls themselves are
// built in HostileGenerators.swift (one call of each class) and HostileBatches.swift.

// MARK: - Calls generated from the declarations

/// Builds calls from the interface declarations of the live object, with hostile values,
/// and says what each may answer.
struct HostilePlanner {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let introspectableInterface = "org.freedesktop.DBus.Introspectable"
    static let peerInterface = "org.freedesktop.DBus.Peer"
    static let standardInterfaces: Set<String> = [propertiesInterface, introspectableInterface, peerInterface]

    let interfaces: [HostileInterface]
    let values: HostileValues
    let supportedSchemes: [String]
    let rates: ClosedRange<Double>
    let orderings: [String]
    /// `outOfRangeCalls()`, made once.
    private(set) var outOfRange: [HostileCall] = []

    init(
        interfaces: [HostileInterface], values: HostileValues, supportedSchemes: [String], rates: ClosedRange<Double>,
        orderings: [String]
    ) {
        self.interfaces = interfaces
        self.values = values
        self.supportedSchemes = supportedSchemes
        self.rates = rates
        self.orderings = orderings
        objectInterfaces = interfaces.filter { !Self.standardInterfaces.contains($0.name) }
        allMethods = interfaces.flatMap { interface in interface.methods.map { (interface, $0) } }
        allProperties = objectInterfaces.flatMap { interface in interface.properties.map { (interface, $0) } }
        uriMethods = allMethods.filter { $0.method.inNames.contains("Uri") }
        otherPaths = values.objectPaths.filter { $0 != Self.objectPath }
        outOfRange = outOfRangeCalls()
    }

    /// Interfaces with properties of their own (not the standard ones).
    let objectInterfaces: [HostileInterface]
    let allMethods: [(interface: HostileInterface, method: HostileMethod)]
    let allProperties: [(interface: HostileInterface, property: HostileProperty)]
    /// Methods that take a URI.
    let uriMethods: [(interface: HostileInterface, method: HostileMethod)]
    /// Paths that are not the MPRIS object.
    let otherPaths: [String]

    /// The one call that is never generated with its right signature: it ends the daemon
    /// (the test calls it last, on purpose).
    static func endsTheDaemon(interface: String?, member: String, arguments: [Value]) -> Bool {
        member == "Quit" && arguments.isEmpty && (interface == nil || interface == "org.mpris.MediaPlayer2")
    }

    static let specificationOrderings: Set<String> = [
        "Alphabetical", "CreationDate", "ModifiedDate", "LastPlayDate", "UserDefined",
    ]

    static let unknownInterfaceNames = [
        "org.mpris.MediaPlayer2.Nope", "org.mpris.MediaPlayer2.player", "org.mpris.MediaPlayer2.Player.Extra",
        "com.example.Evil", "a.b", "org.freedesktop.DBus.Properties2", "org.mpris.MediaPlayer2.quaver",
        "x." + String(repeating: "y", count: 250),
    ]
    static let unknownMemberNames = [
        "NoSuchMethod", "play", "PLAY", "Get_", "Quit2", "_", "A" + String(repeating: "b", count: 254), "Introspect2",
        "Ping_",
    ]
    static let unknownPropertyNames = [
        "NoSuchProperty", "volume", "VOLUME", "Volume ", "", "Position\u{0}", "\u{FFFD}",
        String(repeating: "P", count: 4096),
    ]

    // MARK: Oracle

    func isSupported(uri: String) -> Bool {
        // What the daemon promises: the text before the first ':' is one of SupportedUriSchemes.
        guard let colon = uri.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        return supportedSchemes.contains(String(uri[..<colon]).lowercased())
    }

    func isID(_ path: String, under prefix: String) -> Bool {
        path.hasPrefix(prefix + "/") && UInt64(path.dropFirst(prefix.count + 1)) != nil
    }

    func interface(named name: String) -> HostileInterface? { objectInterfaces.first { $0.name == name } }

    /// What a call with the declared signature may answer.
    func expectation(interface name: String, member: String, arguments: [Value]) -> HostileExpectation {
        switch name {
        case Self.introspectableInterface, Self.peerInterface:
            return .success
        case Self.propertiesInterface:
            return propertiesExpectation(member: member, arguments: arguments)
        default:
            break
        }
        func string(_ i: Int) -> String { arguments[i].string ?? "" }
        func path(_ i: Int) -> String { arguments[i].objectPath?.rawValue ?? "" }
        switch (name, member) {
        case ("org.mpris.MediaPlayer2.Player", "OpenUri"), ("org.mpris.MediaPlayer2.TrackList", "AddTrack"):
            if !isSupported(uri: string(0)) { return .error(HostileExpectation.invalidArgs) }
            if member == "AddTrack", path(1) != "/org/mpris/MediaPlayer2/TrackList/NoTrack",
                !isID(path(1), under: values.trackPrefix)
            {
                return .error(HostileExpectation.invalidArgs)
            }
        case ("org.mpris.MediaPlayer2.TrackList", "GoTo"), ("org.mpris.MediaPlayer2.TrackList", "RemoveTrack"):
            if !isID(path(0), under: values.trackPrefix) { return .error(HostileExpectation.invalidArgs) }
        case ("org.mpris.MediaPlayer2.Playlists", "ActivatePlaylist"):
            if !isID(path(0), under: values.playlistPrefix) { return .error(HostileExpectation.invalidArgs) }
        case ("org.mpris.MediaPlayer2.Playlists", "GetPlaylists"):
            if orderings.contains(string(2)) { return .success }
            // The specification's enum names may be taken as aliases of the wire strings.
            if Self.specificationOrderings.contains(string(2)) {
                return HostileExpectation(successAllowed: true, errors: [HostileExpectation.invalidArgs])
            }
            return .error(HostileExpectation.invalidArgs)
        case ("org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata"):
            return .success
        default:
            break
        }
        return .acted
    }

    /// Get, GetAll and Set with the right signature.
    func propertiesExpectation(member: String, arguments: [Value]) -> HostileExpectation {
        let interfaceName = arguments.first?.string ?? ""
        let declared = interface(named: interfaceName)
        switch member {
        case "GetAll":
            if let declared {
                var expectation = HostileExpectation.success
                expectation.reply = .properties(
                    Dictionary(uniqueKeysWithValues: declared.properties.map { ($0.name, $0.type.signature) }))
                return expectation
            }
            if Self.standardInterfaces.contains(interfaceName) {
                var expectation = HostileExpectation.success
                expectation.reply = .properties([:])
                return expectation
            }
            return .error(HostileExpectation.unknownInterface)
        case "Get", "Set":
            guard let declared else {
                // The standard interfaces have no properties: either answer is sensible.
                return Self.standardInterfaces.contains(interfaceName)
                    ? .error(HostileExpectation.unknownInterface, HostileExpectation.unknownProperty)
                    : .error(HostileExpectation.unknownInterface)
            }
            let propertyName = arguments.count > 1 ? arguments[1].string ?? "" : ""
            guard let property = declared.properties.first(where: { $0.name == propertyName }) else {
                return .error(HostileExpectation.unknownProperty)
            }
            if member == "Get" {
                var expectation = HostileExpectation.success
                expectation.reply = .variant(property.type.signature)
                return expectation
            }
            guard property.writable else { return .error(HostileExpectation.propertyReadOnly) }
            guard arguments.count > 2, case .variant(let value) = arguments[2],
                value.type.signature == property.type.signature
            else {
                return .error(HostileExpectation.invalidArgs)
            }
            return setExpectation(interface: interfaceName, property: propertyName, value: value)
        default:
            return .error(HostileExpectation.unknownMethod)
        }
    }

    /// Set of a writable property with a value of its type.
    func setExpectation(interface: String, property: String, value: Value) -> HostileExpectation {
        guard interface == "org.mpris.MediaPlayer2.Player" else { return .acted }
        switch property {
        case "Rate":
            let rate = value.double ?? .nan
            if !rate.isFinite { return .error(HostileExpectation.invalidArgs) }
            if rate == 0 || rates.contains(rate) { return .acted }  // 0 means Pause
            return .error(HostileExpectation.invalidArgs)
        case "Volume":
            return (value.double ?? .nan).isFinite ? .acted : .error(HostileExpectation.invalidArgs)
        case "LoopStatus":
            return ["None", "Track", "Playlist"].contains(value.string ?? "")
                ? .acted : .error(HostileExpectation.invalidArgs)
        default:
            return .acted
        }
    }

    /// A call with a wrong signature: the standard Peer methods are answered by libdbus,
    /// which ignores their arguments.
    func wrongSignatureExpectation(interface: String) -> HostileExpectation {
        interface == Self.peerInterface
            ? HostileExpectation(successAllowed: true, errors: [HostileExpectation.invalidArgs])
            : .error(HostileExpectation.invalidArgs)
    }
}
