import FoundationEssentials
import Media
import PlaybackPlayer
import PlaybackVocabulary

/// The XDG base and user directories Quaver uses.
enum Paths {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var home: URL {
        URL(
            fileURLWithPath: environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path,
            isDirectory: true)
    }

    static func base(_ variable: String, default relative: String) -> URL {
        if let value = environment[variable], value.hasPrefix("/") {
            return URL(fileURLWithPath: value, isDirectory: true)
        }
        return home.appendingPathComponent(relative, isDirectory: true)
    }

    static var cache: URL {
        base("XDG_CACHE_HOME", default: ".cache").appendingPathComponent("quaver", isDirectory: true)
    }
    /// Cover images for clients (a folder of its own: the demo tracks are in the cache too).
    static var artwork: URL { cache.appendingPathComponent("art", isDirectory: true) }
    static var config: URL { base("XDG_CONFIG_HOME", default: ".config") }
    static var state: URL {
        base("XDG_STATE_HOME", default: ".local/state").appendingPathComponent("quaver", isDirectory: true)
    }
    static var data: URL { base("XDG_DATA_HOME", default: ".local/share") }

    /// `XDG_MUSIC_DIR` from `user-dirs.dirs`, else `~/Music`.
    static var music: URL {
        let file = config.appendingPathComponent("user-dirs.dirs")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_MUSIC_DIR=") {
                var value = line.dropFirst("XDG_MUSIC_DIR=".count).trimming { $0 == "\"" }
                value = value.replacing("$HOME", with: home.path)
                if value.hasPrefix("/") { return URL(fileURLWithPath: value, isDirectory: true) }
            }
        }
        return home.appendingPathComponent("Music", isDirectory: true)
    }
}
