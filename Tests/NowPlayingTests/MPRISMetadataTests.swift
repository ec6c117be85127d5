import DBus
import Testing

@testable import NowPlaying

/// The types and contents of `Metadata`.
@MainActor
@Suite struct MPRISMetadataTests {
    func richItem(_ id: UInt64 = 42) -> NowPlayingInfo {
        var info = NowPlayingInfo(queueItemID: id)
        info.title = "Song"
        info.artists = ["Ann", "Bob"]
        info.album = "Album"
        info.albumArtists = ["Various"]
        info.genres = ["Jazz", "Blues"]
        info.trackNumber = 3
        info.discNumber = 2
        info.duration = .milliseconds(200_500)
        info.artworkURL = "file:///tmp/cover.png"
        info.assetURL = "file:///music/song.flac"
        return info
    }

    @Test func noItemIsAnEmptyMap() {
        let h = Harness()
        #expect(h.metadata == [:])
        #expect(h.server.currentTrackID == MPRISServer.noTrack)
    }

    @Test func valuesHaveTheRequiredTypes() {
        let h = Harness()
        h.info.nowPlayingInfo = richItem()
        let metadata = h.metadata
        #expect(metadata["mpris:trackid"]?.type == .objectPath)
        #expect(metadata["mpris:length"] == .int64(200_500_000))
        #expect(metadata["xesam:title"] == .string("Song"))
        #expect(metadata["xesam:artist"] == .array(.string, [.string("Ann"), .string("Bob")]))
        #expect(metadata["xesam:album"] == .string("Album"))
        #expect(metadata["xesam:albumArtist"] == .strings(["Various"]))
        #expect(metadata["xesam:genre"] == .array(.string, [.string("Jazz"), .string("Blues")]))
        #expect(metadata["xesam:trackNumber"] == .int32(3))
        #expect(metadata["xesam:discNumber"] == .int32(2))
        #expect(metadata["mpris:artUrl"] == .string("file:///tmp/cover.png"))
        #expect(metadata["xesam:url"] == .string("file:///music/song.flac"))
        #expect(metadata.count == 11)
        // The whole map is a{sv}.
        #expect(h.value("Metadata")?.type == .dictionary(key: .string, value: .variant))
    }

    @Test func trackIDIsUnderTheConfiguredPrefix() throws {
        let h = Harness()
        h.info.nowPlayingInfo = richItem(42)
        let id = try #require(h.metadata["mpris:trackid"]?.objectPath)
        #expect(id == ObjectPath("/test/track/42"))
        #expect(id.isDescendant(of: h.server.configuration.trackIDPrefix))
        #expect(!id.isDescendant(of: ObjectPath("/org/mpris")!))
        #expect(id != MPRISServer.noTrack)
        #expect(h.server.currentTrackID == id)
    }

    @Test func trackIDUniquePerQueueItem() {
        let h = Harness()
        // The same file queued twice: two entries, two ids.
        h.info.nowPlayingInfo = richItem(1)
        let first = h.metadata["mpris:trackid"]
        h.info.nowPlayingInfo = richItem(2)
        let second = h.metadata["mpris:trackid"]
        #expect(first != nil)
        #expect(second != nil)
        #expect(first != second)
        h.info.nowPlayingInfo = richItem(1)
        #expect(h.metadata["mpris:trackid"] == first, "stable for the same entry")
    }

    @Test func configurationDefaults() {
        let configuration = MPRISServer.Configuration(playerName: "quaver", identity: "Quaver")
        #expect(configuration.trackIDPrefix == ObjectPath("/quaver/track"))
        #expect(configuration.errorNamespace == "org.mpris.MediaPlayer2.quaver.Error")
        #expect(configuration.supportedURISchemes == ["file", "http", "https"])
        #expect(configuration.seekTolerance == .milliseconds(100))
    }

    @Test func trackIDPrefixIsSanitized() {
        let configuration = MPRISServer.Configuration(playerName: "my-player", identity: "X")
        #expect(configuration.trackIDPrefix == ObjectPath("/my_player/track"))
        #expect(!configuration.trackIDPrefix.isDescendant(of: ObjectPath("/org/mpris")!))
        let odd = MPRISServer.Configuration(playerName: "", identity: "X")
        #expect(odd.trackIDPrefix == ObjectPath("/player/track"))
    }

    @Test func emptyStringsAreOmitted() {
        let h = Harness()
        var info = NowPlayingInfo(queueItemID: 5)
        info.title = ""
        info.album = ""
        info.artists = ["", ""]
        info.albumArtists = [""]
        info.genres = ["", "Rock"]
        info.artworkURL = ""
        info.assetURL = ""
        h.info.nowPlayingInfo = info
        let metadata = h.metadata
        #expect(metadata["xesam:title"] == nil)
        #expect(metadata["xesam:album"] == nil)
        #expect(metadata["xesam:artist"] == nil)
        #expect(metadata["xesam:albumArtist"] == nil)
        #expect(metadata["mpris:artUrl"] == nil)
        #expect(metadata["xesam:url"] == nil)
        #expect(metadata["xesam:genre"] == .strings(["Rock"]))
        #expect(Set(metadata.keys) == ["mpris:trackid", "xesam:genre"])
    }

    @Test func unknownOrLiveLengthIsOmitted() {
        let h = Harness()
        var info = richItem()
        info.duration = nil
        h.info.nowPlayingInfo = info
        #expect(h.metadata["mpris:length"] == nil)
        info.duration = .seconds(10)
        info.isLiveStream = true
        h.info.nowPlayingInfo = info
        #expect(h.metadata["mpris:length"] == nil)
    }

    @Test func nonPositiveOrHugeNumbersAreOmitted() {
        let h = Harness()
        var info = richItem()
        info.trackNumber = 0
        info.discNumber = Int(Int32.max) + 1
        h.info.nowPlayingInfo = info
        #expect(h.metadata["xesam:trackNumber"] == nil)
        #expect(h.metadata["xesam:discNumber"] == nil)
    }

    @Test func metadataIsSentWhole() {
        let h = Harness()
        h.info.nowPlayingInfo = richItem()
        h.flush()
        var info = h.info.nowPlayingInfo!
        info.artworkURL = "file:///tmp/other.png"
        h.info.nowPlayingInfo = info
        let signals = h.flush()
        #expect(signals.count == 1)
        let sent = signals.first?.changed["Metadata"]?.stringVariantDictionary ?? [:]
        #expect(sent.count == 11, "every key, not only the artwork")
        #expect(sent["mpris:artUrl"]?.unwrapped == .string("file:///tmp/other.png"))
        #expect(sent["xesam:title"]?.unwrapped == .string("Song"))
    }

    @Test func microsecondsTruncateAndSaturate() {
        #expect(Duration.seconds(2).microseconds == 2_000_000)
        #expect(Duration.nanoseconds(1_999).microseconds == 1)
        #expect(Duration.seconds(Int64.max).microseconds == .max)
        #expect(Duration.seconds(Int64.min).microseconds == .min)
    }
}
