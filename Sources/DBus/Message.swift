internal import CDBus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An owned libdbus message. Only the D-Bus module touches the C pointer.
///
/// Rule: a `Message` is used on the thread that owns its connection (the main actor in
/// Quaver); `@unchecked Sendable` only lets it cross into a continuation on that thread.
public final class Message: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes over one reference to `raw`.
    init(owning raw: OpaquePointer) { self.raw = raw }

    /// The length of the body appended by `append` so far.
    private var bodyLength = 0

    deinit { dbus_message_unref(raw) }

    /// The type of a message.
    public enum Kind: Sendable {
        /// A method call.
        case methodCall
        /// A successful reply to a method call.
        case methodReturn
        /// An error reply to a method call.
        case error
        /// A signal.
        case signal
        /// A message type that D-Bus does not define.
        case invalid
    }

    /// The message's type.
    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: .error
        case DBUS_MESSAGE_TYPE_SIGNAL: .signal
        default: .invalid
        }
    }

    /// The object path a method call is addressed to or a signal comes from; nil for replies.
    public var path: String? { dbus_message_get_path(raw).map { String(cString: $0) } }
    /// The interface of a method call or signal; nil for replies and for a call that names none.
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    /// The method or signal name; nil for replies.
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    /// The unique name of the sending connection, which the bus fills in; nil when the message
    /// has none, such as one not yet sent.
    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    /// The bus name the message is addressed to; nil when it has none, as for a broadcast signal.
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }
    /// The error name of an error reply, such as `org.freedesktop.DBus.Error.UnknownMethod`;
    /// nil for any other message.
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    /// The signature of the message's arguments, such as `sa{sv}as`; empty when it has none.
    public var signature: String { dbus_message_get_signature(raw).map { String(cString: $0) } ?? "" }
    /// The serial number that identifies the message among its sender's; 0 until it is sent.
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    /// The serial of the method call that a reply or error answers; 0 for other messages.
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    /// Whether the caller asked for no reply to this method call.
    public var noReplyExpected: Bool { dbus_message_get_no_reply(raw) != 0 }

    /// A method call. The corresponding libdbus function is `dbus_message_new_method_call`.
    public static func methodCall(
        destination: String?, path: ObjectPath, interface: String?, member: String, arguments: [Value] = []
    ) throws(BusError) -> Message {
        if let destination, !NameValidation.isValidBusName(destination) {
            throw BusError(.invalidArgs, "invalid bus name '\(destination)'")
        }
        if let interface, !NameValidation.isValidInterfaceName(interface) {
            throw BusError(.invalidArgs, "invalid interface name '\(interface)'")
        }
        guard NameValidation.isValidMemberName(member) else {
            throw BusError(.invalidArgs, "invalid member name '\(member)'")
        }
        guard let raw = dbus_message_new_method_call(destination, path.rawValue, interface, member) else {
            throw BusError(.noMemory, "out of memory")
        }
        let message = Message(owning: raw)
        try message.append(arguments)
        return message
    }

    /// A signal. The corresponding libdbus function is `dbus_message_new_signal`.
    public static func signal(
        path: ObjectPath, interface: String, member: String, arguments: [Value] = []
    ) throws(BusError) -> Message {
        guard NameValidation.isValidInterfaceName(interface), NameValidation.isValidMemberName(member) else {
            throw BusError(.invalidArgs, "invalid signal name '\(interface).\(member)'")
        }
        guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw BusError(.noMemory, "out of memory")
        }
        let message = Message(owning: raw)
        try message.append(arguments)
        return message
    }

    /// A successful reply to `self`.
    func makeReturn(_ arguments: [Value]) throws(BusError) -> Message {
        guard let raw = dbus_message_new_method_return(self.raw) else { throw BusError(.noMemory, "out of memory") }
        let reply = Message(owning: raw)
        try reply.append(arguments)
        return reply
    }

    /// An error reply to `self`.
    func makeError(_ error: BusError) -> Message? {
        let text = Marshal.sanitized(error.message)
        return dbus_message_new_error(raw, error.name.rawValue, text).map { Message(owning: $0) }
    }

    /// The message's arguments as typed values, or an empty array when one of them cannot be
    /// read (see `readArguments()`, which says why). A message libdbus accepted can always be read.
    public var arguments: [Value] { (try? readArguments()) ?? [] }

    /// The message's arguments as typed values. Throws InvalidArgs rather than returning only
    /// some of them when one cannot be represented as a `Value`.
    public func readArguments() throws(BusError) -> [Value] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        var values: [Value] = []
        repeat {
            values.append(try Marshal.read(&iter))
        } while dbus_message_iter_next(&iter) != 0
        return values
    }

    /// Appends arguments after validating them. Throws InvalidArgs for an invalid value, and
    /// when the body signature would grow past 255 bytes (libdbus never returns from that).
    /// Throws LimitsExceeded when an array would hold more than 64 MiB or the message would
    /// be longer than 128 MiB: libdbus builds such a message, but the bus (like any peer)
    /// refuses it as invalid and drops the whole connection of whoever sent it.
    public func append(_ arguments: [Value]) throws(BusError) {
        guard !arguments.isEmpty else { return }
        for argument in arguments { try argument.validate() }
        let signatureLength = arguments.reduce(signature.utf8.count) { $0 + $1.type.signature.utf8.count }
        guard signatureLength <= Signature.maximumLength else {
            throw BusError(
                .invalidArgs,
                "the arguments' signature would be \(signatureLength) bytes, more than \(Signature.maximumLength)")
        }
        var size = MarshalledSize(offset: bodyLength)
        for argument in arguments { try size.add(argument) }
        // The header: fixed part, path, interface, member, destination, error name, signature,
        // and room for the serials and for the sender the bus adds.
        let fields = [path, interface, member, destination, errorName].reduce(0) { $0 + ($1?.utf8.count ?? 0) + 16 }
        let header = 16 + fields + signatureLength + 16 + 256
        guard size.offset <= MarshalledSize.maximumMessageLength - header else {
            throw BusError(
                .limitsExceeded, "the message would be longer than \(MarshalledSize.maximumMessageLength) bytes")
        }
        bodyLength = size.offset
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        for argument in arguments {
            guard Marshal.append(argument, to: &iter) else { throw BusError(.noMemory, "could not append argument") }
        }
    }

    /// The error carried by an error reply, or nil for any other message.
    public var error: BusError? {
        guard kind == .error else { return nil }
        let text = arguments.first?.string ?? ""
        return BusError(BusError.Name(errorName ?? "org.freedesktop.DBus.Error.Failed"), text)
    }
}

/// The length values take in a message body, computed the way the wire format lays them
/// out (each value aligned to its type's boundary), to keep messages within the limits of
/// the D-Bus specification, which the bus and libdbus enforce on receipt.
struct MarshalledSize {
    /// `DBUS_MAXIMUM_ARRAY_LENGTH`: the bytes of one array's elements.
    static let maximumArrayLength = 64 << 20
    /// `DBUS_MAXIMUM_MESSAGE_LENGTH`: header and body.
    static let maximumMessageLength = 128 << 20

    /// Where the next value starts (the body starts 8-aligned, so offset 0).
    var offset: Int

    private mutating func align(_ boundary: Int) { offset = (offset + boundary - 1) & ~(boundary - 1) }

    /// The alignment of a type's values.
    static func alignment(_ type: DataType) -> Int {
        switch type {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .unixFD, .string, .objectPath, .array, .dictionary: 4
        case .int64, .uint64, .double, .structure: 8
        }
    }

    private mutating func addString(_ s: String, lengthBytes: Int) {
        align(lengthBytes)
        offset += lengthBytes + Self.sentLength(s) + 1
    }

    /// The UTF-8 length of `s` as sent: each NUL becomes U+FFFD (3 bytes; see `Marshal.sanitized`).
    static func sentLength(_ s: String) -> Int {
        let count = s.utf8.count
        let nuls =
            s.utf8.withContiguousStorageIfAvailable { bytes -> Int in
                guard var next = bytes.baseAddress else { return 0 }
                var found = 0
                var left = bytes.count
                while left > 0, let hit = memchr(next, 0, left) {
                    found += 1
                    let skipped = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - next + 1
                    next += skipped
                    left -= skipped
                }
                return found
            } ?? s.utf8.reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
        return count + 2 * nuls
    }

    /// Adds one value; throws LimitsExceeded for an array longer than the limit. Stops
    /// early once past the message limit (the caller reports that).
    mutating func add(_ value: Value) throws(BusError) {
        guard offset <= Self.maximumMessageLength else { return }
        switch value {
        case .byte: offset += 1
        case .int16, .uint16:
            align(2)
            offset += 2
        case .boolean, .int32, .uint32, .unixFD:
            align(4)
            offset += 4
        case .int64, .uint64, .double:
            align(8)
            offset += 8
        case .string(let s): addString(s, lengthBytes: 4)
        case .objectPath(let p): addString(p.rawValue, lengthBytes: 4)
        case .signature(let g): addString(g.rawValue, lengthBytes: 1)
        case .variant(let inner):
            addString(inner.type.signature, lengthBytes: 1)
            try add(inner)
        case .structure(let fields):
            align(8)
            for field in fields { try add(field) }
        case .array(let element, let items):
            try addArray(alignment: Self.alignment(element)) { (size: inout MarshalledSize) throws(BusError) in
                for item in items { try size.add(item) }
            }
        case .dictionary(_, _, let entries):
            try addArray(alignment: 8) { (size: inout MarshalledSize) throws(BusError) in
                for entry in entries {
                    size.align(8)
                    try size.add(entry.key)
                    try size.add(entry.value)
                }
            }
        }
    }

    /// The length word, the padding to the elements' alignment (not part of the length),
    /// then the elements.
    private mutating func addArray(alignment: Int, _ elements: (inout MarshalledSize) throws(BusError) -> Void)
        throws(BusError)
    {
        align(4)
        offset += 4
        align(alignment)
        let start = offset
        try elements(&self)
        guard offset - start <= Self.maximumArrayLength else {
            throw BusError(.limitsExceeded, "an array would be longer than \(Self.maximumArrayLength) bytes")
        }
    }
}

/// Conversions between `Value` and libdbus message iterators.
enum Marshal {
    static func typeCode(_ c: Character) -> Int32 { Int32(c.asciiValue!) }
    static let byteCode = typeCode("y"), booleanCode = typeCode("b"), int16Code = typeCode("n")
    static let uint16Code = typeCode("q"), int32Code = typeCode("i"), uint32Code = typeCode("u")
    static let int64Code = typeCode("x"), uint64Code = typeCode("t"), doubleCode = typeCode("d")
    static let stringCode = typeCode("s"), objectPathCode = typeCode("o"), signatureCode = typeCode("g")
    static let unixFDCode = typeCode("h"), variantCode = typeCode("v"), arrayCode = typeCode("a")
    static let structCode = typeCode("r"), dictEntryCode = typeCode("e"), invalidCode: Int32 = 0

    /// D-Bus strings may not contain NUL; Swift strings may.
    static func sanitized(_ s: String) -> String {
        s.utf8.contains(0) ? String(s.map { $0 == "\0" ? "\u{FFFD}" : $0 }) : s
    }

    static func appendBasic<T>(_ value: T, code: Int32, to iter: inout DBusMessageIter) -> Bool {
        var copy = value
        return withUnsafePointer(to: &copy) { dbus_message_iter_append_basic(&iter, code, $0) != 0 }
    }

    static func appendString(_ s: String, code: Int32, to iter: inout DBusMessageIter) -> Bool {
        sanitized(s).withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return withUnsafePointer(to: &pointer) { dbus_message_iter_append_basic(&iter, code, $0) != 0 }
        }
    }

    static func withContainer(
        _ code: Int32, signature: String?, in iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, code, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&iter, code, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    /// Appends one validated value. Returns false only when libdbus runs out of memory.
    static func append(_ value: Value, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(v, code: byteCode, to: &iter)
        case .boolean(let v): return appendBasic(dbus_bool_t(v ? 1 : 0), code: booleanCode, to: &iter)
        case .int16(let v): return appendBasic(v, code: int16Code, to: &iter)
        case .uint16(let v): return appendBasic(v, code: uint16Code, to: &iter)
        case .int32(let v): return appendBasic(v, code: int32Code, to: &iter)
        case .uint32(let v): return appendBasic(v, code: uint32Code, to: &iter)
        case .int64(let v): return appendBasic(v, code: int64Code, to: &iter)
        case .uint64(let v): return appendBasic(v, code: uint64Code, to: &iter)
        case .double(let v): return appendBasic(v, code: doubleCode, to: &iter)
        case .unixFD(let v): return appendBasic(v, code: unixFDCode, to: &iter)
        case .string(let s): return appendString(s, code: stringCode, to: &iter)
        case .objectPath(let p): return appendString(p.rawValue, code: objectPathCode, to: &iter)
        case .signature(let g): return appendString(g.rawValue, code: signatureCode, to: &iter)
        case .array(let element, let items):
            return withContainer(arrayCode, signature: element.signature, in: &iter) { sub in
                items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            let entrySignature = "{" + key.signature + valueType.signature + "}"
            return withContainer(arrayCode, signature: entrySignature, in: &iter) { sub in
                entries.allSatisfy { entry in
                    withContainer(dictEntryCode, signature: nil, in: &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return withContainer(structCode, signature: nil, in: &iter) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .variant(let inner):
            return withContainer(variantCode, signature: inner.type.signature, in: &iter) { sub in
                append(inner, to: &sub)
            }
        }
    }

    static func readBasic<T>(_ iter: inout DBusMessageIter, as: T.Type, zero: T) -> T {
        var result = zero
        withUnsafeMutablePointer(to: &result) { dbus_message_iter_get_basic(&iter, $0) }
        return result
    }

    static func readString(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_basic(&iter, $0) }
        return pointer.map { String(cString: $0) } ?? ""
    }

    static func currentSignature(_ iter: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// Reads the value at the iterator. Messages are validated by libdbus on receipt, and the
    /// Swift validators accept everything libdbus does, so this throws only if that ever stops
    /// being true; it never skips a value.
    static func read(_ iter: inout DBusMessageIter) throws(BusError) -> Value {
        let code = dbus_message_iter_get_arg_type(&iter)
        switch code {
        case byteCode: return .byte(readBasic(&iter, as: UInt8.self, zero: 0))
        case booleanCode: return .boolean(readBasic(&iter, as: dbus_bool_t.self, zero: 0) != 0)
        case int16Code: return .int16(readBasic(&iter, as: Int16.self, zero: 0))
        case uint16Code: return .uint16(readBasic(&iter, as: UInt16.self, zero: 0))
        case int32Code: return .int32(readBasic(&iter, as: Int32.self, zero: 0))
        case uint32Code: return .uint32(readBasic(&iter, as: UInt32.self, zero: 0))
        case int64Code: return .int64(readBasic(&iter, as: Int64.self, zero: 0))
        case uint64Code: return .uint64(readBasic(&iter, as: UInt64.self, zero: 0))
        case doubleCode: return .double(readBasic(&iter, as: Double.self, zero: 0))
        case unixFDCode: return .unixFD(readBasic(&iter, as: Int32.self, zero: -1))
        case stringCode: return .string(readString(&iter))
        case objectPathCode:
            let text = readString(&iter)
            guard let path = ObjectPath(text) else { throw unreadable("object path '\(text)'") }
            return .objectPath(path)
        case signatureCode: return .signature(try Signature(readString(&iter)))
        case variantCode:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub))
        case structCode:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var fields: [Value] = []
            while dbus_message_iter_get_arg_type(&sub) != invalidCode {
                fields.append(try read(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case arrayCode:
            let type = try DataType(parsing: currentSignature(&iter))
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            switch type {
            case .dictionary(let keyType, let valueType):
                var entries: [Value.DictionaryEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == dictEntryCode {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let key = try read(&pair)
                    dbus_message_iter_next(&pair)
                    let value = try read(&pair)
                    entries.append(.init(key, value))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: keyType, value: valueType, entries)
            case .array(let elementType):
                var items: [Value] = []
                while dbus_message_iter_get_arg_type(&sub) != invalidCode {
                    items.append(try read(&sub))
                    dbus_message_iter_next(&sub)
                }
                return .array(elementType, items)
            default:
                throw unreadable("array of type '\(type)'")
            }
        default:
            throw unreadable("type code \(code)")
        }
    }

    private static func unreadable(_ what: String) -> BusError {
        BusError(.invalidArgs, "cannot read an argument: \(what)")
    }
}
