import DBus
import SeededRandom

// The hostile values of every D-Bus type, and random types, that `HostilePlanner` fills
// its calls with.

// MARK: - Seeded randomness

/// The suite's generator: seeded, so that a run can be replayed.
typealias HostileRandom = SplitMix

// MARK: - Hostile values

/// The hostile values of each type. `canary` is a path that must never come to exist: it is
/// named in every string that would create it if it reached a shell or a GStreamer pipeline.
struct HostileValues {
    let canary: String
    /// A descriptor the test keeps open, sent wherever an `h` goes.
    let descriptor: Int32
    let trackPrefix: String
    let playlistPrefix: String

    static let mebibyte = String(repeating: "a", count: 1 << 20)
    static let percents = String(repeating: "%", count: 64 << 10)

    let doubles: [Double] = [
        .nan, -.nan, .signalingNaN, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 0, -0.0, 1, -1, 0.5, 2, 4, 0.25,
        1e-300, 1e300, -1e300, 1.000_000_000_1, 9.223_372_036_854_775_807e18, -9.223_372_036_854_775_808e18, 100, 0.01,
    ]
    let int64s: [Int64] = [
        .min, .max, .min + 1, .max - 1, 0, -1, 1, 1_000_000, -1_000_000, 10_000_000, 60_000_000, -60_000_000,
        .max / 2, .min / 2, 1 << 53 + 1, -(1 << 53 + 1), 9_999_999, 5_000_000,
    ]
    let uint64s: [UInt64] = [0, 1, .max, .max - 1, 1 << 63, UInt64(Int64.max)]
    let int32s: [Int32] = [.min, .max, 0, -1, 1, 1 << 30]
    let uint32s: [UInt32] = [0, 1, .max, .max - 1, 1 << 31, 20, 1_000_000]
    let int16s: [Int16] = [.min, .max, 0, -1, 1]
    let uint16s: [UInt16] = [0, 1, .max]
    let bytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF]

    let controlCharacters = String(
        String.UnicodeScalarView((1...31).compactMap(Unicode.Scalar.init) + [Unicode.Scalar(0x7F)!]))
    /// Pools, computed once.
    private(set) var strings: [String] = []
    private(set) var uris: [String] = []
    private(set) var unsupportedURIs: [String] = []
    private(set) var objectPaths: [String] = []

    init(canary: String, descriptor: Int32, trackPrefix: String, playlistPrefix: String) {
        self.canary = canary
        self.descriptor = descriptor
        self.trackPrefix = trackPrefix
        self.playlistPrefix = playlistPrefix
        unsupportedURIs = makeUnsupportedURIs()
        uris = makeURIs()
        strings = makeStrings()
        objectPaths = makeObjectPaths()
    }

    /// Plain hostile strings (cheap ones; the 1 MiB one is chosen rarely, see `string`).
    private func makeStrings() -> [String] {
        [
            "", " ", "\u{FFFD}", String(repeating: "\u{FFFD}", count: 4096), controlCharacters,
            "\u{1B}[2J\u{1B}[31mred\u{7}\u{8}\u{8}", "\r\nquaver[critical]: forged log line\r\n",
            "\u{202E}evil\u{202C}", "\u{FEFF}", "🎵🎶", "e\u{301}\u{301}\u{301}\u{301}", "\u{10FFFF}\u{E000}",
            "%s%s%s%n%x%p", "{}\\\"'`<>&;|", "None", "Track", "Playlist", "none", "PLAYLIST", "Track ",
            "Alphabetical", "CreationDate", "ModifiedDate", "LastPlayDate", "UserDefined", "User",
            "org.mpris.MediaPlayer2.Player", "org.freedesktop.DBus.Properties", "Volume", "Rate", "Position",
            "../../../../etc/passwd", "/etc/passwd", "~/.bashrc", "\\\\server\\share", "a\u{0}b",
        ] + uris
    }

    /// URIs: unsupported schemes, shell and GStreamer pipeline syntax, and odd file URIs.
    /// None may create `canary`.
    private func makeURIs() -> [String] {
        unsupportedURIs + [
            "file:///nonexistent-quaver-hostile/track.flac",
            "file:///nonexistent-quaver-hostile/\nquaver[critical]: forged log line\n.flac",
            "http://127.0.0.1:1/\r\nquaver[critical]: forged log line",
            "file:///nonexistent-quaver-hostile/a|touch \(canary)|.flac",
            "file:///tmp/x.flac!audiotestsrc ! filesink location=\(canary)",
            "file://\(canary)",
            "file:///$(touch \(canary))",
            "file:///`touch \(canary)`.flac",
            "file:///etc/passwd", "file:///dev/null", "file://localhost/etc/hostname",
            "file:", "file://", "file:relative/path.flac", "FILE:///nonexistent.FLAC",
            "file:///" + Self.percents.prefix(4096), "file:///%00%2F..%2F..%2Fetc%2Fpasswd",
            "http://127.0.0.1:1/a.flac", "https://127.0.0.1:1/a.flac",
            "http://127.0.0.1:1/a ! filesink location=\(canary)",
            "http://127.0.0.1:1/$(touch \(canary)).flac", "http:", "https:",
            "http://[::1:1/", "http://user:pass@127.0.0.1:1/%%%%",
        ]
    }

    /// URIs whose scheme is not in SupportedUriSchemes (or that have none): always InvalidArgs.
    private func makeUnsupportedURIs() -> [String] {
        [
            "ftp://127.0.0.1:1/a.flac", "ftp:", "javascript:alert(1)", "javascript:",
            "data:audio/flac;base64,ZkxhQwAAACI=",
            "data:,", "smb://127.0.0.1/share/a.flac", "rtsp://127.0.0.1:1/a", "fd://0", "appsrc://", "pipe:///bin/sh",
            "gopher://x", "about:blank", "mailto:a@b", "x-evil://a", "audiotestsrc ! fakesink",
            "audiotestsrc ! filesink location=\(canary)", "audiotestsrc ! filesink location=/tmp/pwned",
            "filesrc location=/etc/passwd ! filesink location=\(canary)",
            "$(touch \(canary))", "`touch \(canary)`", "; touch \(canary)", "| touch \(canary)",
            "/nonexistent-quaver-hostile/track.flac", "nonexistent.flac", "", ":", "://", "file", "http//x",
            "fil\u{0}e:///etc/passwd", "\u{FFFD}:///x", " file:///etc/passwd", "file :///etc/passwd",
        ]
    }

    private func makeObjectPaths() -> [String] {
        let deep = "/" + Array(repeating: "a", count: 2000).joined(separator: "/")
        return [
            "/", "/org", "/org/mpris", "/org/mpris/MediaPlayer2", "/org/mpris/MediaPlayer2/TrackList/NoTrack",
            "/org/mpris/MediaPlayer2/Player", "/org/freedesktop/DBus", deep, "/_",
            "/\(String(repeating: "x", count: 4000))",
            trackPrefix, "\(trackPrefix)/0", "\(trackPrefix)/1", "\(trackPrefix)/2", "\(trackPrefix)/3",
            "\(trackPrefix)/4",
            "\(trackPrefix)/18446744073709551615", "\(trackPrefix)/18446744073709551616", "\(trackPrefix)/000001",
            "\(trackPrefix)/1/2", "\(trackPrefix)/1_", "\(trackPrefix)_1", "\(trackPrefix)/99999999999999999999999999",
            playlistPrefix, "\(playlistPrefix)/0", "\(playlistPrefix)/1", "\(playlistPrefix)/18446744073709551615",
            "\(playlistPrefix)/99999999999999999999999999", "\(playlistPrefix)/x",
        ]
    }

    let signatures: [String] =
        [
            "", "s", "v", "a{sv}", "(oss)", "(b(oss))", "aa{sv}", String(repeating: "a", count: 32) + "i",
            String(repeating: "(", count: 32) + "i" + String(repeating: ")", count: 32),
            String(repeating: "i", count: 255), "h", "ah",
        ]

    /// A string: mostly from `strings`, rarely 64 KiB of "%" or 1 MiB.
    func string(_ random: inout HostileRandom) -> String {
        if random.chance(0.004) { return Self.mebibyte }
        if random.chance(0.002) { return "file:///" + Self.mebibyte }
        if random.chance(0.01) { return Self.percents }
        return random.pick(strings)
    }

    /// A hostile value of exactly `type`. `depth` is how deep it sits in its argument (0: it
    /// is the argument); it keeps generated containers small.
    func value(of type: DataType, _ random: inout HostileRandom, depth: Int = 0) -> Value {
        switch type {
        case .byte: return .byte(random.pick(bytes))
        case .boolean: return .boolean(random.chance(0.5))
        case .int16: return .int16(random.pick(int16s))
        case .uint16: return .uint16(random.pick(uint16s))
        case .int32: return .int32(random.pick(int32s))
        case .uint32: return .uint32(random.pick(uint32s))
        case .int64: return .int64(random.pick(int64s))
        case .uint64: return .uint64(random.pick(uint64s))
        case .double: return .double(random.pick(doubles))
        case .string: return .string(string(&random))
        case .objectPath: return .objectPath(ObjectPath(random.pick(objectPaths))!)
        case .signature: return .signature(try! Signature(random.pick(signatures)))
        case .unixFD: return .unixFD(descriptor)
        case .variant:
            // Deeply nested only as a whole argument: inside anything else it would nest
            // deeper than a message may (see `HostilePlanner.deepValues` for that).
            if depth == 0 && random.chance(0.05) {
                return Self.nestedVariant(depth: random.int(2..<65), around: .double(.nan))
            }
            let inner = Self.randomType(&random, depth: depth + 1)
            return .variant(value(of: inner, &random, depth: depth + 1))
        case .array(let element):
            let count: Int
            if element == .objectPath && random.chance(0.03) {
                count = random.chance(0.1) ? 20_000 : 2_000  // huge `ao`
            } else {
                count = depth > 2 || random.chance(0.3) ? 0 : random.int(1..<4)
            }
            return .array(element, (0..<count).map { _ in value(of: element, &random, depth: depth + 1) })
        case .dictionary(let key, let valueType):
            let count = depth > 2 || random.chance(0.3) ? 0 : random.int(1..<4)
            return .dictionary(
                key: key, value: valueType,
                (0..<count).map { _ in
                    Value.DictionaryEntry(
                        value(of: key, &random, depth: depth + 2), value(of: valueType, &random, depth: depth + 2))
                })
        case .structure(let fields):
            return .structure(fields.map { value(of: $0, &random, depth: depth + 1) })
        }
    }

    /// Every hostile value of a basic type (a few random ones of a container type).
    func all(of type: DataType, _ random: inout HostileRandom) -> [Value] {
        switch type {
        case .byte: bytes.map(Value.byte)
        case .boolean: [.boolean(false), .boolean(true)]
        case .int16: int16s.map(Value.int16)
        case .uint16: uint16s.map(Value.uint16)
        case .int32: int32s.map(Value.int32)
        case .uint32: uint32s.map(Value.uint32)
        case .int64: int64s.map(Value.int64)
        case .uint64: uint64s.map(Value.uint64)
        case .double: doubles.map(Value.double)
        case .string: (strings + [Self.mebibyte, Self.percents]).map(Value.string)
        case .objectPath: objectPaths.map { .objectPath(ObjectPath($0)!) }
        case .signature: signatures.map { .signature(try! Signature($0)) }
        default: (0..<8).map { _ in value(of: type, &random) }
        }
    }

    /// `depth` variants, one inside the other, around `core` (depth 1 is `.variant(core)`).
    static func nestedVariant(depth: Int, around core: Value) -> Value {
        var value = core
        for _ in 0..<depth { value = .variant(value) }
        return value
    }

    static let basicTypes: [DataType] = [
        .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath, .signature,
        .unixFD,
    ]

    /// A random complete type: mostly basic, sometimes a container, rarely very deep.
    static func randomType(_ random: inout HostileRandom, depth: Int = 0) -> DataType {
        if depth == 0 && random.chance(0.01) {
            // 32 arrays in a row: as deep as a signature may go.
            var type = DataType.int32
            for _ in 0..<32 { type = .array(type) }
            return type
        }
        let roll = random.int(0..<100)
        if depth >= 3 || roll < 65 { return random.pick(basicTypes + [.variant]) }
        if roll < 78 { return .array(randomType(&random, depth: depth + 1)) }
        if roll < 88 { return .dictionary(key: random.pick(basicTypes), value: randomType(&random, depth: depth + 1)) }
        return .structure((0..<random.int(1..<4)).map { _ in randomType(&random, depth: depth + 1) })
    }

    /// A random type whose signature differs from `type`'s.
    static func differentType(from type: DataType, _ random: inout HostileRandom) -> DataType {
        while true {
            let candidate = randomType(&random)
            if candidate.signature != type.signature { return candidate }
        }
    }
}
