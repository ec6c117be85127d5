import DBus
import SeededRandom
import TestKit
import Testing

@testable import NowPlaying

/// A queue behind `TrackListDataSource`, windowed like the daemon's: up to `size` ids with
/// up to `before` of them before the current one.
@MainActor
final class FakeQueue: TrackListDataSource, PlaylistsDataSource {
    var ids: [UInt64]
    var current = 0
    var size = 6
    var before = 2
    var titles: [UInt64: String] = [:]
    private(set) var metadataRequests: [[UInt64]] = []

    init(_ ids: [UInt64]) { self.ids = ids }

    func trackListWindow() -> [UInt64] {
        guard !ids.isEmpty else { return [] }
        let start = max(0, min(current - before, ids.count - size))
        return Array(ids[start..<min(ids.count, start + size)])
    }

    func trackListMetadata(_ requested: [UInt64]) -> [NowPlayingInfo] {
        metadataRequests.append(requested)
        return requested.filter(ids.contains).map { id in
            var info = NowPlayingInfo(queueItemID: id)
            info.title = titles[id]
            return info
        }
    }

    // Playlists
    var playlistItems = [
        MediaPlaylist(id: 1, name: "10 Rock"), MediaPlaylist(id: 2, name: "2 Jazz"),
        MediaPlaylist(id: 3, name: "Blues"),
    ]
    var active: MediaPlaylist?
    var playlistCount: Int { playlistItems.count }
    var playlistOrderings: [MediaPlaylistOrdering] { [.alphabetical] }
    func playlists(from index: Int, maxCount: Int, ordering: MediaPlaylistOrdering, reversed: Bool) -> [MediaPlaylist] {
        var sorted = playlistItems.sorted { $0.id > $1.id }
        if reversed { sorted.reverse() }
        guard index < sorted.count else { return [] }
        return Array(sorted[index..<min(sorted.count, index + maxCount)])
    }
    var activePlaylist: MediaPlaylist? { active }
    func playlist(id: UInt64) -> MediaPlaylist? { playlistItems.first { $0.id == id } }
}

@Suite struct MediaPlaylistOrderingTests {
    @Test func orderingsFromTheWireAndFromTheSpecificationsNames() {
        #expect(MediaPlaylistOrdering(wire: "Alphabetical") == .alphabetical)
        #expect(MediaPlaylistOrdering(wire: "Created") == .created)
        #expect(MediaPlaylistOrdering(wire: "CreationDate") == .created)
        #expect(MediaPlaylistOrdering(wire: "ModifiedDate") == .modified)
        #expect(MediaPlaylistOrdering(wire: "LastPlayDate") == .played)
        #expect(MediaPlaylistOrdering(wire: "UserDefined") == .user)
        for unknown in ["alphabetical", "", "Random"] {
            #expect(MediaPlaylistOrdering(wire: unknown) == nil, "\(unknown)")
        }
    }
}

extension Result where Success == [Value], Failure == BusError {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}

/// What a client knows of `Tracks` when it follows the TrackList signals, as the spec asks.
@MainActor
struct TrackListClient {
    var tracks: [ObjectPath]

    mutating func apply(_ signal: RecordedSignal) {
        guard signal.interface == MPRISServer.trackListInterface else { return }
        switch signal.member {
        case "TrackListReplaced":
            tracks = signal.arguments[0].objectPaths
        case "TrackAdded":
            let id = signal.arguments[0].stringVariantDictionary?["mpris:trackid"]?.objectPath
            let after = signal.arguments[1].objectPath
            guard let id else { return }
            if after == MPRISServer.noTrack {
                tracks.insert(id, at: 0)
            } else if let index = tracks.firstIndex(of: after!) {
                tracks.insert(id, at: index + 1)
            } else {
                tracks.append(ObjectPath("/unknown/after")!)  // makes the comparison fail
            }
        case "TrackRemoved":
            tracks.removeAll { $0 == signal.arguments[0].objectPath }
        default:
            break
        }
    }
}

@Suite("MPRIS TrackList")
@MainActor
struct MPRISTrackListTests {
    static let trackList = MPRISServer.trackListInterface

    func make(_ ids: [UInt64] = Array(1...10)) -> (Harness, FakeQueue) {
        let harness = Harness()
        let queue = FakeQueue(ids)
        harness.server.trackList = queue
        harness.settle()
        return (harness, queue)
    }

    func tracks(_ harness: Harness) -> [ObjectPath] {
        harness.value("Tracks", Self.trackList)?.objectPaths ?? []
    }

    func call(_ harness: Harness, _ member: String, _ arguments: [Value]) -> Result<[Value], BusError> {
        harness.server.object.dispatch(interface: Self.trackList, member: member, arguments: arguments)
    }

    @Test("without a source there is no TrackList; with one, HasTrackList and the interface appear")
    func exportedOnlyWithASource() {
        let harness = Harness()
        #expect(harness.value("HasTrackList", Harness.root) == .boolean(false))
        #expect(harness.server.object.interface(named: Self.trackList) == nil)
        let queue = FakeQueue([1, 2, 3])
        harness.server.trackList = queue
        harness.flush()
        #expect(harness.value("HasTrackList", Harness.root) == .boolean(true))
        #expect(harness.server.object.interface(named: Self.trackList) != nil)
        #expect(tracks(harness) == [1, 2, 3].map { harness.server.trackID(for: $0) })
        #expect(harness.value("CanEditTracks", Self.trackList) == .boolean(false), "no edit commands have handlers")
        harness.commands.addTrackCommand.addTarget { _ in .success }
        harness.commands.removeTrackCommand.addTarget { _ in .success }
        #expect(harness.value("CanEditTracks", Self.trackList) == .boolean(true))
    }

    @Test("a client following the signals always has the Tracks the server shows", arguments: [1, 2, 3])
    func clientFollowsTheSignals(seed: UInt64) async {
        let (harness, queue) = make()
        var client = TrackListClient(tracks: tracks(harness))
        var random = SplitMix(seed: seed)
        var nextID: UInt64 = 100
        var replacements = 0
        for step in 0..<300 {
            // The server lives on the main actor, which the other suites share: a step at a
            // time, so that tests timing real playback are not held up for seconds.
            await Task.yield()
            switch random.next() % 6 {
            case 0:  // insert a few anywhere
                let position = Int(random.next() % UInt64(queue.ids.count + 1))
                let count = Int(random.next() % 3) + 1
                queue.ids.insert(contentsOf: (0..<count).map { nextID + UInt64($0) }, at: position)
                nextID += UInt64(count)
                if position <= queue.current && !queue.ids.isEmpty && queue.ids.count > count { queue.current += count }
                harness.server.trackListDidChange()
            case 1 where queue.ids.count > 1:  // remove one
                let index = Int(random.next() % UInt64(queue.ids.count))
                queue.ids.remove(at: index)
                if index < queue.current { queue.current -= 1 }
                queue.current = min(queue.current, queue.ids.count - 1)
                harness.server.trackListDidChange()
            case 2, 3:  // next or previous
                queue.current = max(0, min(queue.ids.count - 1, queue.current + (random.next() % 2 == 0 ? 1 : -1)))
                harness.server.trackListDidChange()
            case 4:  // jump
                queue.current = Int(random.next() % UInt64(max(queue.ids.count, 1)))
                harness.server.trackListDidChange()
            default:  // replaced as a whole
                queue.ids = (0..<Int(random.next() % 12)).map { nextID + UInt64($0) }
                nextID += 20
                queue.current = 0
                harness.server.trackListDidChange(replaced: true)
            }
            let signals = harness.flush()
            for signal in signals { client.apply(signal) }
            replacements += signals.filter { $0.member == "TrackListReplaced" }.count
            let shown = tracks(harness)
            #expect(
                client.tracks == shown,
                "step \(step): the client has \(client.tracks), Tracks is \(shown); signals \(signals)")
            for changed in signals where changed.changedInterface == Self.trackList {
                #expect(
                    changed.changed.isEmpty && changed.invalidated == ["Tracks"],
                    "Tracks is only ever invalidated: \(changed)")
            }
            if signals.contains(where: { $0.interface == Self.trackList && $0.member != "TrackMetadataChanged" }) {
                #expect(
                    signals.contains { $0.changedInterface == Self.trackList },
                    "a change of the window invalidates Tracks")
            }
        }
        #expect(replacements > 0)
    }

    @Test("a track change slides the window with one TrackRemoved and one TrackAdded")
    func slidingIsTwoEdits() {
        let (harness, queue) = make()
        queue.current = 4  // window 3...8
        harness.server.trackListDidChange()
        harness.flush()
        queue.current = 5  // window 4...9
        harness.server.trackListDidChange()
        let signals = harness.flush().filter { $0.interface == Self.trackList }
        #expect(signals.map(\.member) == ["TrackRemoved", "TrackAdded"])
        #expect(signals[0].arguments == [harness.trackID(3)])
        #expect(signals[1].arguments[0].stringVariantDictionary?["mpris:trackid"] == harness.trackID(9))
        #expect(signals[1].arguments[1] == harness.trackID(8))
    }

    @Test("TrackListReplaced names the current track as the Player's Metadata does")
    func replacedCarriesTheCurrentTrack() {
        let (harness, queue) = make()
        harness.start(0)
        queue.ids = [101, 102, 103]
        harness.server.trackListDidChange(replaced: true)
        let replaced = harness.flush().first { $0.member == "TrackListReplaced" }
        #expect(replaced?.arguments[0].objectPaths == [101, 102, 103].map { harness.server.trackID(for: $0) })
        #expect(replaced?.arguments[1] == harness.metadata["mpris:trackid"])
    }

    @Test("GetTracksMetadata answers known ids in order and leaves the others out")
    func getTracksMetadata() throws {
        let (harness, queue) = make(Array(1...40))
        queue.titles[35] = "Thirty-five"
        let asked: [Value] = [35, 999, 2].map { harness.trackID($0) } + [.objectPath(ObjectPath("/not/a/track")!)]
        let reply = try call(harness, "GetTracksMetadata", [.array(.objectPath, asked)]).get()
        guard case .array(_, let maps) = reply.first else {
            Issue.record("not an array: \(reply)")
            return
        }
        let dictionaries = maps.compactMap(\.stringVariantDictionary)
        #expect(dictionaries.map { $0["mpris:trackid"] } == [harness.trackID(35), harness.trackID(2)])
        #expect(
            dictionaries.first?["xesam:title"] == .string("Thirty-five"), "ids far outside the window are addressable")
    }

    @Test("AddTrack checks the scheme and the id it follows, then runs the command")
    func addTrack() {
        let (harness, queue) = make()
        defer { withExtendedLifetime(queue) {} }  // the server holds its source weakly
        var events: [AddTrackCommandEvent] = []
        harness.commands.addTrackCommand.addTarget { event in
            events.append(event)
            return .success
        }
        let noTrack = Value.objectPath(MPRISServer.noTrack)
        #expect(call(harness, "AddTrack", [.string("file:///a.flac"), noTrack, .boolean(true)]).isSuccess)
        #expect(
            call(harness, "AddTrack", [.string("https://b/stream"), harness.trackID(3), .boolean(false)]).isSuccess)
        #expect(
            call(harness, "AddTrack", [.string("file:///c.flac"), harness.trackID(999), .boolean(false)]).errorName
                == BusError.Name.invalidArgs.rawValue)
        #expect(
            call(harness, "AddTrack", [.string("ftp://d"), noTrack, .boolean(false)]).errorName
                == BusError.Name.invalidArgs.rawValue)
        #expect(events.map(\.uri) == ["file:///a.flac", "https://b/stream"])
        #expect(events.map(\.afterItemID) == [nil, 3])
        #expect(events.map(\.setAsCurrent) == [true, false])
    }

    @Test("AddTrack takes a URI of up to 8 KiB and refuses a longer one with InvalidArgs")
    func addTrackLongerThanTheLimit() {
        let (harness, queue) = make()
        defer { withExtendedLifetime(queue) {} }  // the server holds its source weakly
        var events: [AddTrackCommandEvent] = []
        harness.commands.addTrackCommand.addTarget { event in
            events.append(event)
            return .success
        }
        let noTrack = Value.objectPath(MPRISServer.noTrack)
        let longest =
            "http://host/" + String(repeating: "b", count: MPRISServer.maximumURILength - "http://host/".utf8.count)
        #expect(
            call(harness, "AddTrack", [.string(longest + "b"), noTrack, .boolean(false)]).errorName
                == BusError.Name.invalidArgs.rawValue)
        #expect(
            call(
                harness, "AddTrack",
                [.string("file:///" + String(repeating: "é", count: 5_000)), noTrack, .boolean(false)]
            ).errorName == BusError.Name.invalidArgs.rawValue, "bytes are counted, not characters")
        #expect(events.isEmpty)
        #expect(call(harness, "AddTrack", [.string(longest), noTrack, .boolean(false)]).isSuccess)
        #expect(events.map(\.uri) == [longest])
    }

    @Test("RemoveTrack and GoTo: a foreign path is InvalidArgs, an id no longer queued does nothing")
    func removeAndGoTo() {
        let (harness, queue) = make()
        defer { withExtendedLifetime(queue) {} }
        var removed: [UInt64] = []
        var visited: [UInt64] = []
        harness.commands.removeTrackCommand.addTarget { event in
            removed.append(event.itemID)
            return .success
        }
        harness.commands.goToTrackCommand.addTarget { event in
            visited.append(event.itemID)
            return .success
        }
        for member in ["RemoveTrack", "GoTo"] {
            #expect(call(harness, member, [harness.trackID(4)]).isSuccess)
            #expect(call(harness, member, [harness.trackID(77)]).isSuccess, "spec: no effect")
            #expect(
                call(harness, member, [.objectPath(MPRISServer.noTrack)]).errorName
                    == BusError.Name.invalidArgs.rawValue)
            #expect(
                call(harness, member, [.objectPath(ObjectPath("/test/trackx/4")!)]).errorName
                    == BusError.Name.invalidArgs.rawValue)
        }
        #expect(removed == [4])
        #expect(visited == [4])
    }

    @Test("TrackMetadataChanged goes out once per change, not for an item just announced by TrackAdded")
    func metadataChanged() {
        let (harness, queue) = make([1, 2, 3])
        queue.titles[2] = "Two"
        harness.server.trackMetadataDidChange(2)
        harness.server.trackMetadataDidChange(2)
        var signals = harness.flush().filter { $0.member == "TrackMetadataChanged" }
        #expect(signals.count == 1)
        #expect(signals.first?.arguments.first == harness.trackID(2))
        #expect(signals.first?.arguments.last?.stringVariantDictionary?["xesam:title"] == .string("Two"))
        #expect(harness.flush().isEmpty, "nothing twice")

        queue.ids.append(4)
        harness.server.trackListDidChange()
        harness.server.trackMetadataDidChange(4)
        signals = harness.flush()
        #expect(signals.filter { $0.member == "TrackAdded" }.count == 1)
        #expect(signals.filter { $0.member == "TrackMetadataChanged" }.isEmpty)

        queue.ids.removeAll { $0 == 3 }
        harness.server.trackMetadataDidChange(3)
        #expect(
            harness.flush().filter { $0.member == "TrackMetadataChanged" }.isEmpty, "not for an item no longer queued")
    }
}

@Suite("MPRIS Playlists")
@MainActor
struct MPRISPlaylistsTests {
    static let playlists = MPRISServer.playlistsInterface

    func make() -> (Harness, FakeQueue) {
        let harness = Harness()
        let source = FakeQueue([])
        harness.server.playlists = source
        harness.settle()
        return (harness, source)
    }

    func call(_ harness: Harness, _ member: String, _ arguments: [Value]) -> Result<[Value], BusError> {
        harness.server.object.dispatch(interface: Self.playlists, member: member, arguments: arguments)
    }

    @Test("properties, paging, orderings and an inactive ActivePlaylist of the spec's shape")
    func properties() throws {
        let (harness, source) = make()
        #expect(harness.value("PlaylistCount", Self.playlists) == .uint32(3))
        #expect(harness.value("Orderings", Self.playlists) == .strings(["Alphabetical"]))
        #expect(
            harness.value("ActivePlaylist", Self.playlists)
                == .structure([.boolean(false), .structure([.objectPath(ObjectPath("/")!), .string(""), .string("")])]))
        let page = try call(
            harness, "GetPlaylists", [.uint32(1), .uint32(5), .string("Alphabetical"), .boolean(false)]
        ).get()
        guard case .array(let type, let items) = page.first else {
            Issue.record("\(page)")
            return
        }
        #expect(type.signature == "(oss)")
        #expect(items.count == 2)
        #expect(
            items.first == .structure([.objectPath(ObjectPath("/test/playlist/2")!), .string("2 Jazz"), .string("")]))
        #expect(
            call(harness, "GetPlaylists", [.uint32(0), .uint32(5), .string("Played"), .boolean(false)]).errorName
                == BusError.Name.invalidArgs.rawValue)

        source.active = source.playlistItems[0]
        harness.server.playlistsDidChange()
        let changed = harness.flush().first { $0.changedInterface == Self.playlists }
        #expect(
            changed?.changed["ActivePlaylist"]
                == .structure([
                    .boolean(true),
                    .structure([.objectPath(ObjectPath("/test/playlist/1")!), .string("10 Rock"), .string("")]),
                ]))
    }

    @Test("ActivatePlaylist runs the command for our ids only; a rename is PlaylistChanged")
    func activateAndRename() {
        let (harness, source) = make()
        var activated: [UInt64] = []
        harness.commands.activatePlaylistCommand.addTarget { event in
            activated.append(event.playlistID)
            return .success
        }
        #expect(call(harness, "ActivatePlaylist", [.objectPath(ObjectPath("/test/playlist/3")!)]).isSuccess)
        #expect(
            call(harness, "ActivatePlaylist", [.objectPath(ObjectPath("/other/3")!)]).errorName
                == BusError.Name.invalidArgs.rawValue)
        #expect(
            call(harness, "ActivatePlaylist", [.objectPath(ObjectPath("/test/playlist/99")!)]).errorName
                == BusError.Name.invalidArgs.rawValue)
        #expect(activated == [3])

        source.playlistItems[2].name = "Delta Blues"
        source.playlistItems.append(MediaPlaylist(id: 4, name: "New"))
        harness.server.playlistsDidChange(renamed: [source.playlistItems[2]])
        let signals = harness.flush()
        #expect(
            signals.filter { $0.member == "PlaylistChanged" }.map(\.arguments) == [
                [.structure([.objectPath(ObjectPath("/test/playlist/3")!), .string("Delta Blues"), .string("")])]
            ])
        #expect(signals.first { $0.changedInterface == Self.playlists }?.changed["PlaylistCount"] == .uint32(4))
    }
}
