public import FoundationEssentials
import Glibc
public import Logging

/// Folder scans: the media files under a folder, recursively, in natural order.
extension MediaSources {
    /// The media files under `folder` (named with one of `mediaExtensions`), recursively, in
    /// natural order (`2` before `10`).
    public static func mediaFiles(in folder: URL, logger: Logger) -> [URL] {
        mediaFilePaths(in: folder.path, logger: logger).map { URL(fileURLWithPath: $0) }
    }

    static func mediaFilePaths(in folder: String, logger: Logger) -> [String] {
        var files: [String] = []
        var visited = Set<[UInt8]>()
        collect(Array(folder.utf8), visited: &visited, logger: logger) {
            files.append(String(decoding: $0, as: UTF8.self))
        }
        return files
    }

    /// Hands the media files under `folder` to `found` in natural order, folders in place.
    /// The first is handed over as soon as the folder is listed, before the rest is sorted
    /// (a folder of 100,000 files starts playing sooner).
    static func collect(
        _ folder: [UInt8], visited: inout Set<[UInt8]>, logger: Logger, found: ([UInt8]) -> Void
    ) {
        let real = withCString(folder) { path -> [UInt8] in
            guard let resolved = realpath(path, nil) else { return folder }
            defer { free(resolved) }
            return Array(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(resolved).assumingMemoryBound(to: UInt8.self), count: strlen(resolved)))
        }
        guard visited.insert(real).inserted else { return }  // symlink loops
        if let status = FileStatus(real), let problem = folderProblem(real, status) {
            logger.warning("skipping folder \(String(decoding: folder, as: UTF8.self)): \(problem)")
            return
        }
        guard let directory = withCString(folder, { opendir($0) }) else {
            logger.warning(
                "skipping folder \(String(decoding: folder, as: UTF8.self)): \(String(cString: strerror(errno)))")
            return
        }
        var children: [Child] = []
        while let entry = readdir(directory) {
            // The name as bytes: a file name need not be UTF-8, and its URI must name it.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                let start = UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self)
                return Array(
                    UnsafeBufferPointer(
                        start: start, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))))
            }
            guard name.first != UInt8(ascii: ".") else { continue }  // hidden, and . and ..
            children.append(
                Child(key: NaturalKey(String(decoding: name, as: UTF8.self)), name: name, kind: entry.pointee.d_type))
        }
        closedir(directory)
        let prefix = folder.last == UInt8(ascii: "/") ? folder : folder + [UInt8(ascii: "/")]
        var first: [UInt8]?
        if let earliest = children.min(by: { $0.key < $1.key }), earliest.kind == UInt8(DT_REG),
            isMediaName(earliest.key.name)
        {
            first = earliest.name
            found(prefix + earliest.name)
        }
        children.sort { $0.key < $1.key }
        for child in children where child.name != first {
            let childPath = prefix + child.name
            let isMedia = isMediaName(child.key.name)
            var kind = FileStatus.Kind(directoryEntryType: child.kind)
            var status: FileStatus?
            if kind == nil {
                // A symbolic link, or a file system that does not tell: what it leads to.
                switch FileStatus.of(childPath) {
                case .success(let found):
                    status = found
                    kind = found.kind
                case .failure(let failure):
                    // A dangling link is left out quietly (a library being moved); a loop is
                    // a mistake worth naming.
                    if isMedia, failure.code != ENOENT {
                        logger.warning("skipping \(String(decoding: childPath, as: UTF8.self)): \(failure.reason)")
                    }
                    continue
                }
            }
            if kind == .directory {
                // A link to /proc/self/root or /proc/self/cwd resolves to an ordinary folder
                // (the whole file system): its target as written tells.
                if let target = linkTarget(childPath, in: prefix), LocalFiles.isKernelPath(target) {
                    logger.warning(
                        "skipping folder \(String(decoding: childPath, as: UTF8.self)): a folder of the kernel's /proc or /sys, not media"
                    )
                    continue
                }
                collect(childPath, visited: &visited, logger: logger, found: found)
            } else if isMedia {
                let problem: String?
                if let status {
                    problem = LocalFiles.problem(playing: childPath, status)
                } else {
                    problem =
                        kind == .regular ? nil : "not a regular file (\(kind?.name ?? FileStatus.Kind.other.name))"
                }
                if let problem {
                    logger.warning("skipping \(String(decoding: childPath, as: UTF8.self)): \(problem)")
                } else {
                    found(childPath)
                }
            }
        }
    }

    /// Where the symbolic link at `path` (in the folder `folder`, with its trailing slash)
    /// points, as an absolute normalized path; nil when it is no link.
    private static func linkTarget(_ path: [UInt8], in folder: [UInt8]) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = buffer.withUnsafeMutableBytes { raw in
            withCString(path) { readlink($0, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count) }
        }
        guard count > 0 else { return nil }
        let target = Array(buffer[0..<count])
        return normalized(target.first == UInt8(ascii: "/") ? target : folder + target)
    }

    private struct Child {
        let key: NaturalKey
        let name: [UInt8]
        let kind: UInt8
    }
}
