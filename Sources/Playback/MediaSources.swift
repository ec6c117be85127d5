public import Foundation
public import Logging

/// Turns what a user names (files, folders, playlists, URIs) into a list of playable URIs.
public enum MediaSources {
    /// File extensions treated as audio when a folder is scanned.
    public static let audioExtensions: Set<String> = [
        "mp3", "flac", "ogg", "oga", "opus", "m4a", "m4b", "mp4", "aac", "wav", "wave", "aif", "aiff",
        "wma", "mka", "webm", "ape", "wv", "mpc", "spx", "ac3", "dsf", "alac",
    ]
    public static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls"]
    public static let supportedSchemes = ["file", "http", "https"]

    /// Expands each argument in order: a folder recursively in natural order, a playlist into
    /// its entries, a file or URI as itself. Problems are logged naming the argument; they
    /// never stop the rest.
    public static func expand(_ arguments: [String], relativeTo base: URL? = nil, logger: Logger) -> [String] {
        var result: [String] = []
        for argument in arguments {
            result += expand(argument, relativeTo: base, depth: 0, logger: logger)
        }
        return result
    }

    static func expand(_ argument: String, relativeTo base: URL?, depth: Int, logger: Logger) -> [String] {
        guard depth < 8 else {
            logger.warning("skipping \(argument): playlists nested too deeply")
            return []
        }
        let path = localURL(argument, relativeTo: base)
        // "Interlude: Reprise.flac" names a file, not a URI with the scheme "interlude".
        let isExistingPath = !argument.contains("://") && FileManager.default.fileExists(atPath: path.path)
        if !isExistingPath, let scheme = scheme(of: argument) {
            guard supportedSchemes.contains(scheme) else {
                logger.warning("skipping \(argument): unsupported URI scheme '\(scheme)' (supported: \(supportedSchemes.joined(separator: ", ")))")
                return []
            }
            guard scheme == "file" else { return [argument] }
            guard let url = URL(string: argument), url.isFileURL else {
                logger.warning("skipping \(argument): not a valid file URI")
                return []
            }
            return expandFile(url.standardizedFileURL, argument: argument, depth: depth, logger: logger)
        }
        return expandFile(path, argument: argument, depth: depth, logger: logger)
    }

    /// A path argument as a file URL: absolute, `~/`, or relative to `base` (else the
    /// current folder).
    private static func localURL(_ argument: String, relativeTo base: URL?) -> URL {
        let url: URL
        if argument.hasPrefix("/") {
            url = URL(fileURLWithPath: argument)
        } else if argument.hasPrefix("~/") {
            url = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(String(argument.dropFirst(2)))
        } else {
            let directory = base ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            url = directory.appendingPathComponent(argument)
        }
        return url.standardizedFileURL
    }

    private static func expandFile(_ url: URL, argument: String, depth: Int, logger: Logger) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            logger.warning("skipping \(argument): no such file or folder")
            return []
        }
        if isDirectory.boolValue {
            let files = audioFiles(in: url, logger: logger)
            if files.isEmpty { logger.warning("\(argument): no audio files found in this folder") }
            return files.map { $0.absoluteString }
        }
        if playlistExtensions.contains(url.pathExtension.lowercased()) {
            return playlistEntries(url, logger: logger).flatMap {
                expand($0, relativeTo: url.deletingLastPathComponent(), depth: depth + 1, logger: logger)
            }
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            logger.warning("skipping \(argument): permission denied")
            return []
        }
        return [url.absoluteString]
    }

    /// The audio files under `folder`, recursively, in natural order (`2` before `10`).
    public static func audioFiles(in folder: URL, logger: Logger) -> [URL] {
        var files: [URL] = []
        var visited = Set<String>()
        collect(folder, into: &files, visited: &visited, logger: logger)
        return files
    }

    private static func collect(_ folder: URL, into files: inout [URL], visited: inout Set<String>, logger: Logger) {
        let real = folder.resolvingSymlinksInPath().path
        guard visited.insert(real).inserted else { return }  // symlink loops
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        } catch {
            logger.warning("skipping folder \(folder.path): \(error.localizedDescription)")
            return
        }
        for name in names.sorted(by: naturalOrder) where !name.hasPrefix(".") {
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                collect(url, into: &files, visited: &visited, logger: logger)
            } else if audioExtensions.contains(url.pathExtension.lowercased()) {
                files.append(url)
            }
        }
    }

    /// Natural order: case-insensitive, with runs of digits compared as numbers.
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        let x = Array(a.lowercased().unicodeScalars), y = Array(b.lowercased().unicodeScalars)
        var i = 0, j = 0
        while i < x.count && j < y.count {
            if x[i].properties.numericType == .decimal && y[j].properties.numericType == .decimal, x[i].isASCII, y[j].isASCII {
                var endI = i, endJ = j
                while endI < x.count, x[endI].isASCII, x[endI].properties.numericType == .decimal { endI += 1 }
                while endJ < y.count, y[endJ].isASCII, y[endJ].properties.numericType == .decimal { endJ += 1 }
                let numberX = String(String.UnicodeScalarView(x[i..<endI])).drop { $0 == "0" }
                let numberY = String(String.UnicodeScalarView(y[j..<endJ])).drop { $0 == "0" }
                if numberX.count != numberY.count { return numberX.count < numberY.count }
                if numberX != numberY { return numberX < numberY }
                i = endI
                j = endJ
            } else {
                if x[i] != y[j] { return x[i].value < y[j].value }
                i += 1
                j += 1
            }
        }
        if x.count - i != y.count - j { return x.count - i < y.count - j }
        return a < b
    }

    /// The entries of an `.m3u`/`.m3u8`/`.pls` file, as written (paths or URIs).
    public static func playlistEntries(_ url: URL, logger: Logger) -> [String] {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            logger.warning("skipping playlist \(url.path): cannot read it")
            return []
        }
        var text = String(decoding: data, as: UTF8.self)
        if text.unicodeScalars.first == "\u{FEFF}" { text.unicodeScalars.removeFirst() }  // a byte order mark
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        if url.pathExtension.lowercased() == "pls" {
            var entries: [(Int, String)] = []
            for line in lines {
                let lower = line.lowercased()
                guard lower.hasPrefix("file"), let equals = line.firstIndex(of: "=") else { continue }
                let number = Int(line[line.index(line.startIndex, offsetBy: 4)..<equals]) ?? Int.max
                entries.append((number, String(line[line.index(after: equals)...]).trimmingCharacters(in: .whitespaces)))
            }
            return entries.sorted { $0.0 < $1.0 }.map(\.1).filter { !$0.isEmpty }
        }
        return lines.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The lower-cased scheme of a URI (`file`, `http`), or nil for a plain path.
    public static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        let candidate = text[..<colon]
        guard let first = candidate.first, first.isLetter, first.isASCII,
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
            text[text.index(after: colon)...].hasPrefix("//") || candidate.count > 1
        else { return nil }
        return candidate.lowercased()
    }

    /// A readable name for a URI in log lines: the path for files, the URI otherwise.
    public static func displayName(_ uri: String) -> String {
        if let url = URL(string: uri), url.isFileURL { return url.path }
        return uri
    }
}
