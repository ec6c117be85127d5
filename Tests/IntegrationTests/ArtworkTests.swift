import DBus
import Foundation
import TestKit
import Testing

/// `mpris:artUrl` from a running quaver: the embedded cover of each tag format, a sidecar
/// image, or no key at all; in the track's first Metadata, or in exactly one later update;
/// never a stale one, and always a file that exists, private to the user.
@Suite("artwork")
@MainActor
struct ArtworkTests {
    static let trackID = "mpris:trackid"
    static let artURL = "mpris:artUrl"

    /// The Metadata maps published since signal `from`, in order.
    static func publishedMetadata(_ session: Session, after from: Int = 0) -> [[String: Value]] {
        session.signals.dropFirst(from).compactMap { signal in
            guard signal.member == "PropertiesChanged", signal.changedInterface == "org.mpris.MediaPlayer2.Player"
            else { return nil }
            return signal.changed["Metadata"]?.stringVariantDictionary
        }
    }

    /// Waits for a Metadata naming `track` (by `xesam:url`) and returns its `mpris:trackid`.
    @discardableResult
    static func waitForTrack(_ track: URL, in session: Session, after from: Int) async throws -> String {
        // A track that was current when the name appeared (a slow start owns the name before
        // playback starts) is in the state a client reads then, not in a signal.
        let announced = session.signals.dropFirst(from).contains { $0.changed["Metadata"] != nil }
        if from == 0, !announced, let current = try? await session.metadata(),
            current["xesam:url"]?.string == track.absoluteString,
            let id = current[trackID]?.objectPath?.rawValue
        {
            return id
        }
        let signal = try await session.waitForPlayerChange(after: from, "Metadata of \(track.lastPathComponent)") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string == track.absoluteString
        }
        return try #require(signal.changed["Metadata"]?.stringVariantDictionary?[trackID]?.objectPath?.rawValue)
    }

    /// The Metadata published for one track (by its trackid) since signal `from`.
    static func metadata(of id: String, in session: Session, after from: Int = 0) -> [[String: Value]] {
        publishedMetadata(session, after: from).filter { $0[trackID]?.objectPath?.rawValue == id }
    }

    /// The cached image an art URL names: in the session's cache, 0600 in a 0700 folder.
    static func artFile(_ url: String?, in session: Session, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> URL
    {
        let url = try #require(url.flatMap(URL.init(string:)), "no mpris:artUrl", sourceLocation: sourceLocation)
        #expect(url.isFileURL, sourceLocation: sourceLocation)
        let folder = session.home.appendingPathComponent(".cache/quaver/art")
        #expect(
            url.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path,
            sourceLocation: sourceLocation)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600, sourceLocation: sourceLocation)
        let folderAttributes = try FileManager.default.attributesOfItem(atPath: folder.path)
        #expect(
            (folderAttributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o700, sourceLocation: sourceLocation)
        return url
    }

    /// Every art URL published since signal `from` names a file that exists.
    static func expectPublishedArtExists(
        _ session: Session, after from: Int = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for metadata in publishedMetadata(session, after: from) {
            guard let url = metadata[artURL]?.string else { continue }
            #expect(
                URL(string: url).map { FileManager.default.fileExists(atPath: $0.path) } ?? false,
                "published \(url), which does not exist", sourceLocation: sourceLocation)
        }
    }

    /// Pauses and plays again, and waits for both: gives a late or stale update, had the
    /// commands before left one on its way, the time to show itself before the checks.
    static func roundTrip(_ session: Session) async throws {
        var mark = session.signals.count
        _ = try await session.call("Pause")
        try await session.waitForStatus("Paused", after: mark)
        mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing", after: mark)
    }

    @Test("the embedded cover of FLAC, MP3, M4A, Ogg Vorbis and Opus tracks is in each one's first Metadata")
    func embeddedCoverOfEachFormat() async throws {
        let formats = ["flac", "mp3", "m4a", "ogg", "opus"]
        var tracks: [(track: URL, cover: Data)] = []
        for format in formats { tracks += try await TestMedia.coveredTracks(count: 1, seconds: 30, format: format) }
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.track.path))
        var mark = 0
        for (index, (track, cover)) in tracks.enumerated() {
            let id = try await Self.waitForTrack(track, in: session, after: mark)
            let first = try #require(Self.metadata(of: id, in: session, after: mark).first)
            let file = try Self.artFile(first[Self.artURL]?.string, in: session)
            #expect(
                try Data(contentsOf: file) == cover,
                "\(formats[index]): the cached image is the embedded one, byte for byte")
            mark = session.signals.count
            if index < tracks.count - 1 { _ = try await session.call("Next") }
        }
        try await Self.roundTrip(session)
        // One artwork per track: no Metadata of a track changed its art later.
        for metadata in Self.publishedMetadata(session) {
            let id = metadata[Self.trackID]?.objectPath?.rawValue ?? "?"
            let arts = Set(Self.metadata(of: id, in: session).map { $0[Self.artURL]?.string ?? "" })
            #expect(arts.count == 1, "\(id) was published with \(arts)")
        }
        Self.expectPublishedArtExists(session)
        #expect(
            try await session.playerctl("metadata", "mpris:artUrl")
                == Self.publishedMetadata(session).last?[Self.artURL]?.string)
    }

    @Test("a sidecar cover image in the track's folder, any case, when nothing is embedded")
    func sidecarImage() async throws {
        let plain = try await TestMedia.tracks(count: 1, seconds: 30)
        let cover = try await TestMedia.coveredTracks(count: 2, seconds: 30)[1].cover
        let session = try await Session()
        defer { session.stop() }
        let album = session.bus.directory.appendingPathComponent("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        let track = album.appendingPathComponent(plain[0].lastPathComponent)
        try FileManager.default.copyItem(at: plain[0], to: track)
        try cover.write(to: album.appendingPathComponent("Folder.PNG"))
        try await session.launch([track.path])
        let id = try await Self.waitForTrack(track, in: session, after: 0)
        let first = try #require(Self.metadata(of: id, in: session).first)
        #expect(try Data(contentsOf: Self.artFile(first[Self.artURL]?.string, in: session)) == cover)
        Self.expectPublishedArtExists(session)
    }

    @Test("a track with no picture and no sidecar has no mpris:artUrl at all")
    func noArtwork() async throws {
        let plain = try await TestMedia.tracks(count: 1, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([plain[0].path])
        try await session.waitForStatus("Playing")
        let metadata = try await session.metadata()
        #expect(metadata["xesam:title"] == .string("Track 1"))
        #expect(metadata[Self.artURL] == nil, "\(metadata)")
        #expect(Self.publishedMetadata(session).allSatisfy { $0[Self.artURL] == nil })
        #expect(!FileManager.default.fileExists(atPath: session.home.appendingPathComponent(".cache/quaver/art").path))
    }

    @Test("ten rapid Next calls end with the art of the current track, and no stale update after it")
    func rapidNext() async throws {
        let tracks = try await TestMedia.coveredTracks(count: 12, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.track.path))
        try await session.waitForStatus("Playing")
        try await Self.waitForTrack(tracks[0].track, in: session, after: 0)
        let mark = session.signals.count
        for _ in 0..<10 { _ = try await session.call("Next") }
        let final = tracks[10]
        let id = try await Self.waitForTrack(final.track, in: session, after: mark)
        try await Self.roundTrip(session)
        let published = Self.publishedMetadata(session, after: mark)
        let firstOfFinal = try #require(published.firstIndex { $0[Self.trackID]?.objectPath?.rawValue == id })
        for later in published[firstOfFinal...] {
            #expect(later[Self.trackID]?.objectPath?.rawValue == id, "a stale update after the final track: \(later)")
            #expect(
                later[Self.artURL] == published[firstOfFinal][Self.artURL], "the art changed after the final track came"
            )
        }
        let shown = try await session.metadata()
        #expect(shown[Self.trackID]?.objectPath?.rawValue == id)
        #expect(try Data(contentsOf: Self.artFile(shown[Self.artURL]?.string, in: session)) == final.cover)
        // Each track's art is its own cover: a wrong pairing would show here.
        for metadata in published {
            guard let url = metadata["xesam:url"]?.string, let art = metadata[Self.artURL]?.string,
                let track = tracks.first(where: { $0.track.absoluteString == url })
            else { continue }
            #expect(
                try Data(contentsOf: Self.artFile(art, in: session)) == track.cover,
                "\(url) shown with another track's art")
        }
        Self.expectPublishedArtExists(session)
    }

    @Test("art whose cached image went comes back in exactly one later update")
    func lateArtworkIsOneUpdate() async throws {
        let tracks = try await TestMedia.coveredTracks(count: 2, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.track.path))
        try await Self.waitForTrack(tracks[0].track, in: session, after: 0)
        try await session.waitForStatus("Playing")
        // The second track's tags (and art) are read ahead while the first one plays: wait
        // for its image in the cache, then take the cache away under the daemon.
        let folder = session.home.appendingPathComponent(".cache/quaver/art")
        let cached = await session.waiter.wait(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.contains { (try? Data(contentsOf: folder.appendingPathComponent($0))) == tracks[1].cover }
        }
        #expect(cached, "the second track's art was never cached")
        try FileManager.default.removeItem(at: folder)
        let mark = session.signals.count
        _ = try await session.call("Next")
        let id = try await Self.waitForTrack(tracks[1].track, in: session, after: mark)
        try await session.waitForPlayerChange(after: mark, "the art of track 2") {
            $0["Metadata"]?.stringVariantDictionary?[Self.artURL] != nil
        }
        try await Self.roundTrip(session)
        let updates = Self.metadata(of: id, in: session, after: mark)
        #expect(updates.count == 2, "the track without art, then once with it: \(updates)")
        #expect(updates.first?[Self.artURL] == nil)
        #expect(try Data(contentsOf: Self.artFile(updates.last?[Self.artURL]?.string, in: session)) == tracks[1].cover)
        Self.expectPublishedArtExists(session, after: mark)  // the first track's image went with the folder
    }

    @Test("a cache folder that cannot be written: no artwork, one log line, and playback goes on")
    func unwritableCache() async throws {
        let tracks = try await TestMedia.coveredTracks(count: 2, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        let cache = session.home.appendingPathComponent(".cache")
        #expect(FileManager.default.createFile(atPath: cache.path, contents: Data("not a folder".utf8)))
        try await session.launch(tracks.map(\.track.path))
        try await session.waitForStatus("Playing")
        let mark = session.signals.count
        _ = try await session.call("Next")
        try await Self.waitForTrack(tracks[1].track, in: session, after: mark)
        try await Self.roundTrip(session)
        #expect(Self.publishedMetadata(session).allSatisfy { $0[Self.artURL] == nil })
        let lines = session.log().split(separator: "\n").filter { $0.contains("could not keep artwork") }
        #expect(lines.count == 1 && lines[0].contains("Not a directory"), "\(session.log())")
        #expect(!session.log().contains("critical"))
    }
}
