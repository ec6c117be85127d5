/// An error carried in a D-Bus error reply: a dotted error name and a human message.
public struct BusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A D-Bus error name such as `org.freedesktop.DBus.Error.InvalidArgs`.
    public struct Name: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        /// Names must be valid error names (see `NameValidation.isValidErrorName`);
        /// an invalid one is replaced by `org.freedesktop.DBus.Error.Failed`.
        public init(rawValue: String) {
            self.rawValue = NameValidation.isValidErrorName(rawValue) ? rawValue : "org.freedesktop.DBus.Error.Failed"
        }
        public init(_ rawValue: String) { self.init(rawValue: rawValue) }
        public var description: String { rawValue }

        public static let failed = Name("org.freedesktop.DBus.Error.Failed")
        public static let noMemory = Name("org.freedesktop.DBus.Error.NoMemory")
        public static let unknownMethod = Name("org.freedesktop.DBus.Error.UnknownMethod")
        public static let unknownObject = Name("org.freedesktop.DBus.Error.UnknownObject")
        public static let unknownInterface = Name("org.freedesktop.DBus.Error.UnknownInterface")
        public static let unknownProperty = Name("org.freedesktop.DBus.Error.UnknownProperty")
        public static let propertyReadOnly = Name("org.freedesktop.DBus.Error.PropertyReadOnly")
        public static let invalidArgs = Name("org.freedesktop.DBus.Error.InvalidArgs")
        public static let notSupported = Name("org.freedesktop.DBus.Error.NotSupported")
        public static let noReply = Name("org.freedesktop.DBus.Error.NoReply")
        public static let limitsExceeded = Name("org.freedesktop.DBus.Error.LimitsExceeded")
        public static let timeout = Name("org.freedesktop.DBus.Error.Timeout")
        public static let disconnected = Name("org.freedesktop.DBus.Error.Disconnected")
        public static let serviceUnknown = Name("org.freedesktop.DBus.Error.ServiceUnknown")
        public static let nameHasNoOwner = Name("org.freedesktop.DBus.Error.NameHasNoOwner")
    }

    public var name: Name
    public var message: String

    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name.rawValue): \(message)" }
}
