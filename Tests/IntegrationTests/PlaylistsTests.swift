import DBus
import Foundation
import TestKit
import Testing

/// `org.mpris.MediaPlayer2.Playlists` over a folder of playlist files, with the real binary.
@Suite("Playlists of the running quaver")
@MainActor
struct PlaylistsTests {
    /// A playlists folder with four playlists (and things that are not playlists), named in
    /// the config file before launch. Modification times: "b" oldest, then "Mix Tape",
    /// "10 x", "2 x".
    private func prepare(_ session: Session, _ tracks: [URL]) throws -> URL {
        let folder = session.bus.directory.appendingPathComponent("playlists", isDirectory: true)
        let files = FileManager.default
        try files.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        let contents: [(String, String, Int)] = [
            ("2 x.m3u", "#EXTM3U\n\(tracks[0].path)\n\(tracks[1].path)\n", 2023),
            ("10 x.m3u8", "\(tracks[2].path)\n", 2022),
            ("b.pls", "[playlist]\nFile1=\(tracks[1].path)\nNumberOfEntries=1\nVersion=2\n", 2020),
            ("a.m3u8", "#EXTM3U\n#PLAYLIST:Mix Tape\n\(tracks[2].path)\n\(tracks[0].path)\n", 2021),
        ]
        for (name, text, year) in contents {
            let file = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            var date = DateComponents()
            (date.year, date.month, date.day) = (year, 6, 1)
            date.timeZone = TimeZone(identifier: "UTC")
            try files.setAttributes(
                [.modificationDate: Calendar(identifier: .gregorian).date(from: date)!], ofItemAtPath: file.path)
        }
        try Data("not a playlist\n".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        try Data("\(tracks[0].path)\n".utf8).write(to: folder.appendingPathComponent("sub/inner.m3u"))
        try session.writeConfig("playlists-folder = \(folder.path)\n")
        return folder
    }

    private func playlists(
        _ session: Session, _ index: UInt32, _ maxCount: UInt32, _ order: String, reversed: Bool = false
    ) async throws -> [(id: ObjectPath, name: String, icon: String)] {
        let reply = try await session.call(
            "GetPlaylists", interface: MPRISNames.playlists,
            [.uint32(index), .uint32(maxCount), .string(order), .boolean(reversed)])
        guard case .array(_, let items)? = reply.first else { throw HarnessError("GetPlaylists answered \(reply)") }
        return try items.map { item in
            guard case .structure(let fields) = item, fields.count == 3, let id = fields[0].objectPath,
                let name = fields[1].string, let icon = fields[2].string
            else { throw HarnessError("not an (oss): \(item)") }
            return (id, name, icon)
        }
    }

    private func names(_ session: Session, _ index: UInt32, _ maxCount: UInt32, _ order: String, reversed: Bool = false)
        async throws -> [String]
    {
        try await playlists(session, index, maxCount, order, reversed: reversed).map(\.name)
    }

    @Test("PlaylistCount, Orderings, GetPlaylists paging and ordering, names from #PLAYLIST or the file")
    func listing() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        _ = try prepare(session, tracks)
        try await session.launch(["--paused", tracks[0].path])
        try await session.waitForStatus("Paused")

        #expect(try await session.get("PlaylistCount", interface: MPRISNames.playlists) == .uint32(4))
        let orderings = try await session.get("Orderings", interface: MPRISNames.playlists).stringArray ?? []
        #expect(Set(["Alphabetical", "Modified", "Created"]).isSubset(of: Set(orderings)), "\(orderings)")

        let all = try await playlists(session, 0, 100, "Alphabetical")
        #expect(all.map(\.name) == ["2 x", "10 x", "b", "Mix Tape"], "natural order of names")
        #expect(all.allSatisfy { $0.icon.isEmpty })
        #expect(Set(all.map(\.id)).count == 4, "one id each: \(all.map(\.id))")
        #expect(try await names(session, 0, 100, "Alphabetical", reversed: true) == ["Mix Tape", "b", "10 x", "2 x"])
        #expect(try await names(session, 1, 2, "Alphabetical") == ["10 x", "b"])
        #expect(try await names(session, 3, 10, "Alphabetical") == ["Mix Tape"])
        #expect(try await names(session, 4, 10, "Alphabetical").isEmpty)
        #expect(try await names(session, 0, 0, "Alphabetical").isEmpty)
        #expect(try await names(session, 1, 2, "Alphabetical", reversed: true) == ["b", "10 x"])

        let modified = try await playlists(session, 0, 100, "Modified")
        #expect(modified.map(\.name) == ["b", "Mix Tape", "10 x", "2 x"], "oldest first")
        #expect(
            Dictionary(uniqueKeysWithValues: modified.map { ($0.name, $0.id) })
                == Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.id) }), "ids do not depend on the order")
        #expect(try await names(session, 0, 100, "Modified", reversed: true) == ["2 x", "10 x", "Mix Tape", "b"])
        #expect(try await playlists(session, 0, 100, "Created").count == 4)

        await expectMPRISError(MPRISNames.invalidArgs) { _ = try await playlists(session, 0, 10, "Bogus") }
        let active = try await session.get("ActivePlaylist", interface: MPRISNames.playlists)
        guard case .structure(let fields) = active else {
            Issue.record("ActivePlaylist is \(active)")
            return
        }
        #expect(fields.first == .boolean(false), "no playlist active yet: \(active)")
    }

    @Test("ActivatePlaylist replaces the queue and plays it; ActivePlaylist follows; unknown ids are InvalidArgs")
    func activate() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let signals = try TrackListSignals(session)
        defer { session.stop() }
        _ = try prepare(session, tracks)
        try await session.launch(["--paused", tracks[1].path])
        try await session.waitForStatus("Paused")
        let before = try await session.trackListTracks()
        let mixTape = try #require(try await playlists(session, 0, 100, "Alphabetical").first { $0.name == "Mix Tape" })

        let mark = session.signals.count
        let trackMark = signals.count
        _ = try await session.call("ActivatePlaylist", interface: MPRISNames.playlists, [.objectPath(mixTape.id)])
        let replaced = try await signals.wait(after: trackMark, "TrackListReplaced") {
            $0.member == "TrackListReplaced"
        }
        try await session.waitForPlayerChange(after: mark, "Track 3") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
        try await session.waitForStatus("Playing", after: mark)
        let current = try #require(try await session.currentTrackID())
        #expect(
            replaced.arguments.dropFirst().first?.objectPath == current,
            "TrackListReplaced names the new current track: \(replaced)")
        #expect(!(replaced.arguments.first?.objectPaths ?? []).contains { before.contains($0) }, "new ids: \(replaced)")

        try await signals.waitForWindow(of: 2)
        let ids = try await session.trackListTracks()
        #expect(ids.first == current)
        #expect(try await session.trackURLs(ids) == [tracks[2], tracks[0]].map(\.absoluteString))
        #expect(signals.replayed() == ids)

        let expected = Value.structure([
            .boolean(true), .structure([.objectPath(mixTape.id), .string("Mix Tape"), .string("")]),
        ])
        #expect(try await session.get("ActivePlaylist", interface: MPRISNames.playlists) == expected)
        let announced = try? await session.waitForSignal(
            after: mark, timeout: .seconds(3), "PropertiesChanged of ActivePlaylist"
        ) {
            $0.member == "PropertiesChanged" && $0.changedInterface == MPRISNames.playlists
                && $0.changed["ActivePlaylist"] != nil
        }
        #expect(
            announced?.changed["ActivePlaylist"] == expected, "ActivePlaylist must be announced with PropertiesChanged")

        let prefix = Session.trackIDPrefix(of: mixTape.id)
        await expectMPRISError(MPRISNames.invalidArgs) {
            _ = try await session.call(
                "ActivatePlaylist", interface: MPRISNames.playlists, [.objectPath(ObjectPath(prefix + "/999")!)])
        }
        await expectMPRISError(MPRISNames.invalidArgs) {
            _ = try await session.call(
                "ActivatePlaylist", interface: MPRISNames.playlists, [.objectPath(ObjectPath("/not/a/playlist")!)])
        }
        #expect(try await session.trackListTracks() == ids, "a refused activation changes nothing")
    }

    @Test("the folder is watched: a renamed file keeps its id (PlaylistChanged); a new one changes PlaylistCount")
    func watching() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let signals = try TrackListSignals(session)
        defer { session.stop() }
        let folder = try prepare(session, tracks)
        try await session.launch(["--paused", tracks[0].path])
        try await session.waitForStatus("Paused")
        let ten = try #require(try await playlists(session, 0, 100, "Alphabetical").first { $0.name == "10 x" })

        // Renamed inside the folder: same id, new name.
        var trackMark = signals.count
        try FileManager.default.moveItem(
            at: folder.appendingPathComponent("10 x.m3u8"), to: folder.appendingPathComponent("11 y.m3u8"))
        let changed = try await signals.wait(after: trackMark, "PlaylistChanged") { $0.member == "PlaylistChanged" }
        #expect(changed.arguments == [.structure([.objectPath(ten.id), .string("11 y"), .string("")])])
        #expect(try await names(session, 0, 100, "Alphabetical") == ["2 x", "11 y", "b", "Mix Tape"])
        #expect(try await playlists(session, 0, 100, "Alphabetical").first { $0.name == "11 y" }?.id == ten.id)
        #expect(try await session.get("PlaylistCount", interface: MPRISNames.playlists) == .uint32(4))

        // A new playlist: PlaylistCount changes, announced.
        trackMark = signals.count
        try Data("\(tracks[1].path)\n".utf8).write(to: folder.appendingPathComponent("new.m3u"))
        let grown = try? await signals.wait(
            after: trackMark, timeout: .seconds(20), "PropertiesChanged of PlaylistCount 5"
        ) {
            $0.member == "PropertiesChanged" && $0.changed["PlaylistCount"] != nil
        }
        #expect(grown?.changed["PlaylistCount"] == .uint32(5), "PlaylistCount 5 must be announced")
        #expect(try await session.get("PlaylistCount", interface: MPRISNames.playlists) == .uint32(5))
        #expect(try await names(session, 0, 100, "Alphabetical").contains("new"))

        // Removed: back to 4.
        trackMark = signals.count
        try FileManager.default.removeItem(at: folder.appendingPathComponent("b.pls"))
        let shrunk = try? await signals.wait(
            after: trackMark, timeout: .seconds(20), "PropertiesChanged of PlaylistCount 4"
        ) {
            $0.member == "PropertiesChanged" && $0.changed["PlaylistCount"] != nil
        }
        #expect(shrunk?.changed["PlaylistCount"] == .uint32(4), "PlaylistCount 4 must be announced")
        #expect(try await names(session, 0, 100, "Alphabetical") == ["2 x", "11 y", "Mix Tape", "new"])
    }
}
