#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A typed D-Bus value: every basic type and every container.
///
/// Arrays and dictionaries carry their element types so that empty ones still have a
/// signature. Strings are Swift strings and therefore always valid UTF-8; an embedded NUL,
/// which D-Bus forbids, is replaced by U+FFFD when the value is sent.
public indirect enum Value: Hashable, Sendable {
    /// A byte (`y`).
    case byte(UInt8)
    /// A boolean (`b`).
    case boolean(Bool)
    /// A signed 16-bit integer (`n`).
    case int16(Int16)
    /// An unsigned 16-bit integer (`q`).
    case uint16(UInt16)
    /// A signed 32-bit integer (`i`).
    case int32(Int32)
    /// An unsigned 32-bit integer (`u`).
    case uint32(UInt32)
    /// A signed 64-bit integer (`x`).
    case int64(Int64)
    /// An unsigned 64-bit integer (`t`).
    case uint64(UInt64)
    /// A double-precision number (`d`).
    case double(Double)
    /// A string (`s`).
    case string(String)
    /// An object path (`o`).
    case objectPath(ObjectPath)
    /// A type signature (`g`).
    case signature(Signature)
    /// A file descriptor. When read from a message it is a new descriptor owned by the reader.
    case unixFD(Int32)
    /// An array: the element type, then the elements, each of that type.
    case array(DataType, [Value])
    /// A dictionary: the key type (a basic type), the value type, then the entries.
    case dictionary(key: DataType, value: DataType, [DictionaryEntry])
    /// A struct: its fields, in order (at least one to be sent).
    case structure([Value])
    /// A variant holding one value of any type.
    case variant(Value)

    /// One key-value entry of a ``Value/dictionary(key:value:_:)``.
    public struct DictionaryEntry: Hashable, Sendable {
        /// The entry's key, a value of the dictionary's basic key type.
        public var key: Value
        /// The entry's value.
        public var value: Value
        /// Creates an entry from a key and a value.
        public init(_ key: Value, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// The D-Bus type of this value.
    public var type: DataType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// The deepest nesting a message body may have (`2 × DBUS_MAXIMUM_TYPE_RECURSION_DEPTH`).
    static let maximumNesting = 64

    /// Checks that this value can be sent as one message argument: every container holds
    /// what its type says, every type it carries (array elements, dictionary keys and values,
    /// struct fields, what a variant holds) is a valid D-Bus type, and it nests no deeper
    /// than libdbus accepts on receipt. libdbus would abort the process on an invalid
    /// contained type, or build a message that peers and the bus reject.
    ///
    /// `depth` is the number of containers around this value, as libdbus counts them: a
    /// dictionary entry is a level of its own, and the elements of an array of fixed-size
    /// values are not counted.
    public func validate(depth: Int = 0) throws(BusError) {
        // The outermost value's type is a whole signature of its own; everything below it
        // (up to the next variant) is part of that type.
        try type.validate()
        try validateContents(depth: depth)
    }

    private func validateContents(depth: Int) throws(BusError) {
        guard depth <= Value.maximumNesting else {
            throw BusError(.invalidArgs, "value nested more than \(Value.maximumNesting) levels")
        }
        switch self {
        case .array(let element, let items):
            for item in items {
                guard item.type == element else {
                    throw BusError(.invalidArgs, "array of \(element) holds a \(item.type)")
                }
                // libdbus does not descend into arrays of fixed-size values.
                if !element.isFixed { try item.validateContents(depth: depth + 1) }
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard keyType.isBasic else { throw BusError(.invalidArgs, "dictionary key \(keyType) is not basic") }
            for entry in entries {
                guard entry.key.type == keyType, entry.value.type == valueType else {
                    throw BusError(
                        .invalidArgs, "dictionary {\(keyType)\(valueType)} holds {\(entry.key.type)\(entry.value.type)}"
                    )
                }
                // One level for the array, one for the dict entry.
                try entry.key.validateContents(depth: depth + 2)
                try entry.value.validateContents(depth: depth + 2)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw BusError(.invalidArgs, "empty struct") }
            for field in fields { try field.validateContents(depth: depth + 1) }
        case .variant(let inner):
            // A variant carries its own signature, which libdbus checks on its own.
            try inner.validate(depth: depth + 1)
        default:
            break
        }
    }
}

// MARK: - File descriptors

extension Value {
    /// The descriptors (`h`) in this value, at any depth.
    var descriptors: [Int32] {
        switch self {
        case .unixFD(let fd): [fd]
        case .array(_, let items): items.flatMap(\.descriptors)
        case .dictionary(_, _, let entries): entries.flatMap { $0.key.descriptors + $0.value.descriptors }
        case .structure(let fields): fields.flatMap(\.descriptors)
        case .variant(let inner): inner.descriptors
        default: []
        }
    }

    /// Closes every descriptor read from a message into `values` (each is a new descriptor
    /// owned by the reader): what must happen to those nobody takes, or each one leaks.
    static func closeDescriptors(in values: [Value]) {
        for fd in values.flatMap(\.descriptors) where fd >= 0 { _ = close(fd) }
    }
}

// MARK: - Convenience constructors and accessors

extension Value {
    /// An `as` array.
    public static func strings(_ items: [String]) -> Value { .array(.string, items.map(Value.string)) }

    /// An `a{sv}` dictionary, keys sorted so that output is stable.
    public static func stringVariantDictionary(_ items: [String: Value]) -> Value {
        .dictionary(
            key: .string, value: .variant,
            items.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .variant($0.value)) }
        )
    }

    /// The string, when this value is a `.string`; nil otherwise.
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// The boolean, when this value is a `.boolean`; nil otherwise.
    public var boolean: Bool? { if case .boolean(let b) = self { b } else { nil } }
    /// The number, when this value is a `.double`; nil otherwise.
    public var double: Double? { if case .double(let d) = self { d } else { nil } }
    /// The integer, when this value is a `.int64`; nil otherwise.
    public var int64: Int64? { if case .int64(let x) = self { x } else { nil } }
    /// The integer, when this value is a `.int32`; nil otherwise.
    public var int32: Int32? { if case .int32(let x) = self { x } else { nil } }
    /// The integer, when this value is a `.uint32`; nil otherwise.
    public var uint32: UInt32? { if case .uint32(let x) = self { x } else { nil } }
    /// The path, when this value is a `.objectPath`; nil otherwise.
    public var objectPath: ObjectPath? { if case .objectPath(let p) = self { p } else { nil } }
    /// The value inside any number of variants (or the value itself when it is not a variant).
    /// To take off exactly one level, match `.variant(let inner)` instead.
    public var unwrapped: Value { if case .variant(let inner) = self { inner.unwrapped } else { self } }

    /// The paths of an `ao` array (empty for anything else).
    public var objectPaths: [ObjectPath] {
        guard case .array(.objectPath, let items) = self else { return [] }
        return items.compactMap(\.objectPath)
    }

    /// The strings of an `as` array; nil for anything else.
    public var stringArray: [String]? {
        guard case .array(.string, let items) = self else { return nil }
        return items.compactMap(\.string)
    }

    /// The entries of an `a{sv}` dictionary, variants unwrapped one level.
    public var stringVariantDictionary: [String: Value]? {
        guard case .dictionary(.string, .variant, let entries) = self else { return nil }
        var result: [String: Value] = [:]
        for entry in entries {
            if case .string(let key) = entry.key, case .variant(let value) = entry.value {
                result[key] = value
            }
        }
        return result
    }
}
