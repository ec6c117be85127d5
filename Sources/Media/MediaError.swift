import FoundationEssentials
import Glibc

/// Why a file cannot be played.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, in words a user can act on.
    public var reason: String
    /// The file was not read in time: a busy machine, not proof that it is broken.
    public var isTimeout = false
    /// An error for `reason`; `isTimeout`: the file was not read in time.
    public init(_ reason: String, isTimeout: Bool = false) {
        self.reason = reason
        self.isTimeout = isTimeout
    }
    /// The reason.
    public var description: String { reason }

    /// The reason an error gives, at the level a user can act on ("Not a directory"), not
    /// Foundation's wrapper around it: a file operation's `CocoaError` gives the `errno`
    /// under it, a `LocalizedError` its description, anything else its text.
    public static func reason(_ error: any Error) -> String {
        var error = error
        if let cocoa = error as? CocoaError, let underlying = cocoa.underlying { error = underlying }
        if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        if let localized = error as? any LocalizedError, let description = localized.errorDescription {
            return description
        }
        return "\(error)"
    }
}
