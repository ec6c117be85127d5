/// A D-Bus object path such as `/org/mpris/MediaPlayer2`, validated on creation.
///
/// libdbus aborts the whole process when handed an invalid path, so every path that
/// reaches it goes through this type.
public struct ObjectPath: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The path as text, such as `/org/mpris/MediaPlayer2`.
    public let rawValue: String

    /// Creates a path, or returns nil when `rawValue` is not a valid object path.
    public init?(_ rawValue: String) {
        guard ObjectPath.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Creates a path; throws InvalidArgs when `rawValue` is not a valid object path.
    public init(validating rawValue: String) throws(BusError) {
        guard ObjectPath.isValid(rawValue) else {
            throw BusError(.invalidArgs, "invalid object path '\(rawValue.prefix(200))'")
        }
        self.rawValue = rawValue
    }

    /// The root path, `/`.
    public static let root = ObjectPath("/")!

    /// The path as text.
    public var description: String { rawValue }

    /// Orders paths by their text.
    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The path with one more element appended. The element must be non-empty and consist
    /// of `[A-Za-z0-9_]` only (so no `/`); returns nil otherwise.
    public func appending(_ element: String) -> ObjectPath? {
        guard !element.isEmpty, element.utf8.allSatisfy(\.isNameCharacter) else { return nil }
        return ObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` lies strictly below `ancestor`.
    public func isDescendant(of ancestor: ObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    static func isValid(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for b in bytes.dropFirst() {
            if b == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                guard b.isNameCharacter else { return false }
                previousWasSlash = false
            }
        }
        return !previousWasSlash
    }
}

/// Validation rules for the dotted names of the D-Bus specification.
public enum NameValidation {
    static let maximumLength = 255

    /// `org.example.Interface`: two or more elements of `[A-Za-z0-9_]`, none starting with a digit.
    public static func isValidInterfaceName(_ s: String) -> Bool {
        dottedName(s, allowHyphen: false, allowLeadingDigit: false)
    }

    /// Error names follow the interface-name rules.
    public static func isValidErrorName(_ s: String) -> Bool { isValidInterfaceName(s) }

    /// A member (method, signal or property) name: `[A-Za-z0-9_]+`, not starting with a digit.
    public static func isValidMemberName(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength, !bytes[0].isDigit else { return false }
        return bytes.allSatisfy(\.isNameCharacter)
    }

    /// A bus name: a unique name (`:1.42`) or a well-known name (`org.mpris.MediaPlayer2.quaver`).
    public static func isValidBusName(_ s: String) -> Bool {
        // The limit covers the whole name, the ':' of a unique name included.
        guard s.utf8.count <= maximumLength else { return false }
        if s.hasPrefix(":") {
            return dottedName(String(s.dropFirst()), allowHyphen: true, allowLeadingDigit: true)
        }
        return dottedName(s, allowHyphen: true, allowLeadingDigit: false)
    }

    private static func dottedName(_ s: String, allowHyphen: Bool, allowLeadingDigit: Bool) -> Bool {
        guard !s.isEmpty, s.utf8.count <= maximumLength else { return false }
        let elements = s.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        for element in elements {
            let bytes = Array(element.utf8)
            guard let first = bytes.first else { return false }
            if !allowLeadingDigit && first.isDigit { return false }
            for b in bytes where !(b.isNameCharacter || (allowHyphen && b == UInt8(ascii: "-"))) {
                return false
            }
        }
        return true
    }
}

extension UInt8 {
    var isDigit: Bool { self >= 48 && self <= 57 }
    var isNameCharacter: Bool {
        (self >= 65 && self <= 90) || (self >= 97 && self <= 122) || isDigit || self == 95
    }
}
