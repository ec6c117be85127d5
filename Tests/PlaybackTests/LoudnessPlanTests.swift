import Foundation
import Logging
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

@Suite("loudness: plans, R128, auto mode")
struct LoudnessPlanTests {
    @Test func r128GainsMoveToReplayGainsReference() {
        // Q7.8 against -23 LUFS; ReplayGain's reference is -18 LUFS, 5 dB louder.
        #expect(ReplayGainTags.replayGain(fromR128: 0) == 5)
        #expect(ReplayGainTags.replayGain(fromR128: -1280) == 0)
        #expect(ReplayGainTags.replayGain(fromR128: -2304) == -4)
        #expect(ReplayGainTags.replayGain(fromR128: 128) == 5.5)
        let tags = ReplayGainTags.r128(track: -2560, album: nil)
        #expect(tags == ReplayGainTags(trackGain: -5, source: .r128))
        #expect(ReplayGainTags.r128(track: nil, album: nil) == nil)
    }

    private func identity(_ album: String?, folder: String = "/music/a", read: Bool = true) -> Loudness.AlbumIdentity {
        .init(album: album, albumArtist: nil, folder: folder, tagsRead: read)
    }

    @Test func autoModeTakesTheAlbumGainOnlyForAnAlbumInOrder() {
        let x = identity("X")
        let y = identity("Y")
        #expect(Loudness.playsAlbumInOrder(shuffle: false, track: x, previous: x, next: y))
        #expect(Loudness.playsAlbumInOrder(shuffle: false, track: x, previous: nil, next: x))
        #expect(!Loudness.playsAlbumInOrder(shuffle: false, track: y, previous: x, next: nil), "a track between albums")
        #expect(!Loudness.playsAlbumInOrder(shuffle: true, track: x, previous: x, next: x), "Shuffle")
        #expect(
            !Loudness.playsAlbumInOrder(shuffle: false, track: identity(nil), previous: identity(nil), next: nil),
            "no album tag")
        // A neighbour not read yet counts by its folder.
        #expect(Loudness.playsAlbumInOrder(shuffle: false, track: x, previous: nil, next: identity(nil, read: false)))
        #expect(
            !Loudness.playsAlbumInOrder(
                shuffle: false, track: x, previous: nil, next: identity(nil, folder: "/music/b", read: false)))
        // Same album name by different album artists: two albums.
        let a = Loudness.AlbumIdentity(album: "Greatest Hits", albumArtist: "A", folder: "/m", tagsRead: true)
        let b = Loudness.AlbumIdentity(album: "Greatest Hits", albumArtist: "B", folder: "/m", tagsRead: true)
        #expect(!a.sameAlbum(as: b))
        #expect(
            Loudness.usesAlbumGain(.album, albumInOrder: false) && !Loudness.usesAlbumGain(.track, albumInOrder: true))
        #expect(Loudness.usesAlbumGain(.auto, albumInOrder: true) && !Loudness.usesAlbumGain(.off, albumInOrder: true))
    }

    @Test func plansApplyTheChosenGainWithPreampAndPeakLimit() {
        var settings = LoudnessSettings()
        settings.preamp = 2
        let tags = ReplayGainTags(trackGain: -6, trackPeak: 0.5, albumGain: -8, albumPeak: 0.9)
        let track = Loudness.plan(settings, tags: tags, albumGain: false, measured: nil, signature: nil)
        #expect(track.source == .track && !track.albumMode && track.appliedGain == -4)
        let album = Loudness.plan(settings, tags: tags, albumGain: true, measured: nil, signature: nil)
        #expect(album.source == .album && album.albumMode && album.appliedGain == -6)
        // +6 dB on a peak of 1.0: held at 0 dB, unless clipping prevention is off.
        let loud = ReplayGainTags(trackGain: 6, trackPeak: 1)
        #expect(
            Loudness.plan(LoudnessSettings(), tags: loud, albumGain: false, measured: nil, signature: nil).appliedGain
                == 0)
        settings = LoudnessSettings()
        settings.clipping = .off
        #expect(Loudness.plan(settings, tags: loud, albumGain: false, measured: nil, signature: nil).appliedGain == 6)
        settings.clipping = .limiter
        let limited = Loudness.plan(settings, tags: loud, albumGain: false, measured: nil, signature: nil)
        #expect(limited.appliedGain == 6 && limited.limiter)
    }

    @Test func everyValueIsHandedOverSoNothingOfThePreviousTrackRemains() {
        // Only an album gain: album mode falls back to it for the track as well.
        let plan = Loudness.plan(
            LoudnessSettings(), tags: .init(albumGain: -3), albumGain: false, measured: nil, signature: nil)
        #expect(
            plan.trackGain == -3 && plan.albumGain == -3 && plan.trackPeak == 1 && plan.albumPeak == 1 && plan.albumMode
        )
        let signature = TrackSignature(path: "/a.flac", size: 10, modified: 1)
        var settings = LoudnessSettings()
        settings.fallbackGain = -5
        let untagged = Loudness.plan(settings, tags: nil, albumGain: true, measured: nil, signature: signature)
        #expect(
            untagged.source == .fallback && untagged.trackGain == -5 && untagged.albumGain == -5
                && untagged.measure == signature)
        let measured = Loudness.plan(
            settings, tags: nil, albumGain: true, measured: .init(gain: 2, peak: 0.5), signature: signature)
        #expect(measured.source == .measured && measured.appliedGain == 2 && measured.measure == nil)
        settings.analysis = false
        #expect(
            Loudness.plan(settings, tags: nil, albumGain: false, measured: nil, signature: signature).measure == nil)
        settings.mode = .off
        let off = Loudness.plan(
            settings, tags: .init(trackGain: -6), albumGain: false, measured: nil, signature: signature)
        #expect(off.source == .off && off.appliedGain == 0 && off.ignoresStreamTags && off.measure == nil)
    }

    @Test func aStreamGivenNoPlanPlaysAtNoGain() {
        let plan = Loudness.neutralPlan
        #expect(plan.appliedGain == 0 && plan.ignoresStreamTags && plan.measure == nil && !plan.limiter)
    }

    @Test func gainsDescribedForLogLines() {
        #expect(Loudness.describe(-6) == "-6.00 dB")
        #expect(Loudness.describe(2.5) == "+2.50 dB")
        #expect(Loudness.describe(-0.001) == "+0.00 dB")
        #expect(Loudness.describe(-0.05) == "-0.05 dB")
    }
}

@Suite("loudness: the cache of measured gains")
struct GainCacheTests {
    @Test func encodesAndDecodesEveryPath() throws {
        let items: [(TrackSignature, MeasuredGain)] = [
            (
                TrackSignature(path: "/music/a.flac", size: 123, modified: 1_700_000_000_123_456_789),
                MeasuredGain(gain: -2.78, peak: 0.25)
            ),
            (
                TrackSignature(path: "/music/100%\ttab\nline\r.ogg", size: 0, modified: -5),
                MeasuredGain(gain: 7.125, peak: 1)
            ),
        ]
        let decoded = try GainCache.decode(GainCache.encode(items))
        #expect(decoded.map(\.signature) == items.map(\.0))
        #expect(decoded.map(\.gain) == items.map(\.1))
    }

    @Test(arguments: [
        "", "quaver-loudness 2\n", "quaver-loudness 1\n-1\t0.5\t10\t1\n", "quaver-loudness 1\nx\t0.5\t10\t1\t/a\n",
        "quaver-loudness 1\n-1\t0.5\t10\t1\trelative\n", "quaver-loudness 1\n-1\t0.5\t10\t1\t/a%zz\n",
        "quaver-loudness 1\nnan\t0.5\t10\t1\t/a\n",
    ])
    func refusesAnythingElse(_ text: String) {
        #expect(throws: GainCache.FormatError.self) { try GainCache.decode(Data(text.utf8)) }
    }

    @MainActor
    @Test func dropsTheLeastRecentlyPlayedBeyondItsLimit() {
        let cache = GainCache(folder: nil, limit: 2, logger: Logger(label: "test"))
        let a = TrackSignature(path: "/a", size: 1, modified: 1)
        let b = TrackSignature(path: "/b", size: 1, modified: 1)
        let c = TrackSignature(path: "/c", size: 1, modified: 1)
        cache.store(MeasuredGain(gain: -1, peak: 1), for: a)
        cache.store(MeasuredGain(gain: -2, peak: 1), for: b)
        _ = cache.gain(for: a)  // played again: b is now the least recent
        cache.store(MeasuredGain(gain: -3, peak: 1), for: c)
        #expect(cache.count == 2)
        #expect(cache.gain(for: a) != nil && cache.gain(for: b) == nil && cache.gain(for: c) != nil)
    }

    @MainActor
    @Test func keepsMeasurementsPrivatelyAcrossInstancesAndDropsChangedFiles() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-gaincache-\(UUID().uuidString)/quaver")
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let logger = Logger(label: "test")
        let signature = TrackSignature(path: "/music/a.flac", size: 10, modified: 20)
        let cache = GainCache(folder: PrivateFolder(folder), logger: logger)
        cache.store(MeasuredGain(gain: -3, peak: 0.5), for: signature)
        await cache.flush()
        let file = folder.appendingPathComponent(GainCache.fileName)
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o700)

        let reread = GainCache(folder: PrivateFolder(folder), logger: logger)
        await reread.waitUntilRead()
        #expect(reread.gain(for: signature) == MeasuredGain(gain: -3, peak: 0.5))
        var changed = signature
        changed.modified += 1
        #expect(reread.gain(for: changed) == nil, "a file changed since it was measured")

        try Data("garbage".utf8).write(to: file)
        let garbage = GainCache(folder: PrivateFolder(folder), logger: logger)
        await garbage.waitUntilRead()
        #expect(garbage.count == 0)
    }

    /// A measurement stored while the file is still being read (or just after) is kept with
    /// the file's, and both are written: whichever comes first, nothing waits and nothing is
    /// lost.
    @MainActor
    @Test func aMeasurementStoredWhileTheFileIsReadIsKeptWithIt() async throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.path("quaver")
        let logger = Logger(label: "test")
        let old = TrackSignature(path: "/music/old.flac", size: 10, modified: 20)
        let new = TrackSignature(path: "/music/new.flac", size: 30, modified: 40)
        let first = GainCache(folder: PrivateFolder(folder), logger: logger)
        first.store(MeasuredGain(gain: -3, peak: 0.5), for: old)
        await first.flush()

        let second = GainCache(folder: PrivateFolder(folder), logger: logger)
        second.store(MeasuredGain(gain: -5, peak: 0.7), for: new)
        await second.flush()
        #expect(second.count == 2)
        let written = try GainCache.decode(Data(contentsOf: folder.appendingPathComponent(GainCache.fileName)))
        #expect(Set(written.map(\.signature.path)) == [old.path, new.path])
        #expect(written.last?.signature == new, "the newer measurement is the most recently used")
    }
}
