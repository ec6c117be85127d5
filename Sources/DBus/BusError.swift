/// An error carried in a D-Bus error reply: a dotted error name and a human message.
public struct BusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A D-Bus error name such as `org.freedesktop.DBus.Error.InvalidArgs`.
    public struct Name: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        /// The dotted error name, such as `org.freedesktop.DBus.Error.InvalidArgs`.
        public let rawValue: String
        /// Names must be valid error names (see `NameValidation.isValidErrorName`);
        /// an invalid one is replaced by `org.freedesktop.DBus.Error.Failed`.
        public init(rawValue: String) {
            self.rawValue = NameValidation.isValidErrorName(rawValue) ? rawValue : "org.freedesktop.DBus.Error.Failed"
        }
        /// Creates a name, as ``BusError/Name/init(rawValue:)`` does: an invalid one becomes
        /// `org.freedesktop.DBus.Error.Failed`.
        public init(_ rawValue: String) { self.init(rawValue: rawValue) }
        /// The dotted error name.
        public var description: String { rawValue }

        /// A generic failure with no more specific name; also what an invalid error name becomes.
        public static let failed = Name("org.freedesktop.DBus.Error.Failed")
        /// The sender of the error, or libdbus itself, ran out of memory.
        public static let noMemory = Name("org.freedesktop.DBus.Error.NoMemory")
        /// The object has no method of the name the call gives (in the interface it names, if any).
        public static let unknownMethod = Name("org.freedesktop.DBus.Error.UnknownMethod")
        /// The peer has no object at the path the call is addressed to.
        public static let unknownObject = Name("org.freedesktop.DBus.Error.UnknownObject")
        /// The object does not implement the interface the call (or a `Properties` call) names.
        public static let unknownInterface = Name("org.freedesktop.DBus.Error.UnknownInterface")
        /// A `Properties` `Get` or `Set` names a property the interface does not have.
        public static let unknownProperty = Name("org.freedesktop.DBus.Error.UnknownProperty")
        /// A `Properties` `Set` call names a property that cannot be written.
        public static let propertyReadOnly = Name("org.freedesktop.DBus.Error.PropertyReadOnly")
        /// The arguments are invalid: the wrong signature for the method, or a malformed name,
        /// value or signature.
        public static let invalidArgs = Name("org.freedesktop.DBus.Error.InvalidArgs")
        /// The peer does not support the requested operation.
        public static let notSupported = Name("org.freedesktop.DBus.Error.NotSupported")
        /// No reply came: the call's timeout passed without an answer, or the callee disconnected
        /// before answering.
        public static let noReply = Name("org.freedesktop.DBus.Error.NoReply")
        /// A message (or an array in it) is larger than the bus allows, or the sender exceeded
        /// another of the bus's limits.
        public static let limitsExceeded = Name("org.freedesktop.DBus.Error.LimitsExceeded")
        /// A low-level operation, such as connecting or authenticating, timed out; an unanswered
        /// call fails with ``BusError/Name/noReply`` instead.
        public static let timeout = Name("org.freedesktop.DBus.Error.Timeout")
        /// The connection is closed or has been lost, so the message cannot be sent.
        public static let disconnected = Name("org.freedesktop.DBus.Error.Disconnected")
        /// The bus name a message is addressed to has no owner, and no service can be activated for it.
        public static let serviceUnknown = Name("org.freedesktop.DBus.Error.ServiceUnknown")
        /// The bus name asked about, for example with `GetNameOwner`, has no owner.
        public static let nameHasNoOwner = Name("org.freedesktop.DBus.Error.NameHasNoOwner")
    }

    /// The error's D-Bus name, such as `org.freedesktop.DBus.Error.InvalidArgs`.
    public var name: Name
    /// A human-readable explanation, sent as the error reply's only argument.
    public var message: String

    /// Creates an error with a D-Bus error name and a human-readable message.
    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// The error name and the message, as `name: message`.
    public var description: String { "\(name.rawValue): \(message)" }
}
