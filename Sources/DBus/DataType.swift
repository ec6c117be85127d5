/// One complete D-Bus type, parsed from a type signature.
public indirect enum DataType: Hashable, Sendable, CustomStringConvertible {
    /// An unsigned 8-bit integer (`y`).
    case byte
    /// A boolean (`b`).
    case boolean
    /// A signed 16-bit integer (`n`).
    case int16
    /// An unsigned 16-bit integer (`q`).
    case uint16
    /// A signed 32-bit integer (`i`).
    case int32
    /// An unsigned 32-bit integer (`u`).
    case uint32
    /// A signed 64-bit integer (`x`).
    case int64
    /// An unsigned 64-bit integer (`t`).
    case uint64
    /// An IEEE 754 double-precision number (`d`).
    case double
    /// A UTF-8 string (`s`).
    case string
    /// An object path (`o`).
    case objectPath
    /// A type signature (`g`).
    case signature
    /// A Unix file descriptor (`h`).
    case unixFD
    /// A variant, which holds one value of any type together with its signature (`v`).
    case variant
    /// An array of elements of one type (`a` and the element type).
    case array(DataType)
    /// A dictionary from a basic key type to a value type (`a{`, key, value, `}`).
    case dictionary(key: DataType, value: DataType)
    /// A struct of one or more fields, in order (`(` and `)` around the field types).
    case structure([DataType])

    /// The D-Bus signature of this type, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The D-Bus signature of this type, as ``DataType/signature-property`` gives it.
    public var description: String { signature }

    /// Whether this is one of the basic (non-container) types, which alone may be dictionary keys.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// Whether values of this type have a fixed size (every basic type except strings, object
    /// paths and signatures), as `dbus_type_is_fixed` says.
    var isFixed: Bool {
        switch self {
        case .string, .objectPath, .signature: false
        default: isBasic
        }
    }

    /// Parses exactly one complete type; throws when `signature` is not exactly one valid type.
    public init(parsing signature: String) throws(BusError) {
        let types = try Signature.parse(signature)
        guard types.count == 1 else {
            throw BusError(.invalidArgs, "'\(signature)' is not a single complete type")
        }
        self = types[0]
    }

    /// Throws unless this type is a valid complete type on its own: the rules libdbus
    /// applies to a contained signature (a struct has fields, a key is basic, nesting and
    /// length are within the limits). libdbus aborts the process when it meets one that is not.
    func validate() throws(BusError) {
        _ = try Signature.parse(signature)
    }
}

/// A D-Bus type signature: zero or more complete types, validated on creation.
public struct Signature: Hashable, Sendable, CustomStringConvertible {
    /// The signature as text, such as `sa{sv}as`.
    public let rawValue: String
    /// The complete types the signature consists of, in order.
    public let types: [DataType]

    /// Parses and validates `rawValue`; throws InvalidArgs when it is not a valid signature.
    public init(_ rawValue: String) throws(BusError) {
        self.types = try Signature.parse(rawValue)
        self.rawValue = rawValue
    }

    /// The signature of `types`; throws when they do not make a valid signature (an empty
    /// struct, a dictionary key that is not basic, too deep or too long).
    public init(types: [DataType]) throws(BusError) {
        try self.init(types.map(\.signature).joined())
    }

    /// The signature as text.
    public var description: String { rawValue }

    static let maximumLength = 255
    /// `DBUS_MAXIMUM_TYPE_RECURSION_DEPTH`: the limit for structs, for dict entries, and for
    /// arrays, each counted on its own.
    static let maximumContainerDepth = 32

    static func parse(_ text: String) throws(BusError) -> [DataType] {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumLength else {
            throw BusError(.invalidArgs, "signature longer than \(maximumLength) bytes")
        }
        var parser = Parser(bytes: bytes)
        var types: [DataType] = []
        while !parser.atEnd {
            types.append(try parser.parseType(Nesting()))
        }
        return types
    }

    /// Nesting counted the way `dbus_signature_validate` counts it: open structs and open
    /// dict entries separately, and arrays only as a run of consecutive `a` codes (libdbus
    /// starts that count again at every other type code, so `a(a(ai))` is one array deep).
    private struct Nesting {
        var arrayRun = 0
        var structs = 0
        var dictEntries = 0

        /// The nesting inside a struct or dict entry: the array run ends at its bracket.
        func entering(structs addedStructs: Int = 0, dictEntries addedDictEntries: Int = 0) -> Nesting {
            Nesting(arrayRun: 0, structs: structs + addedStructs, dictEntries: dictEntries + addedDictEntries)
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var atEnd: Bool { index >= bytes.count }

        func fail(_ why: String) -> BusError {
            BusError(.invalidArgs, "invalid signature '\(String(decoding: bytes, as: UTF8.self))': \(why)")
        }

        /// Parses one complete type; `nesting` is what encloses it.
        mutating func parseType(_ nesting: Nesting) throws(BusError) -> DataType {
            guard index < bytes.count else { throw fail("ends inside a type") }
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "b"): return .boolean
            case UInt8(ascii: "n"): return .int16
            case UInt8(ascii: "q"): return .uint16
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "o"): return .objectPath
            case UInt8(ascii: "g"): return .signature
            case UInt8(ascii: "h"): return .unixFD
            case UInt8(ascii: "v"): return .variant
            case UInt8(ascii: "a"):
                guard nesting.arrayRun < Signature.maximumContainerDepth else {
                    throw fail("more than \(Signature.maximumContainerDepth) arrays in a row")
                }
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    index += 1
                    guard nesting.dictEntries < Signature.maximumContainerDepth else {
                        throw fail("dictionaries nested too deeply")
                    }
                    let inner = nesting.entering(dictEntries: 1)
                    let key = try parseType(inner)
                    guard key.isBasic else { throw fail("dictionary key must be a basic type") }
                    guard index < bytes.count, bytes[index] != UInt8(ascii: "}") else {
                        throw fail("dictionary entry must hold exactly two types")
                    }
                    let value = try parseType(inner)
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                        throw fail("dictionary entry must hold exactly two types")
                    }
                    index += 1
                    return .dictionary(key: key, value: value)
                }
                var element = nesting
                element.arrayRun += 1
                return .array(try parseType(element))
            case UInt8(ascii: "("):
                guard nesting.structs < Signature.maximumContainerDepth else { throw fail("structs nested too deeply") }
                let inner = nesting.entering(structs: 1)
                var fields: [DataType] = []
                while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                    fields.append(try parseType(inner))
                }
                guard index < bytes.count else { throw fail("unclosed struct") }
                index += 1
                guard !fields.isEmpty else { throw fail("empty struct") }
                return .structure(fields)
            default:
                throw fail("unexpected '\(Character(Unicode.Scalar(c)))'")
            }
        }
    }
}
