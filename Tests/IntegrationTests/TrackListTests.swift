import DBus
import Foundation
import TestKit
import Testing

/// `org.mpris.MediaPlayer2.TrackList` of the real binary: the window of `Tracks`, its
/// signals, lazy tags, editing, and handing paths over to a running Quaver.
@Suite("TrackList of the running quaver")
@MainActor
struct TrackListTests {
    /// A session with a signal recorder, launched with `arguments`, once its queue of
    /// `queued` tracks is in (it is loaded in the background).
    private func start(_ arguments: [String], status: String, queued: Int) async throws -> (Session, TrackListSignals) {
        let session = try await Session()
        let signals = try TrackListSignals(session)
        try await session.launch(arguments)
        try await session.waitForStatus(status)
        try await signals.waitForWindow(of: min(queued, 20))
        return (session, signals)
    }

    @Test("HasTrackList, CanEditTracks, Tracks in queue order and GetTracksMetadata in the order asked")
    func properties() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let (session, _) = try await start(["--paused"] + tracks.map(\.path), status: "Paused", queued: tracks.count)
        defer { session.stop() }

        #expect(try await session.get("HasTrackList", interface: MPRISNames.root) == .boolean(true))
        #expect(try await session.get("CanEditTracks", interface: MPRISNames.trackList) == .boolean(true))
        let ids = try await session.trackListTracks()
        #expect(ids.count == 3)
        #expect(Set(ids).count == ids.count, "ids are unique: \(ids)")
        #expect(try await session.currentTrackID() == ids.first)

        // Asked backwards, with a path that is no queued track in the middle: one map per
        // known id, in the order asked, the unknown one left out.
        let unknown = ObjectPath(Session.trackIDPrefix(of: ids[0]) + "/999")!
        let maps = try await session.tracksMetadata([ids[2], unknown, ids[1], ids[0]])
        #expect(maps.map { $0["mpris:trackid"]?.objectPath } == [ids[2], ids[1], ids[0]])
        #expect(maps.map { $0["xesam:url"]?.string } == [tracks[2], tracks[1], tracks[0]].map(\.absoluteString))
        #expect(try await session.tracksMetadata([]).isEmpty)
        #expect(try await session.tracksMetadata([MPRISNames.noTrack]).isEmpty)
    }

    @Test("Tracks is a window of 20: up to 5 before the current track; any queued id answers GetTracksMetadata")
    func window() async throws {
        let tracks = try await TestMedia.tracks(count: 40, seconds: 1)
        let urls = tracks.map(\.absoluteString)
        let (session, signals) = try await start(
            ["--paused"] + tracks.map(\.path), status: "Paused", queued: tracks.count)
        defer { session.stop() }
        // The queue comes in in the background: the first track, then the rest at once.
        // Ids count up from 1 in queue order at start-up, so the 40th is <prefix>/40.
        let first = try #require(try await session.currentTrackID())
        let prefix = Session.trackIDPrefix(of: first)
        let fortieth = ObjectPath(prefix + "/40")!
        let thirtyFifth = ObjectPath(prefix + "/35")!

        var ids = try await session.trackListTracks()
        #expect(ids.count == 20)
        #expect(ids.first == first)
        #expect(try await session.trackURLs(ids) == Array(urls[0..<20]))
        let second = ids[1]

        // Far outside the window.
        let far = try await session.tracksMetadata([thirtyFifth, fortieth])
        #expect(far.map { $0["mpris:trackid"]?.objectPath } == [thirtyFifth, fortieth])
        #expect(far.map { $0["xesam:url"]?.string } == [urls[34], urls[39]])

        // The 13th: five before it, then it, then 14 after.
        var mark = session.signals.count
        var trackMark = signals.count
        let thirteenth = ids[12]
        try await session.goTo(thirteenth)
        try await session.waitForCurrent(thirteenth, after: mark)
        ids = try await session.trackListTracks()
        #expect(ids.count == 20)
        #expect(ids.firstIndex(of: thirteenth) == 5)
        #expect(try await session.trackURLs(ids) == Array(urls[7..<27]))
        #expect(signals.tracksInvalidated(after: trackMark), "the window moved: Tracks must be invalidated")

        // The last: the window is the last 20, so still 20 entries.
        mark = session.signals.count
        trackMark = signals.count
        try await session.goTo(fortieth)
        try await session.waitForCurrent(fortieth, after: mark)
        ids = try await session.trackListTracks()
        #expect(ids.count == 20)
        #expect(ids.last == fortieth)
        #expect(try await session.trackURLs(ids) == Array(urls[20..<40]))
        #expect(signals.tracksInvalidated(after: trackMark))

        // The 21st: five before it again.
        let twentyFirst = ids[0]
        mark = session.signals.count
        try await session.goTo(twentyFirst)
        try await session.waitForCurrent(twentyFirst, after: mark)
        ids = try await session.trackListTracks()
        #expect(ids.firstIndex(of: twentyFirst) == 5)
        #expect(try await session.trackURLs(ids) == Array(urls[15..<35]))

        // An id that left the window still answers; the 2nd is far behind now.
        let behind = try await session.tracksMetadata([second, fortieth])
        #expect(behind.map { $0["mpris:trackid"]?.objectPath } == [second, fortieth])
        #expect(behind.map { $0["xesam:url"]?.string } == [urls[1], urls[39]])
    }

    @Test("tags are read lazily: one TrackMetadataChanged per id, with the tags")
    func lazyTags() async throws {
        let tracks = try await TestMedia.tracks(count: 40, seconds: 1)
        let titles = Dictionary(
            uniqueKeysWithValues: tracks.enumerated().map { ($0.element.absoluteString, "Track \($0.offset + 1)") })
        let (session, signals) = try await start(
            ["--paused"] + tracks.map(\.path), status: "Paused", queued: tracks.count)
        defer { session.stop() }

        func changedIDs(_ events: [Session.RecordedSignal]) -> [ObjectPath] {
            events.filter { $0.member == "TrackMetadataChanged" }.compactMap { $0.arguments.first?.objectPath }
        }
        // Every entry of the window gets its tags, announced once each, or had them already
        // when the list was first announced (read before the name was owned).
        let window = try await session.trackListTracks()
        #expect(window.count == 20)
        let taggedAtStart = Set(
            zip(window, try await session.tracksMetadata(window)).compactMap { $0.1["xesam:title"] == nil ? nil : $0.0 }
        )
        try await signals.wait(timeout: .seconds(20), "TrackMetadataChanged for every id of Tracks") { events in
            Set(window).isSubset(of: Set(changedIDs(events)).union(taggedAtStart))
        }

        // Moving on shows new entries, whose tags come in too.
        for _ in 0..<8 {
            let mark = session.signals.count
            let current = try await session.currentTrackID()
            _ = try await session.call("Next")
            _ = try await session.waitForTrackChange(from: current, after: mark)
        }
        let moved = try await session.trackListTracks()
        #expect(moved != window)
        try await signals.wait(timeout: .seconds(20), "TrackMetadataChanged for every id of the moved Tracks") {
            events in
            Set(moved).isSubset(of: Set(changedIDs(events)).union(taggedAtStart))
        }
        // Asking for metadata already read must not announce it again.
        _ = try await session.tracksMetadata(moved + window)
        _ = try await session.trackListTracks()

        let changes = signals.events.filter { $0.member == "TrackMetadataChanged" }
        var seen: [ObjectPath: Int] = [:]
        for change in changes {
            guard let id = change.arguments.first?.objectPath else {
                Issue.record("TrackMetadataChanged without an id: \(change)")
                continue
            }
            seen[id, default: 0] += 1
            let metadata = change.arguments.dropFirst().first?.stringVariantDictionary ?? [:]
            #expect(metadata["mpris:trackid"]?.objectPath == id, "\(change)")
            let url = metadata["xesam:url"]?.string ?? ""
            #expect(titles[url] != nil, "an unknown url in \(change)")
            #expect(metadata["xesam:title"]?.string == titles[url], "the tags, not the file name: \(change)")
        }
        let twice = seen.filter { $0.value > 1 }
        #expect(twice.isEmpty, "ids with more than one TrackMetadataChanged: \(twice)")
    }

    @Test("AddTrack: after a track, at the start, as current; new ids; bad arguments refused")
    func addTrack() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let (session, signals) = try await start(tracks.map(\.path), status: "Playing", queued: tracks.count)
        defer { session.stop() }
        let original = try await session.trackListTracks()
        #expect(original.count == 3)
        var known = Set(original)

        // After the first.
        var trackMark = signals.count
        try await session.addTrack(tracks[2].absoluteString, after: original[0], setAsCurrent: false)
        var added = try await signals.wait(after: trackMark, "TrackAdded after the first") { $0.member == "TrackAdded" }
        let afterFirst = try #require(added.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(added.arguments.dropFirst().first?.objectPath == original[0])
        #expect(added.arguments.first?.stringVariantDictionary?["xesam:url"]?.string == tracks[2].absoluteString)
        #expect(!known.contains(afterFirst), "a new id: \(afterFirst)")
        known.insert(afterFirst)
        try await signals.wait(after: trackMark, "Tracks invalidated") { $0.isTracksInvalidation }
        #expect(try await session.trackListTracks() == [original[0], afterFirst, original[1], original[2]])
        #expect(try await session.currentTrackID() == original[0])

        // The same file again: another id; at the start.
        trackMark = signals.count
        try await session.addTrack(tracks[2].absoluteString, after: MPRISNames.noTrack, setAsCurrent: false)
        added = try await signals.wait(after: trackMark, "TrackAdded at the start") { $0.member == "TrackAdded" }
        let atStart = try #require(added.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(added.arguments.dropFirst().first?.objectPath == MPRISNames.noTrack)
        #expect(!known.contains(atStart), "queuing the same file twice gives two ids")
        known.insert(atStart)
        #expect(try await session.trackListTracks() == [atStart, original[0], afterFirst, original[1], original[2]])
        #expect(
            try await session.trackURLs([atStart, afterFirst]) == [tracks[2].absoluteString, tracks[2].absoluteString])

        // As current, while playing: plays it.
        var mark = session.signals.count
        trackMark = signals.count
        try await session.addTrack(tracks[1].absoluteString, after: original[2], setAsCurrent: true)
        added = try await signals.wait(after: trackMark, "TrackAdded at the end") { $0.member == "TrackAdded" }
        let playingNow = try #require(added.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(!known.contains(playingNow))
        known.insert(playingNow)
        try await session.waitForCurrent(playingNow, after: mark)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        #expect(
            !session.statusesSignalled(after: mark).contains { $0 != "Playing" },
            "\(session.statusesSignalled(after: mark))")
        #expect(
            try await session.trackListTracks() == [
                atStart, original[0], afterFirst, original[1], original[2], playingNow,
            ])

        // As current, while paused: stays paused.
        mark = session.signals.count
        _ = try await session.call("Pause")
        try await session.waitForStatus("Paused", after: mark)
        mark = session.signals.count
        trackMark = signals.count
        try await session.addTrack(tracks[0].absoluteString, after: atStart, setAsCurrent: true)
        added = try await signals.wait(after: trackMark, "TrackAdded after the start") { $0.member == "TrackAdded" }
        let pausedNow = try #require(added.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(!known.contains(pausedNow))
        try await session.waitForCurrent(pausedNow, after: mark)
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        #expect(
            !session.statusesSignalled(after: mark).contains { $0 != "Paused" },
            "\(session.statusesSignalled(after: mark))")
        #expect(try await session.metadata()["xesam:title"] == .string("Track 1"))

        // Refused: an unknown AfterTrack, a scheme not supported, a missing file.
        let before = try await session.trackListTracks()
        let unknown = ObjectPath(Session.trackIDPrefix(of: original[0]) + "/999")!
        await expectMPRISError(MPRISNames.invalidArgs) {
            try await session.addTrack(tracks[0].absoluteString, after: unknown, setAsCurrent: false)
        }
        await expectMPRISError(MPRISNames.invalidArgs) {
            try await session.addTrack("ftp://x", after: MPRISNames.noTrack, setAsCurrent: false)
        }
        await expectMPRISError(MPRISNames.noSuchContent) {
            try await session.addTrack(
                "file:///nonexistent/quaver/missing.flac", after: MPRISNames.noTrack, setAsCurrent: false)
        }
        #expect(try await session.trackListTracks() == before, "refused calls change nothing")
        #expect(try await session.currentTrackID() == pausedNow)
    }

    /// A 1 s track is read whole while it prerolls, so playbin may already have asked what
    /// follows it (nothing, then): a track added after it must still play when it ends.
    @Test("a track added after a short current track that is already loaded plays when it ends")
    func addAfterShortCurrent() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 1)
        let (session, signals) = try await start(["--paused", tracks[0].path], status: "Paused", queued: 1)
        defer { session.stop() }
        let first = try #require(try await session.currentTrackID())
        #expect(try await session.get("CanGoNext") == .boolean(false))
        let trackMark = signals.count
        try await session.addTrack(tracks[1].absoluteString, after: first, setAsCurrent: false)
        let added = try await signals.wait(after: trackMark, "TrackAdded") { $0.member == "TrackAdded" }
        let second = try #require(added.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(try await session.get("CanGoNext") == .boolean(true))

        let mark = session.signals.count
        _ = try await session.call("Play")
        // Whichever comes first at the end of track 1: the added track, or (wrongly) Stopped.
        let end = try await session.waitForPlayerChange(after: mark, timeout: .seconds(8), "the end of track 1") {
            $0["Metadata"] != nil || $0["PlaybackStatus"] == .string("Stopped")
        }
        #expect(
            end.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath == second,
            "track 1 ended with \(end.changed.keys.sorted()), status \(end.changed["PlaybackStatus"] ?? .string("-"))")
        #expect(try await session.currentTrackID() == second)
    }

    @Test("AddTrack of a folder queues its audio files in natural order")
    func addFolder() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let signals = try TrackListSignals(session)
        defer { session.stop() }
        // "1 a", "2 b", "10 c": natural order, not the order of the bytes ("10 c" before "2 b").
        let folder = session.bus.directory.appendingPathComponent("album", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let names = ["10 c.flac": tracks[0], "2 b.flac": tracks[1], "1 a.flac": tracks[2]]
        for (name, source) in names {
            try FileManager.default.copyItem(at: source, to: folder.appendingPathComponent(name))
        }
        try Data("not audio".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        try await session.launch(["--paused", tracks[0].path, tracks[1].path])
        try await session.waitForStatus("Paused")
        try await signals.waitForWindow(of: 2)
        let original = try await session.trackListTracks()
        #expect(original.count == 2)

        let trackMark = signals.count
        let uri = URL(fileURLWithPath: folder.path, isDirectory: true).absoluteString
        #expect(uri.hasSuffix("/"))
        try await session.addTrack(uri, after: original[0], setAsCurrent: false)
        try await signals.wait(after: trackMark, "three TrackAdded") { _ in
            signals.events.dropFirst(trackMark).filter { $0.member == "TrackAdded" }.count >= 3
        }
        let ids = try await session.trackListTracks()
        #expect(ids.count == 5)
        #expect(ids.first == original[0] && ids.last == original[1], "\(ids)")
        let expected = ["1 a.flac", "2 b.flac", "10 c.flac"].map { folder.appendingPathComponent($0).absoluteString }
        #expect(try await session.trackURLs(Array(ids.dropFirst().dropLast())) == expected)
        #expect(try await session.currentTrackID() == original[0])
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
    }

    @Test("RemoveTrack: TrackRemoved, the current one moves on, the last one stops, stale ids do nothing")
    func removeTrack() async throws {
        let tracks = try await TestMedia.tracks(count: 4, seconds: 10)
        let (session, signals) = try await start(tracks.map(\.path), status: "Playing", queued: tracks.count)
        defer { session.stop() }
        let ids = try await session.trackListTracks()
        #expect(ids.count == 4)

        // Not the current one.
        var trackMark = signals.count
        try await session.removeTrack(ids[2])
        let removed = try await signals.wait(after: trackMark, "TrackRemoved") { $0.member == "TrackRemoved" }
        #expect(removed.arguments == [.objectPath(ids[2])])
        try await signals.wait(after: trackMark, "Tracks invalidated") { $0.isTracksInvalidation }
        #expect(try await session.trackListTracks() == [ids[0], ids[1], ids[3]])
        #expect(try await session.currentTrackID() == ids[0])

        // Again (no longer queued): nothing, no error.
        trackMark = signals.count
        var mark = session.signals.count
        try await session.removeTrack(ids[2])
        #expect(try await session.trackListTracks() == [ids[0], ids[1], ids[3]])
        #expect(signals.edits(after: trackMark).isEmpty, "\(signals.edits(after: trackMark))")

        // Not a track id at all.
        await expectMPRISError(MPRISNames.invalidArgs) {
            try await session.removeTrack(ObjectPath("/elsewhere/track/1")!)
        }

        // The current one while playing: on to the next, still playing.
        mark = session.signals.count
        trackMark = signals.count
        try await session.removeTrack(ids[0])
        try await session.waitForCurrent(ids[1], after: mark)
        try await signals.wait(after: trackMark, "TrackRemoved of the current") {
            $0.member == "TrackRemoved" && $0.arguments == [.objectPath(ids[0])]
        }
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        #expect(
            !session.statusesSignalled(after: mark).contains { $0 != "Playing" },
            "\(session.statusesSignalled(after: mark))")
        #expect(try await session.trackListTracks() == [ids[1], ids[3]])
        #expect(try await session.metadata()["xesam:url"] == .string(tracks[1].absoluteString))

        // The current last one, LoopStatus None: stops.
        #expect(try await session.get("LoopStatus") == .string("None"))
        mark = session.signals.count
        try await session.goTo(ids[3])
        try await session.waitForCurrent(ids[3], after: mark)
        mark = session.signals.count
        try await session.removeTrack(ids[3])
        try await session.waitForStatus("Stopped", after: mark)
        #expect(try await session.trackListTracks() == [ids[1]])
    }

    @Test("GoTo keeps Playing and Paused")
    func goTo() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let (session, _) = try await start(tracks.map(\.path), status: "Playing", queued: tracks.count)
        defer { session.stop() }
        let ids = try await session.trackListTracks()
        var mark = session.signals.count
        try await session.goTo(ids[2])
        try await session.waitForCurrent(ids[2], after: mark)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        #expect(!session.statusesSignalled(after: mark).contains { $0 != "Playing" })
        #expect(try await session.metadata()["xesam:title"] == .string("Track 3"))

        mark = session.signals.count
        _ = try await session.call("Pause")
        try await session.waitForStatus("Paused", after: mark)
        mark = session.signals.count
        try await session.goTo(ids[0])
        try await session.waitForCurrent(ids[0], after: mark)
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
        #expect(!session.statusesSignalled(after: mark).contains { $0 != "Paused" })
        #expect(try await session.trackListTracks() == ids, "GoTo changes no id")
    }

    @Test("a client applying TrackListReplaced/TrackAdded/TrackRemoved keeps an exact copy of Tracks")
    func signalsReplayToTracks() async throws {
        let tracks = try await TestMedia.tracks(count: 40, seconds: 1)
        let (session, signals) = try await start(
            ["--paused"] + tracks.map(\.path), status: "Paused", queued: tracks.count)
        defer { session.stop() }

        var model: [ObjectPath] = []
        var applied = 0
        var previous: [ObjectPath] = []
        /// Applies what arrived, then compares with `Tracks` (signals sent before the reply
        /// to Get arrive before it).
        func check(_ step: String, mark: Int) async throws {
            let tracksNow = try await session.trackListTracks()
            for event in signals.events.dropFirst(applied) {
                if let problem = TrackListSignals.apply(event, to: &model) { Issue.record("\(step): \(problem)") }
            }
            applied = signals.events.count
            #expect(
                model == tracksNow,
                "\(step): the copy \(model.map(\.rawValue)) differs from Tracks \(tracksNow.map(\.rawValue))")
            #expect(tracksNow.count == 20, "\(step)")
            if tracksNow != previous {
                #expect(signals.tracksInvalidated(after: mark), "\(step): Tracks changed without being invalidated")
            }
            for event in signals.events.dropFirst(mark)
            where event.member == "PropertiesChanged" && event.changedInterface == MPRISNames.trackList {
                #expect(event.changed.isEmpty && event.invalidated == ["Tracks"], "\(step): \(event)")
            }
            previous = tracksNow
        }
        try await check("start", mark: 0)

        func move(_ step: String, _ action: () async throws -> Void) async throws {
            let mark = session.signals.count
            let trackMark = signals.count
            let current = try await session.currentTrackID()
            try await action()
            _ = try await session.waitForTrackChange(from: current, after: mark)
            try await check(step, mark: trackMark)
        }

        for n in 1...8 {
            let trackMark = signals.count
            try await move("Next #\(n)") { _ = try await session.call("Next") }
            #expect(
                !signals.members(after: trackMark).contains("TrackListReplaced"),
                "Next #\(n) slides the window with a few edits")
        }
        var trackMark = signals.count
        try await session.addTrack(
            tracks[0].absoluteString, after: try #require(try await session.currentTrackID()), setAsCurrent: false)
        try await check("AddTrack after the current", mark: trackMark)
        trackMark = signals.count
        try await session.removeTrack(previous[2])
        try await check("RemoveTrack before the current", mark: trackMark)
        trackMark = signals.count
        try await session.removeTrack(previous[12])
        try await check("RemoveTrack after the current", mark: trackMark)
        let last = try #require(previous.last)
        try await move("GoTo the last of the window") { try await session.goTo(last) }
        try await move("Previous") { _ = try await session.call("Previous") }
        trackMark = signals.count
        try await session.addTrack(tracks[1].absoluteString, after: MPRISNames.noTrack, setAsCurrent: false)
        try await check("AddTrack at the start, outside the window", mark: trackMark)
        #expect(
            signals.edits(after: trackMark).isEmpty,
            "an entry outside the window is not announced: \(signals.edits(after: trackMark))")
        let current = try #require(try await session.currentTrackID())
        try await move("RemoveTrack of the current") { try await session.removeTrack(current) }
        try await move("AddTrack as current") {
            try await session.addTrack(tracks[2].absoluteString, after: previous[0], setAsCurrent: true)
        }
        try await move("Next after that") { _ = try await session.call("Next") }
    }

    // MARK: - Hand-over

    @Test("quaver PATHS while one runs: queued after its current track, the first playing", arguments: [false, true])
    func handOver(startPaused: Bool) async throws {
        let tracks = try await TestMedia.tracks(count: 6, seconds: 10)
        let (session, signals) = try await start(
            (startPaused ? ["--paused"] : []) + tracks[0..<3].map(\.path), status: startPaused ? "Paused" : "Playing",
            queued: 3)
        defer { session.stop() }
        var ids = try await session.trackListTracks()
        // Start from the second track, so that "after the current one" is not the end.
        var mark = session.signals.count
        try await session.goTo(ids[1])
        try await session.waitForCurrent(ids[1], after: mark)

        mark = session.signals.count
        let trackMark = signals.count
        let run = try await session.runQuaver([tracks[4].path, tracks[5].path])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.elapsed < .seconds(5), "hand-over took \(run.elapsed)")
        #expect(session.daemonStatus == nil, "the running quaver goes on")
        #expect(
            session.owners.keys.filter { $0.hasPrefix(session.busName + ".instance") }.isEmpty,
            "no second instance: \(session.owners)")

        try await session.waitForPlayerChange(after: mark, "Track 5") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 5")
        }
        try await session.waitForStatus("Playing", after: startPaused ? mark : 0)
        ids = try await session.trackListTracks()
        #expect(ids.count == 5)
        #expect(try await session.trackURLs(ids) == [0, 1, 4, 5, 2].map { tracks[$0].absoluteString })
        #expect(try await session.currentTrackID() == ids[2])
        #expect(signals.members(after: trackMark).filter { $0 == "TrackAdded" }.count == 2)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
    }

    @Test("quaver with no paths while one runs exits 0 and changes nothing")
    func handOverNothing() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let (session, signals) = try await start(tracks.map(\.path), status: "Playing", queued: tracks.count)
        defer { session.stop() }
        let ids = try await session.trackListTracks()
        let current = try await session.currentTrackID()
        let mark = session.signals.count
        let trackMark = signals.count
        let run = try await session.runQuaver([])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.elapsed < .seconds(5), "took \(run.elapsed)")
        #expect(try await session.trackListTracks() == ids)
        #expect(try await session.currentTrackID() == current)
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        #expect(signals.edits(after: trackMark).isEmpty, "\(signals.edits(after: trackMark))")
        #expect(!session.metadataChanged(after: mark))
        #expect(session.statusesSignalled(after: mark).isEmpty)
        #expect(session.owners.keys.filter { $0.hasPrefix(session.busName + ".instance") }.isEmpty, "\(session.owners)")
    }

    @Test("quaver with paths the running one refuses, every one, exits 1 and changes nothing")
    func handOverRefused() async throws {
        let tracks = try await TestMedia.tracks(count: 2, seconds: 10)
        let (session, _) = try await start(tracks.map(\.path), status: "Playing", queued: tracks.count)
        defer { session.stop() }
        let ids = try await session.trackListTracks()
        let run = try await session.runQuaver(["ftp://example.invalid/a.flac"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("the running Quaver refused it"), "\(run.output)")
        #expect(session.daemonStatus == nil, "the running quaver goes on")
        #expect(try await session.trackListTracks() == ids)
    }
}
