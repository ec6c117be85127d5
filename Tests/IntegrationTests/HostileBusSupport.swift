import DBus
import Foundation
import TestKit
#if canImport(FoundationXML)
import FoundationXML
import SeededRandom
#endif

// Support for `HostileBusTests`: the object's interfaces as the live introspection document
// declares them, a seeded generator of hostile values and of calls built from those
// declarations, and what each call may answer.

// MARK: - Declarations from introspection

struct HostileInterface {
    var name: String
    var methods: [HostileMethod] = []
    var properties: [HostileProperty] = []
}

struct HostileMethod {
    var name: String
    var inTypes: [DataType] = []
    var inNames: [String] = []
    var signature: String { inTypes.map(\.signature).joined() }
}

struct HostileProperty {
    var name: String
    var type: DataType
    var writable: Bool
}

/// Reads `<interface>`, `<method>`/`<arg direction="in">` and `<property>` out of an
/// introspection document with Foundation's XMLParser.
final class HostileIntrospectionParser: NSObject, XMLParserDelegate {
    private(set) var interfaces: [HostileInterface] = []
    private(set) var children: [String] = []
    private(set) var problems: [String] = []
    private var depth = 0
    private var currentInterface: HostileInterface?
    private var currentMethod: HostileMethod?

    static func parse(_ xml: String) throws -> (interfaces: [HostileInterface], children: [String]) {
        let delegate = HostileIntrospectionParser()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        guard parser.parse() else {
            throw HarnessError("introspection XML does not parse: \(parser.parserError.map { "\($0)" } ?? "?")")
        }
        guard delegate.problems.isEmpty else { throw HarnessError("introspection XML: \(delegate.problems.joined(separator: "; "))") }
        return (delegate.interfaces, delegate.children)
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes: [String: String] = [:]
    ) {
        depth += 1
        switch elementName {
        case "interface":
            currentInterface = HostileInterface(name: attributes["name"] ?? "")
        case "method":
            currentMethod = HostileMethod(name: attributes["name"] ?? "")
        case "arg" where currentMethod != nil:
            // Method arguments are "in" unless they say otherwise.
            guard (attributes["direction"] ?? "in") == "in" else { return }
            do {
                currentMethod?.inTypes.append(try DataType(parsing: attributes["type"] ?? ""))
                currentMethod?.inNames.append(attributes["name"] ?? "")
            } catch {
                problems.append("method \(currentMethod?.name ?? "?"): \(error)")
            }
        case "property":
            do {
                let type = try DataType(parsing: attributes["type"] ?? "")
                currentInterface?.properties.append(HostileProperty(
                    name: attributes["name"] ?? "", type: type, writable: (attributes["access"] ?? "").contains("write")))
            } catch {
                problems.append("property \(attributes["name"] ?? "?"): \(error)")
            }
        case "node" where depth == 2:
            if let name = attributes["name"] { children.append(name) }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        depth -= 1
        switch elementName {
        case "interface":
            if let currentInterface { interfaces.append(currentInterface) }
            currentInterface = nil
        case "method":
            if let currentMethod { currentInterface?.methods.append(currentMethod) }
            currentMethod = nil
        default:
            break
        }
    }
}

// MARK: - Seeded randomness

/// The suite's generator: seeded, so that a run can be replayed.
typealias HostileRandom = SplitMix

// MARK: - Hostile values

/// The hostile values of each type. `canary` is a path that must never come to exist: it is
/// named in every string that would create it if it reached a shell or a GStreamer pipeline.
struct HostileValues {
    let canary: String
    /// A descriptor the test keeps open, sent wherever an `h` goes.
    let descriptor: Int32
    let trackPrefix: String
    let playlistPrefix: String

    static let mebibyte = String(repeating: "a", count: 1 << 20)
    static let percents = String(repeating: "%", count: 64 << 10)

    let doubles: [Double] = [
        .nan, -.nan, .signalingNaN, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 0, -0.0, 1, -1, 0.5, 2, 4, 0.25,
        1e-300, 1e300, -1e300, 1.000_000_000_1, 9.223_372_036_854_775_807e18, -9.223_372_036_854_775_808e18, 100, 0.01,
    ]
    let int64s: [Int64] = [
        .min, .max, .min + 1, .max - 1, 0, -1, 1, 1_000_000, -1_000_000, 10_000_000, 60_000_000, -60_000_000,
        .max / 2, .min / 2, 1 << 53 + 1, -(1 << 53 + 1), 9_999_999, 5_000_000,
    ]
    let uint64s: [UInt64] = [0, 1, .max, .max - 1, 1 << 63, UInt64(Int64.max)]
    let int32s: [Int32] = [.min, .max, 0, -1, 1, 1 << 30]
    let uint32s: [UInt32] = [0, 1, .max, .max - 1, 1 << 31, 20, 1_000_000]
    let int16s: [Int16] = [.min, .max, 0, -1, 1]
    let uint16s: [UInt16] = [0, 1, .max]
    let bytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF]

    let controlCharacters = String(String.UnicodeScalarView((1...31).compactMap(Unicode.Scalar.init) + [Unicode.Scalar(0x7F)!]))
    /// Pools, computed once.
    private(set) var strings: [String] = []
    private(set) var uris: [String] = []
    private(set) var unsupportedURIs: [String] = []
    private(set) var objectPaths: [String] = []

    init(canary: String, descriptor: Int32, trackPrefix: String, playlistPrefix: String) {
        self.canary = canary
        self.descriptor = descriptor
        self.trackPrefix = trackPrefix
        self.playlistPrefix = playlistPrefix
        unsupportedURIs = makeUnsupportedURIs()
        uris = makeURIs()
        strings = makeStrings()
        objectPaths = makeObjectPaths()
    }

    /// Plain hostile strings (cheap ones; the 1 MiB one is chosen rarely, see `string`).
    private func makeStrings() -> [String] {
        [
            "", " ", "\u{FFFD}", String(repeating: "\u{FFFD}", count: 4096), controlCharacters,
            "\u{1B}[2J\u{1B}[31mred\u{7}\u{8}\u{8}", "\r\nquaver[critical]: forged log line\r\n",
            "\u{202E}evil\u{202C}", "\u{FEFF}", "🎵🎶", "e\u{301}\u{301}\u{301}\u{301}", "\u{10FFFF}\u{E000}",
            "%s%s%s%n%x%p", "{}\\\"'`<>&;|", "None", "Track", "Playlist", "none", "PLAYLIST", "Track ",
            "Alphabetical", "CreationDate", "ModifiedDate", "LastPlayDate", "UserDefined", "User",
            "org.mpris.MediaPlayer2.Player", "org.freedesktop.DBus.Properties", "Volume", "Rate", "Position",
            "../../../../etc/passwd", "/etc/passwd", "~/.bashrc", "\\\\server\\share", "a\u{0}b",
        ] + uris
    }

    /// URIs: unsupported schemes, shell and GStreamer pipeline syntax, and odd file URIs.
    /// None may create `canary`.
    private func makeURIs() -> [String] {
        unsupportedURIs + [
            "file:///nonexistent-quaver-hostile/track.flac",
            "file:///nonexistent-quaver-hostile/\nquaver[critical]: forged log line\n.flac",
            "http://127.0.0.1:1/\r\nquaver[critical]: forged log line",
            "file:///nonexistent-quaver-hostile/a|touch \(canary)|.flac",
            "file:///tmp/x.flac!audiotestsrc ! filesink location=\(canary)",
            "file://\(canary)",
            "file:///$(touch \(canary))",
            "file:///`touch \(canary)`.flac",
            "file:///etc/passwd", "file:///dev/null", "file://localhost/etc/hostname",
            "file:", "file://", "file:relative/path.flac", "FILE:///nonexistent.FLAC",
            "file:///" + Self.percents.prefix(4096), "file:///%00%2F..%2F..%2Fetc%2Fpasswd",
            "http://127.0.0.1:1/a.flac", "https://127.0.0.1:1/a.flac",
            "http://127.0.0.1:1/a ! filesink location=\(canary)",
            "http://127.0.0.1:1/$(touch \(canary)).flac", "http:", "https:",
            "http://[::1:1/", "http://user:pass@127.0.0.1:1/%%%%",
        ]
    }

    /// URIs whose scheme is not in SupportedUriSchemes (or that have none): always InvalidArgs.
    private func makeUnsupportedURIs() -> [String] {
        [
            "ftp://127.0.0.1:1/a.flac", "ftp:", "javascript:alert(1)", "javascript:", "data:audio/flac;base64,ZkxhQwAAACI=",
            "data:,", "smb://127.0.0.1/share/a.flac", "rtsp://127.0.0.1:1/a", "fd://0", "appsrc://", "pipe:///bin/sh",
            "gopher://x", "about:blank", "mailto:a@b", "x-evil://a", "audiotestsrc ! fakesink",
            "audiotestsrc ! filesink location=\(canary)", "audiotestsrc ! filesink location=/tmp/pwned",
            "filesrc location=/etc/passwd ! filesink location=\(canary)",
            "$(touch \(canary))", "`touch \(canary)`", "; touch \(canary)", "| touch \(canary)",
            "/nonexistent-quaver-hostile/track.flac", "nonexistent.flac", "", ":", "://", "file", "http//x",
            "fil\u{0}e:///etc/passwd", "\u{FFFD}:///x", " file:///etc/passwd", "file :///etc/passwd",
        ]
    }

    private func makeObjectPaths() -> [String] {
        let deep = "/" + Array(repeating: "a", count: 2000).joined(separator: "/")
        return [
            "/", "/org", "/org/mpris", "/org/mpris/MediaPlayer2", "/org/mpris/MediaPlayer2/TrackList/NoTrack",
            "/org/mpris/MediaPlayer2/Player", "/org/freedesktop/DBus", deep, "/_", "/\(String(repeating: "x", count: 4000))",
            trackPrefix, "\(trackPrefix)/0", "\(trackPrefix)/1", "\(trackPrefix)/2", "\(trackPrefix)/3", "\(trackPrefix)/4",
            "\(trackPrefix)/18446744073709551615", "\(trackPrefix)/18446744073709551616", "\(trackPrefix)/000001",
            "\(trackPrefix)/1/2", "\(trackPrefix)/1_", "\(trackPrefix)_1", "\(trackPrefix)/99999999999999999999999999",
            playlistPrefix, "\(playlistPrefix)/0", "\(playlistPrefix)/1", "\(playlistPrefix)/18446744073709551615",
            "\(playlistPrefix)/99999999999999999999999999", "\(playlistPrefix)/x",
        ]
    }

    let signatures: [String] =
        ["", "s", "v", "a{sv}", "(oss)", "(b(oss))", "aa{sv}", String(repeating: "a", count: 32) + "i",
         String(repeating: "(", count: 32) + "i" + String(repeating: ")", count: 32), String(repeating: "i", count: 255), "h", "ah"]

    /// A string: mostly from `strings`, rarely 64 KiB of "%" or 1 MiB.
    func string(_ random: inout HostileRandom) -> String {
        if random.chance(0.004) { return Self.mebibyte }
        if random.chance(0.002) { return "file:///" + Self.mebibyte }
        if random.chance(0.01) { return Self.percents }
        return random.pick(strings)
    }

    /// A hostile value of exactly `type`. `depth` is how deep it sits in its argument (0: it
    /// is the argument); it keeps generated containers small.
    func value(of type: DataType, _ random: inout HostileRandom, depth: Int = 0) -> Value {
        switch type {
        case .byte: return .byte(random.pick(bytes))
        case .boolean: return .boolean(random.chance(0.5))
        case .int16: return .int16(random.pick(int16s))
        case .uint16: return .uint16(random.pick(uint16s))
        case .int32: return .int32(random.pick(int32s))
        case .uint32: return .uint32(random.pick(uint32s))
        case .int64: return .int64(random.pick(int64s))
        case .uint64: return .uint64(random.pick(uint64s))
        case .double: return .double(random.pick(doubles))
        case .string: return .string(string(&random))
        case .objectPath: return .objectPath(ObjectPath(random.pick(objectPaths))!)
        case .signature: return .signature(try! Signature(random.pick(signatures)))
        case .unixFD: return .unixFD(descriptor)
        case .variant:
            // Deeply nested only as a whole argument: inside anything else it would nest
            // deeper than a message may (see `HostilePlanner.deepValues` for that).
            if depth == 0 && random.chance(0.05) {
                return Self.nestedVariant(depth: random.int(2..<65), around: .double(.nan))
            }
            let inner = Self.randomType(&random, depth: depth + 1)
            return .variant(value(of: inner, &random, depth: depth + 1))
        case .array(let element):
            let count: Int
            if element == .objectPath && random.chance(0.03) {
                count = random.chance(0.1) ? 20_000 : 2_000  // huge `ao`
            } else {
                count = depth > 2 || random.chance(0.3) ? 0 : random.int(1..<4)
            }
            return .array(element, (0..<count).map { _ in value(of: element, &random, depth: depth + 1) })
        case .dictionary(let key, let valueType):
            let count = depth > 2 || random.chance(0.3) ? 0 : random.int(1..<4)
            return .dictionary(key: key, value: valueType, (0..<count).map { _ in
                Value.DictionaryEntry(value(of: key, &random, depth: depth + 2), value(of: valueType, &random, depth: depth + 2))
            })
        case .structure(let fields):
            return .structure(fields.map { value(of: $0, &random, depth: depth + 1) })
        }
    }

    /// Every hostile value of a basic type (a few random ones of a container type).
    func all(of type: DataType, _ random: inout HostileRandom) -> [Value] {
        switch type {
        case .byte: bytes.map(Value.byte)
        case .boolean: [.boolean(false), .boolean(true)]
        case .int16: int16s.map(Value.int16)
        case .uint16: uint16s.map(Value.uint16)
        case .int32: int32s.map(Value.int32)
        case .uint32: uint32s.map(Value.uint32)
        case .int64: int64s.map(Value.int64)
        case .uint64: uint64s.map(Value.uint64)
        case .double: doubles.map(Value.double)
        case .string: (strings + [Self.mebibyte, Self.percents]).map(Value.string)
        case .objectPath: objectPaths.map { .objectPath(ObjectPath($0)!) }
        case .signature: signatures.map { .signature(try! Signature($0)) }
        default: (0..<8).map { _ in value(of: type, &random) }
        }
    }

    /// `depth` variants, one inside the other, around `core` (depth 1 is `.variant(core)`).
    static func nestedVariant(depth: Int, around core: Value) -> Value {
        var value = core
        for _ in 0..<depth { value = .variant(value) }
        return value
    }

    static let basicTypes: [DataType] = [.byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath, .signature, .unixFD]

    /// A random complete type: mostly basic, sometimes a container, rarely very deep.
    static func randomType(_ random: inout HostileRandom, depth: Int = 0) -> DataType {
        if depth == 0 && random.chance(0.01) {
            // 32 arrays in a row: as deep as a signature may go.
            var type = DataType.int32
            for _ in 0..<32 { type = .array(type) }
            return type
        }
        let roll = random.int(0..<100)
        if depth >= 3 || roll < 65 { return random.pick(basicTypes + [.variant]) }
        if roll < 78 { return .array(randomType(&random, depth: depth + 1)) }
        if roll < 88 { return .dictionary(key: random.pick(basicTypes), value: randomType(&random, depth: depth + 1)) }
        return .structure((0..<random.int(1..<4)).map { _ in randomType(&random, depth: depth + 1) })
    }

    /// A random type whose signature differs from `type`'s.
    static func differentType(from type: DataType, _ random: inout HostileRandom) -> DataType {
        while true {
            let candidate = randomType(&random)
            if candidate.signature != type.signature { return candidate }
        }
    }
}

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

    static func error(_ names: String...) -> HostileExpectation { HostileExpectation(successAllowed: false, errors: Set(names)) }
    static let success = HostileExpectation(successAllowed: true, errors: [])
    /// Success, InvalidArgs or one of the player's errors.
    static let acted = HostileExpectation(successAllowed: true, errors: [invalidArgs], errorPrefixes: [playerErrors])
    static let refusedBeforeSending = HostileExpectation(successAllowed: false, errors: [invalidArgs], sendFailure: true)

    /// Why a successful reply does not pass `reply`, or nil.
    func problem(with values: [Value]) -> String? {
        switch reply {
        case .anything:
            return nil
        case .introspectionWithoutInterfaces:
            guard values.count == 1, let xml = values[0].string else { return "Introspect answered \(values.map { HostileFormat.describe($0) })" }
            guard let parsed = try? HostileIntrospectionParser.parse(xml) else { return "Introspect answered XML that does not parse" }
            return parsed.interfaces.isEmpty ? nil : "another path declares interfaces: \(parsed.interfaces.map(\.name))"
        case .variant(let signature):
            guard values.count == 1, case .variant(let inner) = values[0] else { return "Get answered \(values.map { HostileFormat.describe($0) })" }
            return inner.type.signature == signature ? nil : "Get answered a '\(inner.type.signature)' for a '\(signature)' property"
        case .properties(let declared):
            guard values.count == 1, case .dictionary(.string, .variant, _) = values[0], let all = values[0].stringVariantDictionary else {
                return "GetAll answered \(values.map { HostileFormat.describe($0) })"
            }
            let types = all.mapValues(\.type.signature)
            return types == declared ? nil : "GetAll answered types \(types.sorted { $0.key < $1.key }), declared \(declared.sorted { $0.key < $1.key })"
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
            planner.interface(named: name)?.properties.contains(where: { $0.name == property && $0.writable && $0.type.signature == value.type.signature }) == true
        {
            return "Set \(name).\(property)"
        }
        guard planner.interfaces.first(where: { $0.name == interface })?.methods.contains(where: { $0.name == member && $0.signature == signature }) == true else { return nil }
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
            var depth = 1, core = inner
            while case .variant(let next) = core { depth += 1; core = next }
            return depth > 3 ? "v^\(depth)(\(describe(core)))" : String(repeating: "v(", count: depth) + describe(core) + String(repeating: ")", count: depth)
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
        let escaped = s.unicodeScalars.prefix(60).map { $0.value < 32 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
        let count = s.utf8.count
        return quote + escaped + (s.unicodeScalars.count > 60 ? "…(\(count) bytes)" : "") + quote
    }
}

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

    init(interfaces: [HostileInterface], values: HostileValues, supportedSchemes: [String], rates: ClosedRange<Double>, orderings: [String]) {
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

    static let specificationOrderings: Set<String> = ["Alphabetical", "CreationDate", "ModifiedDate", "LastPlayDate", "UserDefined"]

    static let unknownInterfaceNames = [
        "org.mpris.MediaPlayer2.Nope", "org.mpris.MediaPlayer2.player", "org.mpris.MediaPlayer2.Player.Extra",
        "com.example.Evil", "a.b", "org.freedesktop.DBus.Properties2", "org.mpris.MediaPlayer2.quaver",
        "x." + String(repeating: "y", count: 250),
    ]
    static let unknownMemberNames = ["NoSuchMethod", "play", "PLAY", "Get_", "Quit2", "_", "A" + String(repeating: "b", count: 254), "Introspect2", "Ping_"]
    static let unknownPropertyNames = ["NoSuchProperty", "volume", "VOLUME", "Volume ", "", "Position\u{0}", "\u{FFFD}", String(repeating: "P", count: 4096)]

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
            if member == "AddTrack", path(1) != "/org/mpris/MediaPlayer2/TrackList/NoTrack", !isID(path(1), under: values.trackPrefix) {
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
                expectation.reply = .properties(Dictionary(uniqueKeysWithValues: declared.properties.map { ($0.name, $0.type.signature) }))
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
            guard arguments.count > 2, case .variant(let value) = arguments[2], value.type.signature == property.type.signature else {
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
            return ["None", "Track", "Playlist"].contains(value.string ?? "") ? .acted : .error(HostileExpectation.invalidArgs)
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

    // MARK: Single calls

    func call(_ category: HostileCategory, interface: String?, member: String, _ arguments: [Value], path: String = objectPath, expect: HostileExpectation) -> HostileCall {
        HostileCall(category: category, path: path, interface: interface, member: member, arguments: arguments, expectation: expect)
    }

    /// A property-interface call: Get, GetAll or Set, aimed at real names most of the time.
    func propertiesCall(_ member: String, _ random: inout HostileRandom) -> HostileCall {
        let target = random.chance(0.8) ? random.pick(objectInterfaces) : nil
        let interfaceName = target?.name ?? (random.chance(0.5) ? random.pick(Self.unknownInterfaceNames) : values.string(&random))
        var arguments: [Value] = [.string(interfaceName)]
        var category = HostileCategory.propertyGet
        if member != "GetAll" {
            let property = target.flatMap { $0.properties.isEmpty || random.chance(0.1) ? nil : random.pick($0.properties) }
            arguments.append(.string(property?.name ?? (random.chance(0.5) ? random.pick(Self.unknownPropertyNames) : values.string(&random))))
            if property == nil { category = .unknownProperty }
            if member == "Set" {
                let type = property.map { random.chance(0.7) ? $0.type : HostileValues.differentType(from: $0.type, &random) } ?? HostileValues.randomType(&random)
                arguments.append(.variant(values.value(of: type, &random, depth: 1)))
                if let property {
                    category = !property.writable ? .readOnlySet : type == property.type ? .propertySet : .propertySetWrongType
                }
            }
        } else if target == nil {
            category = .unknownInterface
        }
        return call(category, interface: Self.propertiesInterface, member: member, arguments,
                    expect: propertiesExpectation(member: member, arguments: arguments))
    }

    /// A declared method with values of its declared types.
    func rightSignatureCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom) -> HostileCall? {
        if interface.name == Self.propertiesInterface { return propertiesCall(method.name, &random) }
        let arguments = method.inTypes.map { values.value(of: $0, &random) }
        guard !Self.endsTheDaemon(interface: interface.name, member: method.name, arguments: arguments) else { return nil }
        let category: HostileCategory = method.inNames.contains("Uri") ? .uri : .rightSignature
        return call(category, interface: interface.name, member: method.name, arguments,
                    expect: expectation(interface: interface.name, member: method.name, arguments: arguments))
    }

    func missingArgumentsCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom) -> HostileCall? {
        guard !method.inTypes.isEmpty else { return nil }
        var arguments = method.inTypes.map { values.value(of: $0, &random) }
        let drop = random.int(1..<(arguments.count + 1))
        for _ in 0..<drop { arguments.remove(at: random.int(0..<arguments.count)) }
        return call(.missingArguments, interface: interface.name, member: method.name, arguments, expect: wrongSignatureExpectation(interface: interface.name))
    }

    func extraArgumentsCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom) -> HostileCall {
        var arguments = method.inTypes.map { values.value(of: $0, &random) }
        for _ in 0..<random.int(1..<4) { arguments.append(values.value(of: HostileValues.randomType(&random), &random, depth: 1)) }
        return call(.extraArguments, interface: interface.name, member: method.name, arguments, expect: wrongSignatureExpectation(interface: interface.name))
    }

    func wrongTypesCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom) -> HostileCall {
        guard !method.inTypes.isEmpty else { return extraArgumentsCall(interface, method, &random) }
        let replaced = random.int(0..<method.inTypes.count)
        let arguments = method.inTypes.enumerated().map { index, type in
            index == replaced || random.chance(0.3)
                ? values.value(of: HostileValues.differentType(from: type, &random), &random, depth: 1)
                : values.value(of: type, &random)
        }
        return call(.wrongTypes, interface: interface.name, member: method.name, arguments, expect: wrongSignatureExpectation(interface: interface.name))
    }

    func unknownInterfaceCall(_ random: inout HostileRandom) -> HostileCall {
        let member = random.chance(0.7) ? random.pick(allMethods).method.name : random.pick(Self.unknownMemberNames)
        let arguments = (0..<random.int(0..<3)).map { _ in values.value(of: HostileValues.randomType(&random), &random, depth: 1) }
        return call(.unknownInterface, interface: random.pick(Self.unknownInterfaceNames), member: member, arguments,
                    expect: .error(HostileExpectation.unknownInterface))
    }

    func unknownMemberCall(_ random: inout HostileRandom) -> HostileCall {
        let interface = random.pick(interfaces)
        let declared = Set(interface.methods.map(\.name))
        let member = random.pick(Self.unknownMemberNames.filter { !declared.contains($0) })
        let arguments = (0..<random.int(0..<3)).map { _ in values.value(of: HostileValues.randomType(&random), &random, depth: 1) }
        return call(.unknownMember, interface: interface.name, member: member, arguments, expect: .error(HostileExpectation.unknownMethod))
    }

    /// No interface field: the object picks the first interface with the member.
    func noInterfaceCall(_ random: inout HostileRandom) -> HostileCall? {
        let arguments: [Value]
        let member: String
        if random.chance(0.8) {
            let (_, method) = random.pick(allMethods)
            member = method.name
            arguments = random.chance(0.6)
                ? method.inTypes.map { values.value(of: $0, &random) }
                : (0..<random.int(0..<3)).map { _ in values.value(of: HostileValues.randomType(&random), &random, depth: 1) }
        } else {
            member = random.pick(Self.unknownMemberNames)
            arguments = []
        }
        guard !Self.endsTheDaemon(interface: nil, member: member, arguments: arguments) else { return nil }
        var expectation = HostileExpectation.acted
        expectation.errors.formUnion([HostileExpectation.unknownMethod, HostileExpectation.notSupported])
        return call(.noInterface, interface: nil, member: member, arguments, expect: expectation)
    }


    func otherPathCall(_ random: inout HostileRandom) -> HostileCall {
        let path = random.pick(otherPaths)
        let (interface, method) = random.pick(allMethods)
        let useInterface = random.chance(0.9)
        let arguments = random.chance(0.7)
            ? method.inTypes.map { values.value(of: $0, &random) }
            : (0..<random.int(0..<3)).map { _ in values.value(of: HostileValues.randomType(&random), &random, depth: 1) }
        let expectation: HostileExpectation
        if useInterface && interface.name == Self.peerInterface {
            expectation = .success  // libdbus answers Peer on every path
        } else if method.name == "Introspect" && (interface.name == Self.introspectableInterface || !useInterface) {
            // libdbus (or, for the ancestors, our connection) answers with a node that lists
            // the children and declares nothing, whatever the arguments.
            expectation = HostileExpectation(successAllowed: true, errors: [HostileExpectation.unknownMethod], reply: .introspectionWithoutInterfaces)
        } else {
            expectation = .error(HostileExpectation.unknownMethod, HostileExpectation.unknownObject)
        }
        return call(.otherPath, interface: useInterface ? interface.name : nil, member: method.name, arguments, path: path, expect: expectation)
    }

    /// Values nested as deep as a message may go, and one level deeper (refused before
    /// sending: the bus would drop a connection that sent it).
    static let deepValues: [(value: Value, tooDeep: Bool)] = {
        func array(_ n: Int) -> Value {
            var value = Value.array(.int32, [.int32(1)])
            for _ in 1..<n { value = .array(value.type, [value]) }
            return value
        }
        func structure(_ n: Int) -> Value {
            var value = Value.int32(1)
            for _ in 0..<n { value = .structure([value]) }
            return value
        }
        let dictionary = Value.dictionary(key: .string, value: .variant, [.init(.string("k"), .variant(.string("v")))])
        return [
            (HostileValues.nestedVariant(depth: 64, around: .string("deep")), false),
            (HostileValues.nestedVariant(depth: 65, around: .string("too deep")), true),
            (HostileValues.nestedVariant(depth: 64, around: .double(.nan)), false),
            (HostileValues.nestedVariant(depth: 33, around: array(32)), false),
            (HostileValues.nestedVariant(depth: 34, around: array(32)), true),
            (HostileValues.nestedVariant(depth: 32, around: structure(32)), false),
            (HostileValues.nestedVariant(depth: 33, around: structure(32)), true),
            (HostileValues.nestedVariant(depth: 61, around: dictionary), false),
            (HostileValues.nestedVariant(depth: 62, around: dictionary), true),
            (HostileValues.nestedVariant(depth: 1, around: array(32)), false),
        ]
    }()

    /// A deep value where a method or Set expects something else.
    func deepVariantCall(_ random: inout HostileRandom) -> HostileCall {
        let (value, tooDeep) = random.pick(Self.deepValues)
        let choice = random.int(0..<3)
        let readOnly = allProperties.first { !$0.property.writable }
        let writable = allProperties.first { $0.property.writable && $0.property.type != .variant }
        var result: HostileCall
        if choice == 0, let writable {
            result = call(.deepVariant, interface: Self.propertiesInterface, member: "Set",
                          [.string(writable.interface.name), .string(writable.property.name), value], expect: .error(HostileExpectation.invalidArgs))
        } else if choice == 1, let readOnly {
            result = call(.deepVariant, interface: Self.propertiesInterface, member: "Set",
                          [.string(readOnly.interface.name), .string(readOnly.property.name), value],
                          expect: .error(HostileExpectation.propertyReadOnly, HostileExpectation.invalidArgs))
        } else {
            let (interface, method) = random.pick(allMethods.filter { !$0.method.inTypes.contains(.variant) && $0.interface.name != Self.peerInterface })
            result = call(.deepVariant, interface: interface.name, member: method.name, [value], expect: .error(HostileExpectation.invalidArgs))
        }
        if tooDeep { result.expectation = .refusedBeforeSending }
        return result
    }

    // MARK: Batches

    /// Every method with its declared signature several times, and with wrong ones; every
    /// writable property set to every hostile value of its type; every property read and
    /// every interface's GetAll; every hostile URI for every method taking one.
    func coverageCalls(_ random: inout HostileRandom, perMethod: Int = 12) -> [HostileCall] {
        var calls: [HostileCall] = []
        for (interface, method) in allMethods {
            for _ in 0..<perMethod {
                if let made = rightSignatureCall(interface, method, &random) { calls.append(made) }
            }
            if let missing = missingArgumentsCall(interface, method, &random) { calls.append(missing) }
            calls.append(extraArgumentsCall(interface, method, &random))
            calls.append(wrongTypesCall(interface, method, &random))
        }
        for (interface, property) in allProperties {
            let get: [Value] = [.string(interface.name), .string(property.name)]
            calls.append(call(.propertyGet, interface: Self.propertiesInterface, member: "Get", get, expect: propertiesExpectation(member: "Get", arguments: get)))
            guard property.writable else { continue }
            for value in values.all(of: property.type, &random) {
                let arguments = get + [.variant(value)]
                calls.append(call(.propertySet, interface: Self.propertiesInterface, member: "Set", arguments, expect: propertiesExpectation(member: "Set", arguments: arguments)))
            }
        }
        for interface in interfaces {
            calls.append(call(.propertyGet, interface: Self.propertiesInterface, member: "GetAll", [.string(interface.name)],
                              expect: propertiesExpectation(member: "GetAll", arguments: [.string(interface.name)])))
        }
        for target in uriMethods {
            for uri in values.uris + [HostileValues.mebibyte, "file:///" + HostileValues.mebibyte, HostileValues.percents] {
                calls.append(uriCall(target, uri: uri, &random))
            }
        }
        return calls
    }

    /// One random call of any category.
    func randomCall(_ random: inout HostileRandom) -> HostileCall {
        while true {
            let roll = random.int(0..<100)
            let (interface, method) = random.pick(allMethods)
            let made: HostileCall?
            switch roll {
            case 0..<25: made = rightSignatureCall(interface, method, &random)
            case 25..<40: made = propertiesCall(random.pick(["Get", "Set", "Set", "GetAll"]), &random)
            case 40..<46: made = missingArgumentsCall(interface, method, &random)
            case 46..<52: made = extraArgumentsCall(interface, method, &random)
            case 52..<62: made = wrongTypesCall(interface, method, &random)
            case 62..<66: made = unknownInterfaceCall(&random)
            case 66..<70: made = unknownMemberCall(&random)
            case 70..<75: made = noInterfaceCall(&random)
            case 75..<80: made = otherPathCall(&random)
            case 80..<82: made = deepVariantCall(&random)
            case 82..<90:
                made = uriMethods.isEmpty ? nil : uriCall(random.pick(uriMethods), uri: values.string(&random), &random)
            default: made = outOfRange.isEmpty ? nil : random.pick(outOfRange)
            }
            if let made { return made }
        }
    }

    func uriCall(_ target: (interface: HostileInterface, method: HostileMethod), uri: String, _ random: inout HostileRandom) -> HostileCall {
        let arguments = zip(target.method.inTypes, target.method.inNames).map { type, name in
            name == "Uri" ? .string(uri) : values.value(of: type, &random)
        }
        return call(.uri, interface: target.interface.name, member: target.method.name, arguments,
                    expect: expectation(interface: target.interface.name, member: target.method.name, arguments: arguments))
    }

    /// Calls the player must refuse for their values (all errors): out-of-range rates and
    /// volumes, bad loop statuses, paths that are not ids, unknown orderings, unsupported URIs.
    func outOfRangeCalls() -> [HostileCall] {
        var calls: [HostileCall] = []
        func set(_ property: String, _ value: Value) {
            guard let interface = objectInterfaces.first(where: { $0.properties.contains { $0.name == property && $0.writable } }) else { return }
            let arguments: [Value] = [.string(interface.name), .string(property), .variant(value)]
            calls.append(call(.outOfRange, interface: Self.propertiesInterface, member: "Set", arguments,
                              expect: propertiesExpectation(member: "Set", arguments: arguments)))
        }
        for rate in [Double.nan, -.nan, .infinity, -.infinity, -1, -.greatestFiniteMagnitude, .greatestFiniteMagnitude,
                     rates.upperBound * 2 + 1, rates.upperBound.nextUp, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 1e300]
        where rate.isNaN || !(rate == 0 || rates.contains(rate)) {
            set("Rate", .double(rate))
        }
        for volume in [Double.nan, -.nan, .signalingNaN, .infinity, -.infinity] { set("Volume", .double(volume)) }
        for status in ["", "none", "NONE", "Track ", "Loop", "Playlist\u{0}", HostileValues.mebibyte, HostileValues.percents, values.controlCharacters] {
            set("LoopStatus", .string(status))
        }
        func method(_ interface: String, _ member: String, _ arguments: [Value]) {
            guard let declared = self.interface(named: interface)?.methods.first(where: { $0.name == member }),
                declared.signature == arguments.map(\.type.signature).joined()
            else { return }
            calls.append(call(.outOfRange, interface: interface, member: member, arguments,
                              expect: expectation(interface: interface, member: member, arguments: arguments)))
        }
        let badPaths = values.objectPaths.filter { !isID($0, under: values.trackPrefix) }
        for path in badPaths {
            method("org.mpris.MediaPlayer2.TrackList", "GoTo", [.objectPath(ObjectPath(path)!)])
            method("org.mpris.MediaPlayer2.TrackList", "RemoveTrack", [.objectPath(ObjectPath(path)!)])
        }
        for path in values.objectPaths where !isID(path, under: values.playlistPrefix) {
            method("org.mpris.MediaPlayer2.Playlists", "ActivatePlaylist", [.objectPath(ObjectPath(path)!)])
        }
        for order in ["", "alphabetical", "Nope", "creationdate", HostileValues.percents, HostileValues.mebibyte] where !orderings.contains(order) {
            method("org.mpris.MediaPlayer2.Playlists", "GetPlaylists", [.uint32(0), .uint32(.max), .string(order), .boolean(true)])
        }
        for uri in values.unsupportedURIs + [HostileValues.mebibyte, HostileValues.percents] {
            method("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(uri)])
            method("org.mpris.MediaPlayer2.TrackList", "AddTrack", [.string(uri), .objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!), .boolean(true)])
        }
        // Supported schemes, but the after-track is not an id.
        for uri in ["file:///nonexistent-quaver-hostile/a.flac", "http://127.0.0.1:1/a.flac", "file:///" + HostileValues.mebibyte] {
            method("org.mpris.MediaPlayer2.TrackList", "AddTrack", [.string(uri), .objectPath(ObjectPath("/")!), .boolean(true)])
        }
        return calls
    }

    /// Every call expected to be refused, for the state check: wrong signatures of every
    /// method, wrong types and read-only Sets of every property, unknown names, other paths,
    /// out-of-range values and too-deep values.
    func rejectedBatch(_ random: inout HostileRandom) -> [HostileCall] {
        var calls: [HostileCall] = []
        for (interface, method) in allMethods where interface.name != Self.peerInterface {
            if let missing = missingArgumentsCall(interface, method, &random) { calls.append(missing) }
            if !method.inTypes.isEmpty {
                calls.append(call(.missingArguments, interface: interface.name, member: method.name, [], expect: .error(HostileExpectation.invalidArgs)))
            }
            for _ in 0..<3 { calls.append(extraArgumentsCall(interface, method, &random)) }
            for _ in 0..<4 { calls.append(wrongTypesCall(interface, method, &random)) }
        }
        for (interface, property) in allProperties {
            let base: [Value] = [.string(interface.name), .string(property.name)]
            if property.writable {
                for _ in 0..<4 {
                    let arguments = base + [.variant(values.value(of: HostileValues.differentType(from: property.type, &random), &random, depth: 1))]
                    calls.append(call(.propertySetWrongType, interface: Self.propertiesInterface, member: "Set", arguments, expect: .error(HostileExpectation.invalidArgs)))
                }
                let wrapped = base + [.variant(.variant(values.value(of: property.type, &random, depth: 1)))]
                calls.append(call(.propertySetWrongType, interface: Self.propertiesInterface, member: "Set", wrapped, expect: .error(HostileExpectation.invalidArgs)))
            } else {
                let arguments = base + [.variant(values.value(of: property.type, &random, depth: 1))]
                calls.append(call(.readOnlySet, interface: Self.propertiesInterface, member: "Set", arguments, expect: .error(HostileExpectation.propertyReadOnly)))
                let wrongType = base + [.variant(values.value(of: HostileValues.differentType(from: property.type, &random), &random, depth: 1))]
                calls.append(call(.readOnlySet, interface: Self.propertiesInterface, member: "Set", wrongType,
                                  expect: .error(HostileExpectation.propertyReadOnly, HostileExpectation.invalidArgs)))
            }
        }
        for interface in objectInterfaces {
            for name in Self.unknownPropertyNames where !interface.properties.contains(where: { $0.name == name }) {
                calls.append(call(.unknownProperty, interface: Self.propertiesInterface, member: "Get", [.string(interface.name), .string(name)],
                                  expect: .error(HostileExpectation.unknownProperty)))
                calls.append(call(.unknownProperty, interface: Self.propertiesInterface, member: "Set", [.string(interface.name), .string(name), .variant(.double(1))],
                                  expect: .error(HostileExpectation.unknownProperty)))
            }
        }
        for name in Self.unknownInterfaceNames + ["", HostileValues.mebibyte] {
            calls.append(call(.unknownProperty, interface: Self.propertiesInterface, member: "Get", [.string(name), .string("Volume")], expect: .error(HostileExpectation.unknownInterface)))
            calls.append(call(.unknownProperty, interface: Self.propertiesInterface, member: "Set", [.string(name), .string("Volume"), .variant(.double(0))], expect: .error(HostileExpectation.unknownInterface)))
            calls.append(call(.unknownInterface, interface: Self.propertiesInterface, member: "GetAll", [.string(name)], expect: .error(HostileExpectation.unknownInterface)))
        }
        for _ in 0..<40 { calls.append(unknownInterfaceCall(&random)) }
        for _ in 0..<40 { calls.append(unknownMemberCall(&random)) }
        for _ in 0..<40 {
            let other = otherPathCall(&random)
            if other.expectation.rejects { calls.append(other) }
        }
        for _ in 0..<30 { calls.append(deepVariantCall(&random)) }
        calls += outOfRange
        return calls
    }
}

// MARK: - Running calls

/// Sends calls with several in flight and records every outcome.
@MainActor
final class HostileRunner {
    let connection: Connection
    let destination: String
    let timeout: Duration
    private(set) var outcomes: [HostileOutcome?] = []
    /// `verdict(call, outcome)` of each call of the last run.
    private(set) var verdicts: [String?] = []

    init(connection: Connection, destination: String, timeout: Duration = .seconds(20)) {
        self.connection = connection
        self.destination = destination
        self.timeout = timeout
    }

    /// The slowest calls of the last run: (duration, index).
    private(set) var slowest: [(duration: Duration, index: Int)] = []

    func perform(_ call: HostileCall) async -> HostileOutcome {
        let message: Message
        do {
            message = try Message.methodCall(
                destination: destination, path: try ObjectPath(validating: call.path), interface: call.interface,
                member: call.member, arguments: call.arguments)
        } catch {
            return .sendFailure(error)
        }
        do {
            return .success(try await connection.call(message, timeout: timeout))
        } catch {
            return .error(error.name.rawValue, error.message)
        }
    }

    /// Runs every call, `inFlight` at a time, and returns the outcomes in call order, each
    /// with its verdict (nil: as expected). Good replies come without their values.
    func run(_ calls: [HostileCall], inFlight: Int) async -> [(outcome: HostileOutcome, verdict: String?)] {
        outcomes = Array(repeating: nil, count: calls.count)
        verdicts = Array(repeating: nil, count: calls.count)
        pending = calls
        cursor = 0
        slowest = []
        timePerCategory = [:]
        let workers = (0..<inFlight).map { _ in
            Task { @MainActor in
                while let index = self.take() {
                    let started = ContinuousClock.now
                    var outcome = await self.perform(self.pending[index])
                    let verdict = Self.verdict(self.pending[index], outcome)
                    // Keep a good reply's values only as long as they are checked (long runs).
                    if case .success = outcome, verdict == nil { outcome = .success([]) }
                    self.outcomes[index] = outcome
                    self.verdicts[index] = verdict
                    self.note(ContinuousClock.now - started, index)
                }
            }
        }
        for worker in workers { await worker.value }
        pending = []
        return zip(outcomes, verdicts).map { outcome, verdict in
            outcome.map { ($0, verdict) } ?? (.sendFailure(BusError(.failed, "never run")), "never run")
        }
    }

    /// Time spent waiting for answers, per category, in the last run.
    private(set) var timePerCategory: [HostileCategory: Duration] = [:]

    private func note(_ duration: Duration, _ index: Int) {
        timePerCategory[pending[index].category, default: .zero] += duration
        guard slowest.count < 10 || duration > slowest[slowest.count - 1].duration else { return }
        slowest.append((duration, index))
        slowest.sort { $0.duration > $1.duration }
        if slowest.count > 10 { slowest.removeLast() }
    }

    private var pending: [HostileCall] = []
    private var cursor = 0

    private func take() -> Int? {
        guard cursor < pending.count else { return nil }
        defer { cursor += 1 }
        return cursor
    }

    /// Why `outcome` is not what `call` may answer, or nil when it is.
    nonisolated static func verdict(_ call: HostileCall, _ outcome: HostileOutcome) -> String? {
        let expectation = call.expectation
        switch outcome {
        case .sendFailure(let error):
            if expectation.sendFailure && error.name == .invalidArgs { return nil }
            return "could not be sent: \(error)"
        case .success(let values):
            if expectation.sendFailure { return "was sent and answered, but must be refused before sending" }
            guard expectation.successAllowed else { return "succeeded; expected \(expectation.errors.sorted().joined(separator: " or "))" }
            return expectation.problem(with: values)
        case .error(let name, let message):
            if expectation.sendFailure { return "was sent (answered \(name)), but must be refused before sending" }
            if name == BusError.Name.noReply.rawValue { return "got NoReply (\(message.prefix(200)))" }
            if expectation.allows(errorName: name) { return nil }
            let allowed = (expectation.successAllowed ? ["success"] : []) + expectation.errors.sorted() + expectation.errorPrefixes.map { $0 + "*" }
            return "answered \(name): \(message.prefix(300)); expected \(allowed.joined(separator: " or "))"
        }
    }
}

/// Counts of outcomes per category and per answer, for the summary.
struct HostileTally {
    var calls = 0
    var perCategory: [HostileCategory: Int] = [:]
    var perAnswer: [String: Int] = [:]
    var failures: [(index: Int, call: HostileCall, why: String)] = []

    mutating func add(_ call: HostileCall, _ result: (outcome: HostileOutcome, verdict: String?), index: Int) {
        let outcome = result.outcome
        calls += 1
        perCategory[call.category, default: 0] += 1
        switch outcome {
        case .success: perAnswer["success", default: 0] += 1
        case .error(let name, _): perAnswer[name.replacingOccurrences(of: "org.freedesktop.DBus.Error.", with: ""), default: 0] += 1
        case .sendFailure: perAnswer["refused before sending", default: 0] += 1
        }
        if let why = result.verdict { failures.append((index, call, why)) }
    }

    var summary: String {
        let answers = perAnswer.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let categories = perCategory.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
        return "\(calls) calls; answers: \(answers); categories: \(categories)"
    }
}
