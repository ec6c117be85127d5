import CLibcShims
import FoundationEssentials
import Glibc
import PlaybackVocabulary

/// What `stat` says of a path (following symbolic links): enough to tell a regular file
/// from a FIFO, a socket or a device without opening it (opening a FIFO blocks until a
/// writer comes, reading a device may never end).
struct FileStatus {
    /// The type of a file, from the `S_IFMT` bits of its mode.
    enum Kind: Equatable {
        case regular, directory, fifo, socket, characterDevice, blockDevice, other

        init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: self = .regular
            case S_IFDIR: self = .directory
            case S_IFIFO: self = .fifo
            case S_IFSOCK: self = .socket
            case S_IFCHR: self = .characterDevice
            case S_IFBLK: self = .blockDevice
            default: self = .other
            }
        }

        /// The kind a directory entry's `d_type` tells, or nil when it does not (a symbolic
        /// link, or a file system that leaves the type unknown).
        init?(directoryEntryType type: UInt8) {
            switch Int(type) {
            case Int(DT_REG): self = .regular
            case Int(DT_DIR): self = .directory
            case Int(DT_FIFO): self = .fifo
            case Int(DT_SOCK): self = .socket
            case Int(DT_CHR): self = .characterDevice
            case Int(DT_BLK): self = .blockDevice
            case Int(DT_LNK), Int(DT_UNKNOWN): return nil
            default: self = .other
            }
        }

        /// The kind as a log line names it ("a FIFO").
        var name: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a folder"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .other: "a special file"
            }
        }
    }

    /// Why `stat` failed, as a log line gives it.
    struct Failure: Error {
        let code: Int32

        var reason: String {
            switch code {
            case ENOENT: "no such file or folder"
            case ELOOP: "a loop of symbolic links"
            case EACCES: "permission denied"
            default: String(cString: strerror(code)).lowercased()
            }
        }
    }

    let kind: Kind
    let identity: FileIdentity
    let size: Int64

    var isDirectory: Bool { kind == .directory }

    init(_ info: stat) {
        kind = Kind(mode: info.st_mode)
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        size = Int64(info.st_size)
    }

    /// Nil when `stat` fails (the path does not exist, a link dangles or loops).
    init?(_ path: String) {
        self.init(Array(path.utf8))
    }

    init?(_ path: [UInt8]) {
        guard case .success(let status) = Self.of(path) else { return nil }
        self = status
    }

    /// `stat` of `path`, or why it failed.
    static func of(_ path: [UInt8]) -> Result<FileStatus, Failure> {
        var info = stat()
        guard MediaSources.withCString(path, { stat($0, &info) }) == 0 else { return .failure(Failure(code: errno)) }
        return .success(FileStatus(info))
    }

    /// Whether anything is at `path`, a dangling or looping symbolic link included (`lstat`).
    static func exists(_ path: [UInt8]) -> Bool {
        var info = stat()
        return MediaSources.withCString(path) { lstat($0, &info) } == 0
    }

    /// Whether the file is one the kernel makes up in `/proc` or `/sys` (however it is
    /// reached: through `/proc/self/root`, a symbolic link, `/dev/fd`). Their files are never
    /// media, and some block a reader for good (`/proc/kmsg`).
    var isKernelFile: Bool {
        KernelFileSystems.devices.contains(identity.device)
    }
}

/// A file, by the device and inode `stat` gives: the same however it is named.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// The devices of the file systems mounted on `/proc` and `/sys`, looked up once. A folder
/// counts only when procfs or sysfs is mounted there: in a chroot or a bare container it is
/// a plain folder of the root file system, whose device every file shares.
private enum KernelFileSystems {
    static let devices: Set<UInt64> = {
        var devices = Set<UInt64>()
        for (path, magic) in [("/proc", 0x9fa0), ("/sys", 0x6265_6572)] {
            var info = stat()
            guard csystem_file_system_type(path) == magic, stat(path, &info) == 0 else { continue }
            devices.insert(UInt64(info.st_dev))
        }
        return devices
    }()
}

/// Where local files enter Quaver: every file handed to GStreamer or read is checked with
/// `stat`, never by opening it first.
enum LocalFiles {
    /// Why the file at `path` is not one to hand to GStreamer, as a log line gives it, or
    /// nil when it is a regular file (symbolic links followed) outside `/proc` and `/sys`.
    static func problem(playing path: [UInt8]) -> String? {
        switch FileStatus.of(path) {
        case .failure(let failure): failure.reason
        case .success(let status): problem(playing: path, status)
        }
    }

    /// Like `problem(playing:)`, for a path already `stat`ed.
    static func problem(playing path: [UInt8], _ status: FileStatus) -> String? {
        isKernelPath(path) ? kernelFile : problem(playing: status)
    }

    /// Like `problem(playing:)`, for a file known by its status only (one already open).
    static func problem(playing status: FileStatus) -> String? {
        if status.isKernelFile { return kernelFile }
        guard status.kind == .regular else { return "not a regular file (\(status.kind.name))" }
        return nil
    }

    private static let kernelFile = "a file of the kernel's /proc or /sys, not media"

    /// Whether `path` (absolute, normalized) is spelled inside `/proc` or `/sys`. Checked as
    /// well as the device: `/proc/self/root` and `/proc/self/cwd` lead out of `/proc` to
    /// ordinary folders, which a playlist has no business reaching that way.
    static func isKernelPath(_ path: [UInt8]) -> Bool {
        for prefix in ["/proc", "/sys"] {
            let bytes = Array(prefix.utf8)
            if path.starts(with: bytes), path.count == bytes.count || path[bytes.count] == UInt8(ascii: "/") {
                return true
            }
        }
        return false
    }

    /// What reading a file gave.
    enum Contents {
        case data(Data)
        /// The first bytes of a file longer than the limit, as many as the limit, when its
        /// start was asked for: `size` is the whole file's, when known.
        case start(Data, size: Int64?)
        /// Not read: why, as a log line gives it.
        case refused(String)
    }

    /// The bytes of the regular file at `path`, when it holds at most `limit` bytes; with
    /// `keepingStart`, the first `limit` bytes of a longer one. It is opened non-blocking (a
    /// FIFO put in its place since it was checked cannot hang the reader) and checked again
    /// once open, so what is read is what was checked.
    static func read(_ path: [UInt8], limit: Int, keepingStart: Bool = false) -> Contents {
        switch FileStatus.of(path) {
        case .failure(let failure): return .refused(failure.reason)
        case .success(let status):
            if let problem = problem(playing: path, status) { return .refused(problem) }
            if status.size > limit, !keepingStart {
                return .refused("\(byteCount(Int(status.size))), over the \(byteCount(limit)) limit")
            }
        }
        let descriptor = MediaSources.withCString(path) { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        guard descriptor >= 0 else { return .refused(FileStatus.Failure(code: errno).reason) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .refused(FileStatus.Failure(code: errno).reason) }
        let status = FileStatus(info)
        if let problem = problem(playing: status) { return .refused(problem) }
        var data = Data()
        data.reserveCapacity(min(Int(status.size), limit) + 1)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        // Up to one byte past the limit: a file that grew past it since the check is told too.
        while data.count <= limit {
            let wanted = min(chunk.count, limit + 1 - data.count)
            let got = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, wanted) }
            if got < 0 {
                if errno == EINTR { continue }
                return .refused(FileStatus.Failure(code: errno).reason)
            }
            if got == 0 { return .data(data) }
            data.append(contentsOf: chunk[0..<got])
        }
        guard keepingStart else { return .refused("over the \(byteCount(limit)) limit") }
        return .start(data.prefix(limit), size: max(status.size, Int64(data.count)))
    }

    /// The folder part of `path`, as NSString's `deletingLastPathComponent` gives it: repeated
    /// slashes count as one and a trailing one is ignored; "/a" gives "/", "a" gives "".
    static func parentPath(_ path: String) -> String {
        var components = path.unicodeScalars.split(separator: "/")
        let root = path.hasPrefix("/") ? "/" : ""
        guard !components.isEmpty else { return root }
        components.removeLast()
        return root + components.map { String(String.UnicodeScalarView($0)) }.joined(separator: "/")
    }

    /// A size as log lines give it: `16 MiB`, `8 KiB`, `912 bytes`.
    static func byteCount(_ bytes: Int) -> String {
        if bytes >= 1 << 20 {
            let mebibytes = Double(bytes) / Double(1 << 20)
            return mebibytes == mebibytes.rounded()
                ? "\(Int(mebibytes)) MiB" : mebibytes.decimalText(places: 1) + " MiB"
        }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
