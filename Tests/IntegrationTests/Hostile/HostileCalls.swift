import DBus

// A generated call, what it may answer (the oracle's verdict), what it did answer, and a
// short rendering of its values for failure messages.

// MARK: - Calls and what they may answer

enum HostileCategory: String, CaseIterable, Comparable {
    case rightSignature = "right signature, hostile values"
    case missingArguments = "missing arguments"
    case extraArguments = "extra arguments"
    case wrongTypes = "wrongly typed arguments"
    case propertyGet = "Get/GetAll of declared properties"
    case propertySet = "Set with the right type"
    case propertySetWrongType = "Set with a wrong type"
    case readOnlySet = "Set of a read-only property"
    case unknownProperty = "Get/Set of unknown properties"
    case unknownInterface = "unknown interfaces"
    case unknownMember = "unknown members"
    case noInterface = "calls without an interface"
    case otherPath = "calls on other object paths"
    case deepVariant = "deeply nested variants"
    case uri = "URIs for OpenUri and AddTrack"
    case outOfRange = "out-of-range Rate, Volume, LoopStatus, ids"

    static func < (a: HostileCategory, b: HostileCategory) -> Bool { a.rawValue < b.rawValue }
}

/// What a call may answer. Anything else (NoReply, a timeout, a lost connection, another
/// error name) is a failure.
struct HostileExpectation {
    var successAllowed: Bool
    /// Full error names that are fine.
    var errors: Set<String>
    /// Error names starting with one of these are fine (the player's own error namespace).
    var errorPrefixes: [String] = []
    /// The call must not even be sent: our D-Bus layer refuses to build it (what the bus
    /// would reject, and drop the connection for).
    var sendFailure = false
    /// What a successful reply must hold.
    var reply: ReplyCheck = .anything

    enum ReplyCheck {
        case anything
        /// An introspection document without interfaces (another path than the object's).
        case introspectionWithoutInterfaces
        /// One variant holding a value of this signature (Properties.Get).
        case variant(String)
        /// One `a{sv}` whose entries are exactly these properties with these signatures.
        case properties([String: String])
    }

    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    static let playerErrors = "org.mpris.MediaPlayer2.quaver.Error."

    static func error(_ names: String...) -> HostileExpectation {
        HostileExpectation(successAllowed: false, errors: Set(names))
    }
    static let success = HostileExpectation(successAllowed: true, errors: [])
    /// Success, InvalidArgs or one of the player's errors.
    static let acted = HostileExpectation(successAllowed: true, errors: [invalidArgs], errorPrefixes: [playerErrors])
    static let refusedBeforeSending = HostileExpectation(
        successAllowed: false, errors: [invalidArgs], sendFailure: true)

    /// Why a successful reply does not pass `reply`, or nil.
    func problem(with values: [Value]) -> String? {
        switch reply {
        case .anything:
            return nil
        case .introspectionWithoutInterfaces:
            guard values.count == 1, let xml = values[0].string else {
                return "Introspect answered \(values.map { HostileFormat.describe($0) })"
            }
            guard let parsed = try? HostileIntrospectionParser.parse(xml) else {
                return "Introspect answered XML that does not parse"
            }
            return parsed.interfaces.isEmpty
                ? nil : "another path declares interfaces: \(parsed.interfaces.map(\.name))"
        case .variant(let signature):
            guard values.count == 1, case .variant(let inner) = values[0] else {
                return "Get answered \(values.map { HostileFormat.describe($0) })"
            }
            return inner.type.signature == signature
                ? nil : "Get answered a '\(inner.type.signature)' for a '\(signature)' property"
        case .properties(let declared):
            guard values.count == 1, case .dictionary(.string, .variant, _) = values[0],
                let all = values[0].stringVariantDictionary
            else {
                return "GetAll answered \(values.map { HostileFormat.describe($0) })"
            }
            let types = all.mapValues(\.type.signature)
            return types == declared
                ? nil
                : "GetAll answered types \(types.sorted { $0.key < $1.key }), declared \(declared.sorted { $0.key < $1.key })"
        }
    }

    /// Whether the call was rejected whatever happened (no success allowed).
    var rejects: Bool { !successAllowed }

    func allows(errorName name: String) -> Bool {
        errors.contains(name) || errorPrefixes.contains { name.hasPrefix($0) && name.count > $0.count }
    }
}

struct HostileCall {
    var category: HostileCategory
    var path: String
    var interface: String?
    var member: String
    var arguments: [Value]
    var expectation: HostileExpectation

    /// "interface.member" when this calls a declared method with its declared signature,
    /// "Set interface.property" when it sets a writable property with a value of its type.
    func exercises(_ planner: HostilePlanner) -> String? {
        guard path == HostilePlanner.objectPath, let interface else { return nil }
        let signature = arguments.map(\.type.signature).joined()
        if interface == HostilePlanner.propertiesInterface, member == "Set", arguments.count == 3,
            let name = arguments[0].string, let property = arguments[1].string, case .variant(let value) = arguments[2],
            planner.interface(named: name)?.properties.contains(where: {
                $0.name == property && $0.writable && $0.type.signature == value.type.signature
            }) == true
        {
            return "Set \(name).\(property)"
        }
        guard
            planner.interfaces.first(where: { $0.name == interface })?.methods.contains(where: {
                $0.name == member && $0.signature == signature
            }) == true
        else { return nil }
        return "\(interface).\(member)"
    }

    var label: String {
        "\(path) \(interface ?? "<no interface>").\(member)(\(arguments.map { HostileFormat.describe($0) }.joined(separator: ", ")))"
    }
}

enum HostileOutcome {
    case success([Value])
    case error(String, String)
    case sendFailure(BusError)

    var summary: String {
        switch self {
        case .success: "success"
        case .error(let name, let message): "\(name): \(message.prefix(200))"
        case .sendFailure(let error): "not sent: \(error)"
        }
    }
}

enum HostileFormat {
    /// A short rendering of a value: long strings and arrays are abbreviated.
    static func describe(_ value: Value, budget: Int = 3) -> String {
        switch value {
        case .string(let s): return short(s, quote: "\"")
        case .objectPath(let p): return "o" + short(p.rawValue, quote: "'")
        case .signature(let g): return "g" + short(g.rawValue, quote: "'")
        case .double(let d): return "\(d)"
        case .variant(let inner):
            var depth = 1
            var core = inner
            while case .variant(let next) = core {
                depth += 1
                core = next
            }
            return depth > 3
                ? "v^\(depth)(\(describe(core)))"
                : String(repeating: "v(", count: depth) + describe(core) + String(repeating: ")", count: depth)
        case .array(let type, let items):
            let shown = items.prefix(budget).map { describe($0, budget: 1) }.joined(separator: ", ")
            return "a\(type.signature)[\(shown)\(items.count > budget ? ", … \(items.count) items" : "")]"
        case .dictionary(let key, let valueType, let entries):
            return "a{\(key.signature)\(valueType.signature)}(\(entries.count) entries)"
        case .structure(let fields):
            return "(" + fields.map { describe($0, budget: 1) }.joined(separator: ", ") + ")"
        default:
            return "\(value)"
        }
    }

    static func short(_ s: String, quote: String) -> String {
        let escaped = s.unicodeScalars.prefix(60).map {
            $0.value < 32 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0)
        }.joined()
        let count = s.utf8.count
        return quote + escaped + (s.unicodeScalars.count > 60 ? "…(\(count) bytes)" : "") + quote
    }
}
