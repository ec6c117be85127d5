import Foundation
import Logging
import TestKit
import Testing
import ToneGenerator

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// Cover images for a test: distinct one-colour PNGs (and a JPEG), made once.
enum Covers {
    static let red = try! TrackGenerator.image(color: 0xC0_3020)
    static let green = try! TrackGenerator.image(color: 0x30_A040)
    static let blue = try! TrackGenerator.image(color: 0x2040_C0)
    static let jpeg = try! TrackGenerator.image(color: 0xE0_C020, jpeg: true)
}

@Suite("artwork cache")
struct ArtworkCacheTests {
    /// A cache in a folder of its own (the folder itself is created on the first store).
    static func cache(_ folder: TemporaryFolder, maximumBytes: Int = 1 << 20, logger: Logger = LogCapture().logger)
        -> ArtworkCache
    {
        ArtworkCache(folder: folder.path("cache/art"), maximumBytes: maximumBytes, logger: logger)
    }

    static func file(_ url: String?) throws -> URL {
        let url = try #require(url.flatMap(URL.init(string:)))
        #expect(url.isFileURL)
        return url
    }

    static func permissions(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int) & 0o777
    }

    @Test func imageFormatsAreToldByTheirFirstBytes() throws {
        #expect(ImageFormat(magic: Covers.red) == .png)
        #expect(ImageFormat(magic: Covers.jpeg) == .jpeg)
        #expect(ImageFormat(magic: Array("GIF89a\u{1}\u{0}".utf8)) == .gif)
        #expect(ImageFormat(magic: Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        #expect(ImageFormat(magic: Array("BM\u{0}\u{0}\u{0}\u{0}".utf8)) == .bmp)
        #expect(ImageFormat(magic: Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8)) == nil)
        #expect(ImageFormat(magic: garbageBytes) == nil)
        #expect(ImageFormat(magic: [UInt8]()) == nil)
        #expect(ImageFormat(magic: Covers.red.prefix(4)) == nil, "a truncated PNG signature")
    }

    @Test func sha256IsGLibsAndHex() {
        #expect(GLib.sha256(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func storedImagesAreNamedByTheirHashKeptByteForByteAndPrivate() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = Self.cache(folder)
        let url = try Self.file(cache.store(Covers.red))
        #expect(url.deletingLastPathComponent().standardizedFileURL.path == cache.folder.standardizedFileURL.path)
        #expect(url.lastPathComponent == GLib.sha256(Covers.red)! + ".png")
        #expect(try Data(contentsOf: url) == Covers.red)
        #expect(try Self.permissions(url) == 0o600)
        #expect(try Self.permissions(cache.folder) == 0o700)
        #expect(try Self.file(cache.store(Covers.jpeg)).pathExtension == "jpg")
        // The same bytes again: the same file; nothing else is left in the folder.
        #expect(try Self.file(cache.store(Covers.red)) == url)
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.folder.path)
        #expect(names.count == 2, "\(names)")
        #expect(cache.contains(url.absoluteString))
    }

    @Test func aFolderWithWiderPermissionsIsMadePrivate() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = Self.cache(folder)
        try FileManager.default.createDirectory(
            at: cache.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        _ = try Self.file(cache.store(Covers.red))
        #expect(try Self.permissions(cache.folder) == 0o700)
    }

    @Test func bytesThatAreNotAnImageAreNotKept() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = Self.cache(folder)
        #expect(cache.store(garbageBytes) == nil)
        #expect(cache.store(Data()) == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.folder.path))
    }

    @Test func theCacheIsTrimmedOldestFirstNeverTheNewest() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let images = [Covers.red, Covers.green, Covers.blue]
        // Room for two of the three images.
        let cache = Self.cache(folder, maximumBytes: images.map(\.count).sorted().dropFirst().reduce(0, +))
        let red = try Self.file(cache.store(Covers.red))
        let green = try Self.file(cache.store(Covers.green))
        // Red is older than green by its modification time; using it makes it the newer.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: red.path)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -30)], ofItemAtPath: green.path)
        #expect(cache.markUsed(red.absoluteString))
        let blue = try Self.file(cache.store(Covers.blue))
        #expect(FileManager.default.fileExists(atPath: blue.path))
        #expect(FileManager.default.fileExists(atPath: red.path))
        #expect(!FileManager.default.fileExists(atPath: green.path), "the image used longest ago goes first")
        #expect(!cache.contains(green.absoluteString))
        #expect(!cache.markUsed(green.absoluteString))
        // An image larger than the whole bound is still kept while it is the newest.
        let tiny = Self.cache(folder, maximumBytes: 10)
        let kept = try Self.file(tiny.store(Covers.jpeg))
        #expect(FileManager.default.fileExists(atPath: kept.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.folder.path) == [kept.lastPathComponent])
    }

    @Test func anUnwritableFolderGivesNoArtworkAndOneLogLine() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("cache", "not a folder")
        let log = LogCapture()
        let cache = Self.cache(folder, logger: log.logger)
        #expect(cache.store(Covers.red) == nil)
        #expect(cache.store(Covers.green) == nil)
        let lines = log.messages(atLeast: .warning)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("could not keep artwork in \(cache.folder.path)") ?? false, "\(lines)")
        #expect(lines.first?.contains("Not a directory") ?? false, "\(lines)")
    }
}

@Suite("artwork of tracks")
struct TrackArtworkTests {
    static func read(_ file: URL, _ cache: ArtworkCache) throws -> TrackInfo {
        try Discoverer.discoverNow(file.absoluteString, timeout: .seconds(20), artwork: cache).get()
    }

    static func bytes(_ info: TrackInfo) throws -> Data {
        try Data(contentsOf: ArtworkCacheTests.file(info.artworkURL))
    }

    static func track(_ name: String, _ format: TrackGenerator.Format = .flac, pictures: [TrackGenerator.Picture] = [])
        -> TrackGenerator.Track
    {
        TrackGenerator.Track(
            fileName: "\(name).\(format.fileExtension)", title: name, artist: "Artist", album: "Album",
            trackNumber: 1, frequency: 440, seconds: 0.3, format: format, pictures: pictures)
    }

    @Test("the embedded cover of each tag format is read back byte for byte", arguments: TrackGenerator.Format.allCases)
    func embeddedCover(format: TrackGenerator.Format) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let file = try TrackGenerator.generate(
            [Self.track("covered", format, pictures: [.init(Covers.green)])], into: folder.path("music"))[0]
        // Written the format's own way: the picture's bytes as they are, or base64 in a comment.
        let raw = try Data(contentsOf: file)
        switch format {
        case .flac: #expect(raw.range(of: Covers.green) != nil)
        case .mp3: #expect(raw.range(of: Data("APIC".utf8)) != nil && raw.range(of: Covers.green) != nil)
        case .m4a: #expect(raw.range(of: Data("covr".utf8)) != nil && raw.range(of: Covers.green) != nil)
        case .ogg, .opus: #expect(raw.range(of: Data("METADATA_BLOCK_PICTURE".utf8)) != nil)
        }
        let info = try Self.read(file, cache)
        #expect(info.title == "covered", "the other tags are read as before")
        #expect(info.artworkSearched)
        #expect(try Self.bytes(info) == Covers.green)
    }

    /// Not Ogg: GStreamer's Vorbis comment writer keeps only the first picture (the reader,
    /// and the choice among pictures, are the same for every format).
    @Test("the front cover wins over another picture before it", arguments: [TrackGenerator.Format.flac, .mp3])
    func frontCoverPreferred(format: TrackGenerator.Format) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let pictures: [TrackGenerator.Picture] = [
            .init(Covers.red, kind: .backCover), .init(Covers.blue, kind: .frontCover),
        ]
        let file = try TrackGenerator.generate(
            [Self.track("two", format, pictures: pictures)], into: folder.path("music"))[0]
        #expect(try Self.bytes(Self.read(file, cache)) == Covers.blue)
    }

    @Test func withoutAFrontCoverTheFirstPictureIsShown() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let pictures: [TrackGenerator.Picture] = [
            .init(Covers.red, kind: .backCover), .init(Covers.blue, kind: .other),
        ]
        let file = try TrackGenerator.generate([Self.track("back", pictures: pictures)], into: folder.path("music"))[0]
        #expect(try Self.bytes(Self.read(file, cache)) == Covers.red)
    }

    @Test func aSidecarImageIsFoundInAnyCaseBestNameFirst() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let music = folder.path("music")
        let file = try TrackGenerator.generate([Self.track("plain")], into: music)[0]
        try folder.write("music/Folder.PNG", data: Covers.red)
        try folder.write("music/front.png", data: Covers.green)
        try folder.write("music/back.jpg", data: Covers.blue)
        #expect(try Self.bytes(Self.read(file, cache)) == Covers.red, "folder before front")
        try folder.write("music/COVER.JPG", data: Covers.jpeg)
        #expect(
            try Self.bytes(Self.read(file, cache)) == Covers.jpeg, "cover before folder, found once the folder changed")
        // A cover file that is not an image is passed over for the next candidate.
        try FileManager.default.removeItem(at: folder.path("music/COVER.JPG"))
        try folder.write("music/cover.jpeg", data: garbageBytes)
        #expect(try Self.bytes(Self.read(file, cache)) == Covers.red)
    }

    @Test func anEmbeddedCoverWinsOverASidecar() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let file = try TrackGenerator.generate(
            [Self.track("embedded", pictures: [.init(Covers.blue)])], into: folder.path("music"))[0]
        try folder.write("music/cover.png", data: Covers.red)
        #expect(try Self.bytes(Self.read(file, cache)) == Covers.blue)
    }

    @Test func noPictureAndNoSidecarMeansNoArtwork() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cache = ArtworkCacheTests.cache(folder)
        let file = try TrackGenerator.generate([Self.track("bare")], into: folder.path("music"))[0]
        try folder.write("music/covers.png", data: Covers.red)  // not a sidecar name
        let info = try Self.read(file, cache)
        #expect(info.artworkURL == nil)
        #expect(info.artworkSearched)
        // Without a cache, artwork is not looked for at all.
        let plain = try Discoverer.discoverNow(file.absoluteString).get()
        #expect(plain.artworkURL == nil && !plain.artworkSearched)
    }
}
