import FoundationEssentials
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer
import PlaybackVocabulary

/// Defaults from `$XDG_CONFIG_HOME/quaver/quaver.conf`; command-line options override them.
///
/// One `key = value` per line; lines starting with `#` are comments; `~` at the start of a folder means the
/// home folder. Unknown keys and bad values are errors that name the line and the key, so a
/// typo never silently does nothing.
///
/// ```
/// audio-sink = pulsesink              (or: output = snapcast:/run/snapserver/quaver)
/// music-folder = ~/Music
/// resume = yes
/// minimum-rate = 0.5
/// maximum-rate = 2.0
/// instance = new
/// replaygain = auto
/// replaygain-preamp = 0
/// replaygain-clipping = peak
/// replaygain-fallback = -3
/// replaygain-analysis = yes
/// ```
///
/// The `replaygain` keys are read again on SIGHUP and apply from the next track; the others
/// take a restart.
struct Config: Equatable {
    /// What a second `quaver` does when one already owns the bus name.
    enum InstancePolicy: String, CaseIterable {
        /// Hand the paths named to the running Quaver (queued after its current track, the
        /// first playing) and exit 0; with nothing named, say it runs and exit 0.
        case handOver = "hand-over"
        /// Start anyway, as `org.mpris.MediaPlayer2.quaver.instance<PID>`.
        case new
        /// Say that Quaver is already running and exit 0, handing nothing over.
        case quit
    }

    var audioSink: String?
    /// Where the audio goes instead of `audioSink`'s sink.
    var output: OutputSpec?
    var musicFolder: URL?
    var resume = true
    var minimumRate = 0.5
    var maximumRate = 2.0
    var instance = InstancePolicy.handOver
    var volume: Double?
    var playlistsFolder: URL?
    var loudness = LoudnessSettings()

    /// The playback rates Quaver offers at most: scaletempo keeps the pitch well within
    /// them, and a rate far outside (a tiny one from a typo) breaks GStreamer's pipeline.
    /// The configured range, the saved rate and every rate requested lie inside.
    static let rateLimits: ClosedRange<Double> = 0.25...4

    static let keys =
        [
            "audio-sink", "output", "music-folder", "playlists-folder", "resume", "minimum-rate", "maximum-rate",
            "instance",
            "volume",
        ] + loudnessKeys

    /// The keys read again on SIGHUP.
    static let loudnessKeys = [
        "replaygain", "replaygain-preamp", "replaygain-clipping", "replaygain-fallback", "replaygain-analysis",
    ]

    struct ParseError: Error, CustomStringConvertible {
        var file: String
        var line: Int
        var key: String?
        var reason: String
        var description: String {
            "\(file):\(line): \(key.map { "\"\($0)\": " } ?? "")\(reason)"
        }
    }

    static var defaultFile: URL {
        Paths.config.appendingPathComponent("quaver/quaver.conf")
    }

    /// The configuration in `file`; the defaults when it does not exist.
    static func load(from file: URL = defaultFile, home: URL = Paths.home) throws -> Config {
        guard FileManager.default.fileExists(atPath: file.path) else { return Config() }
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw ParseError(file: file.path, line: 0, key: nil, reason: "cannot read it as UTF-8 text")
        }
        return try parse(text, file: file.path, home: home)
    }

    static func parse(_ text: String, file: String, home: URL) throws -> Config {
        var config = Config()
        var seen: Set<String> = []
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ParseError(
                    file: file, line: number, key: nil, reason: "expected \"key = value\", found \"\(line.prefix(80))\""
                )
            }
            let key = line[..<equals].trimmingSpaces()
            let value = line[line.index(after: equals)...].trimmingSpaces()
            func fail(_ reason: String) -> ParseError { ParseError(file: file, line: number, key: key, reason: reason) }
            guard keys.contains(key) else {
                throw fail("unknown key; the keys are \(keys.joined(separator: ", "))")
            }
            guard seen.insert(key).inserted else { throw fail("set twice") }
            guard !value.isEmpty else { throw fail("no value") }
            switch key {
            case "audio-sink":
                guard config.output == nil else { throw fail("set beside output; set one of them") }
                config.audioSink = value
            case "output":
                guard config.audioSink == nil else { throw fail("set beside audio-sink; set one of them") }
                do {
                    config.output = try OutputSpec(parsing: value)
                } catch {
                    throw fail("\(error)")
                }
            case "music-folder":
                config.musicFolder =
                    try folder(value, home: home) ?? { throw fail("must be an absolute path or start with ~/") }()
            case "playlists-folder":
                config.playlistsFolder =
                    try folder(value, home: home) ?? { throw fail("must be an absolute path or start with ~/") }()
            case "resume":
                guard let flag = boolean(value) else { throw fail("must be yes or no, not \"\(value)\"") }
                config.resume = flag
            case "minimum-rate", "maximum-rate":
                guard let rate = Double(value), rateLimits.contains(rate) else {
                    throw fail(
                        "must be a number from \(rateLimits.lowerBound) to \(rateLimits.upperBound), not \"\(value)\"")
                }
                // The range must hold normal speed: each bound is checked on its own line.
                if key == "minimum-rate" {
                    guard rate <= 1 else {
                        throw fail("must be at most 1 (the range holds normal speed), not \"\(value)\"")
                    }
                    config.minimumRate = rate
                } else {
                    guard rate >= 1 else {
                        throw fail("must be at least 1 (the range holds normal speed), not \"\(value)\"")
                    }
                    config.maximumRate = rate
                }
            case "instance":
                guard let policy = InstancePolicy(rawValue: value) else {
                    throw fail(
                        "must be \(InstancePolicy.allCases.map(\.rawValue).joined(separator: " or ")), not \"\(value)\""
                    )
                }
                config.instance = policy
            case "volume":
                guard let volume = Double(value), volume.isFinite, (0...1).contains(volume) else {
                    throw fail("must be a number from 0 to 1, not \"\(value)\"")
                }
                config.volume = volume
            case "replaygain":
                guard let mode = LoudnessSettings.Mode(rawValue: value) else {
                    throw fail(
                        "must be \(LoudnessSettings.Mode.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\""
                    )
                }
                config.loudness.mode = mode
            case "replaygain-preamp", "replaygain-fallback":
                let range = key == "replaygain-preamp" ? LoudnessSettings.preampRange : LoudnessSettings.fallbackRange
                guard let gain = decibels(value, in: range) else {
                    throw fail("must be a gain in dB from \(range.lowerBound) to \(range.upperBound), not \"\(value)\"")
                }
                if key == "replaygain-preamp" {
                    config.loudness.preamp = gain
                } else {
                    config.loudness.fallbackGain = gain
                }
            case "replaygain-clipping":
                guard let clipping = LoudnessSettings.Clipping(rawValue: value) else {
                    throw fail(
                        "must be \(LoudnessSettings.Clipping.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\""
                    )
                }
                config.loudness.clipping = clipping
            case "replaygain-analysis":
                guard let flag = boolean(value) else { throw fail("must be yes or no, not \"\(value)\"") }
                config.loudness.analysis = flag
            default:
                break
            }
        }
        return config
    }

    /// A gain in dB within `range`: a number, optionally followed by `dB`.
    static func decibels(_ value: String, in range: ClosedRange<Double>) -> Double? {
        var number = value
        if number.lowercased().hasSuffix("db") { number = number.dropLast(2).trimmingSpaces() }
        guard let gain = Double(number), gain.isFinite, range.contains(gain) else { return nil }
        return gain
    }

    private static func boolean(_ value: String) -> Bool? {
        switch value.lowercased() {
        case "yes", "true", "on", "1": true
        case "no", "false", "off", "0": false
        default: nil
        }
    }

    private static func folder(_ value: String, home: URL) -> URL? {
        if value == "~" { return home }
        if value.hasPrefix("~/") { return home.appendingPathComponent(String(value.dropFirst(2)), isDirectory: true) }
        if value.hasPrefix("/") { return URL(fileURLWithPath: value, isDirectory: true) }
        return nil
    }
}
