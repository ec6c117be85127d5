public import FoundationEssentials
import Glibc
public import Logging
import PlaybackVocabulary

/// A folder of Quaver's own (the saved session, the artwork cache): made 0700, its files
/// 0600, and never reached through a symbolic link.
///
/// The last `ownedComponents` elements of its path are Quaver's: each is opened with
/// `O_NOFOLLOW` from the one above, so a link put in their place (pointing anywhere) is
/// refused rather than written through or made 0700. The folders above them (an
/// `XDG_CACHE_HOME` that is itself a link, say) are the user's, and are followed.
/// Files are made and replaced relative to the folder's descriptor, never by path.
public struct PrivateFolder: Sendable {
    /// The folder.
    public let url: URL
    /// How many of the last elements of `url`'s path are Quaver's own.
    public let ownedComponents: Int

    /// Describes the folder; nothing is made or opened until it is used.
    /// - Parameters:
    ///   - url: the folder.
    ///   - ownedComponents: how many of the last elements of its path are Quaver's own
    ///     (2 for `…/quaver/art`); at least 1.
    public init(_ url: URL, ownedComponents: Int = 1) {
        self.url = url
        self.ownedComponents = max(ownedComponents, 1)
    }

    /// Why a private folder cannot be used.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public enum Kind: Sendable, Equatable {
            /// A symbolic link stands where one of Quaver's folders belongs.
            case symbolicLink
            /// Something that is not a folder stands there.
            case notFolder
            /// A system call failed with this `errno`.
            case system(Int32)
        }
        /// The path the problem is at.
        public var path: String
        /// What stands there, or what failed.
        public var kind: Kind

        /// Whether the folder was refused for being a link, rather than failing as any
        /// folder can (not a folder, no permission, no space), which callers report as such.
        public var isRefusal: Bool { kind == .symbolicLink }

        /// The path and the problem, for a log line.
        public var description: String {
            switch kind {
            case .symbolicLink: "\(path) is a symbolic link; Quaver does not write through it or change its mode"
            case .notFolder: "\(path): \(String(cString: strerror(ENOTDIR)))"
            case .system(let code): "\(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The paths already reported by `reportOnce`.
    private static let reported = Locked<Set<String>>([])

    /// Logs `error` as a warning the first time a refusal at its path is seen in this process
    /// (saves are retried at every change: one line says it, not one per save). Returns
    /// whether `error` is a refusal.
    @discardableResult
    public static func reportOnce(_ error: any Error, logger: Logger, _ consequence: String) -> Bool {
        guard let failure = error as? Failure, failure.isRefusal else { return false }
        if reported.withLock({ $0.insert(failure.path).inserted }) {
            logger.warning("\(failure); \(consequence)")
        }
        return true
    }

    /// The folder's elements: the user's part above, and Quaver's own below it.
    private var split: (base: String, owned: [String]) {
        let components = url.standardizedFileURL.pathComponents.filter { $0 != "/" }
        let owned = Array(components.suffix(ownedComponents))
        let base = "/" + components.dropLast(owned.count).joined(separator: "/")
        return (base, owned)
    }

    /// Opens the folder, making what is missing (the owned folders 0700), and returns its
    /// descriptor, which the caller closes. The innermost folder is made 0700 if it is
    /// wider.
    public func open() throws(Failure) -> Int32 {
        let (base, owned) = split
        // A failure here shows as the one opening it gives, which names the cause.
        _ = try? FileManager.default.createDirectory(
            atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var descriptor = Glibc.open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: base, kind: .system(errno)) }
        var path = base == "/" ? "" : base
        for name in owned {
            path += "/" + name
            var child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child < 0, errno == ENOENT {
                if mkdirat(descriptor, name, 0o700) != 0, errno != EEXIST {
                    let code = errno
                    close(descriptor)
                    throw Failure(path: path, kind: .system(code))
                }
                child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            if child < 0 {
                let code = errno
                let kind = Self.whatStands(named: name, in: descriptor) ?? .system(code)
                close(descriptor)
                throw Failure(path: path, kind: kind)
            }
            close(descriptor)
            descriptor = child
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & 0o777 != 0o700, fchmod(descriptor, 0o700) != 0 {
            let code = errno
            close(descriptor)
            throw Failure(path: path, kind: .system(code))
        }
        return descriptor
    }

    /// Why `name` could not be opened as a folder: a link or another kind of file stands
    /// there (nil: neither, the error was something else).
    private static func whatStands(named name: String, in folder: Int32) -> Failure.Kind? {
        var status = stat()
        guard fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        switch status.st_mode & S_IFMT {
        case S_IFLNK: return .symbolicLink
        case S_IFDIR: return nil
        default: return .notFolder
        }
    }

    /// The first refusal along the owned part of the path, without making or changing
    /// anything; nil when every owned folder that exists is a real folder.
    public func refusal() -> Failure? {
        let (base, owned) = split
        var path = base == "/" ? "" : base
        for name in owned {
            path += "/" + name
            var status = stat()
            guard lstat(path, &status) == 0 else { return nil }
            switch status.st_mode & S_IFMT {
            case S_IFLNK: return Failure(path: path, kind: .symbolicLink)
            case S_IFDIR: continue
            default: return Failure(path: path, kind: .notFolder)
            }
        }
        return nil
    }

    /// Runs `body` with the folder's descriptor (closed after).
    public func withDescriptor<Result>(_ body: (Int32) throws -> Result) throws -> Result {
        let descriptor = try open()
        defer { close(descriptor) }
        return try body(descriptor)
    }

    /// Replaces the file `name` with `data`: written to a new 0600 file beside it (made
    /// with `O_EXCL | O_NOFOLLOW`, so nothing already there is opened), flushed to disk when
    /// `sync` is true, and renamed over it, so a crash leaves the old file or the new one.
    public func replace(_ name: String, with data: Data, sync: Bool = true) throws {
        try withDescriptor { try Self.replace(name, in: $0, with: data, sync: sync, folderPath: url.path) }
    }

    /// `replace(_:with:sync:)` in a folder already open.
    public static func replace(_ name: String, in folder: Int32, with data: Data, sync: Bool, folderPath: String) throws
    {
        let temporary = ".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: folderPath + "/" + temporary, kind: .system(errno)) }
        var failure: Int32?
        // The umask may have taken bits away; the mode is exactly 0600 whatever it is.
        if fchmod(fd, 0o600) != 0 { failure = errno }
        if failure == nil { failure = writeAll(data, to: fd) }
        if failure == nil, sync, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == nil, renameat(folder, temporary, folder, name) != 0 { failure = errno }
        if let failure {
            unlinkat(folder, temporary, 0)
            throw Failure(path: folderPath + "/" + name, kind: .system(failure))
        }
    }

    /// Writes every byte of `data`; the `errno` of a failed write, or nil.
    public static func writeAll(_ data: Data, to fd: Int32) -> Int32? {
        data.withUnsafeBytes { buffer -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }

    /// Why a file could not be read whole.
    public enum ReadFailure: Error, CustomStringConvertible {
        /// Nothing is at the path.
        case missing
        /// A folder, a pipe or a device is at the path.
        case notRegularFile(String)
        /// The file holds more bytes than the limit (its size is not a count of bytes read).
        case tooLarge(String, size: Int64, limit: Int)
        /// The file held more than its size said when it was opened.
        case grewWhileRead(String)
        /// Opening or reading it failed with this `errno`.
        case system(String, Int32)

        /// The path and the problem, for a log line.
        public var description: String {
            switch self {
            case .missing: "no such file"
            case .notRegularFile(let path): "\(path) is not a regular file"
            case .tooLarge(let path, let size, let limit): "\(path) is \(size) bytes, more than the \(limit) it may be"
            case .grewWhileRead(let path): "\(path) grew while it was read"
            case .system(let path, let code): "\(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The contents of the regular file at `url`, when it holds at most `limit` bytes. Its
    /// size is checked before anything is read (a huge or sparse file is refused at once),
    /// and a device or pipe put in its place is refused without waiting on it.
    public static func read(_ url: URL, limit: Int) throws(ReadFailure) -> Data {
        let fd = Glibc.open(url.path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw errno == ENOENT ? .missing : .system(url.path, errno) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .system(url.path, errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(url.path) }
        guard status.st_size <= limit else { throw .tooLarge(url.path, size: Int64(status.st_size), limit: limit) }
        // One byte more than its size: a file that grew since fstat is caught too.
        let size = Int(status.st_size)
        var data = Data(count: size + 1)
        var total = 0
        let failure = data.withUnsafeMutableBytes { buffer -> Int32? in
            while total < buffer.count {
                let count = Glibc.read(fd, buffer.baseAddress! + total, buffer.count - total)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }
                total += count
            }
            return nil
        }
        if let failure { throw .system(url.path, failure) }
        guard total <= size else { throw .grewWhileRead(url.path) }
        data.count = total
        return data
    }
}

/// Its description is its `errorDescription` too, so that messages built from any error
/// (`MediaError.reason`) name the path and the cause.
extension PrivateFolder.Failure: LocalizedError {
    /// The same as `description`.
    public var errorDescription: String? { description }
}
