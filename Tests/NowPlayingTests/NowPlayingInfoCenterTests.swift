import Testing

@testable import NowPlaying

@MainActor
@Suite struct NowPlayingInfoCenterTests {
    let clock = FakeClock()
    let center: NowPlayingInfoCenter

    init() {
        let clock = self.clock
        center = NowPlayingInfoCenter(clock: { clock.now })
    }

    func item(_ id: UInt64 = 1, elapsed: Duration = .zero, rate: Double = 1) -> NowPlayingInfo {
        var info = NowPlayingInfo(queueItemID: id)
        info.title = "Title"
        info.duration = .seconds(100)
        info.elapsedPlaybackTime = elapsed
        info.playbackRate = rate
        return info
    }

    @Test func playbackStateIsStoppedWithoutInfo() {
        #expect(center.playbackState == .stopped)
        center.playbackState = .playing
        #expect(center.playbackState == .stopped, "no info: always stopped")
        center.nowPlayingInfo = item()
        #expect(center.playbackState == .playing)
        center.nowPlayingInfo = nil
        #expect(center.playbackState == .stopped)
    }

    @Test func timestampStartsAtCreation() {
        #expect(center.timestamp == clock.base)
    }

    @Test func timestampChangesWithElapsed() {
        center.nowPlayingInfo = item(elapsed: .seconds(1))
        clock.advance(by: .seconds(3))
        var info = center.nowPlayingInfo!
        info.elapsedPlaybackTime = .seconds(4)
        center.nowPlayingInfo = info
        #expect(center.timestamp == clock.now)
    }

    @Test func timestampChangesWithRate() {
        center.nowPlayingInfo = item(rate: 1)
        clock.advance(by: .seconds(3))
        var info = center.nowPlayingInfo!
        info.playbackRate = 0
        center.nowPlayingInfo = info
        #expect(center.timestamp == clock.now)
    }

    @Test func timestampChangesWithItem() {
        center.nowPlayingInfo = item(1)
        clock.advance(by: .seconds(3))
        center.nowPlayingInfo = item(2)
        #expect(center.timestamp == clock.now)
    }

    @Test func timestampKeptWhenOnlyOtherFieldsChange() {
        center.nowPlayingInfo = item(elapsed: .seconds(5))
        let stamped = center.timestamp
        clock.advance(by: .seconds(3))

        var info = center.nowPlayingInfo!
        info.artworkURL = "file:///tmp/cover.png"
        center.nowPlayingInfo = info
        #expect(center.timestamp == stamped, "artwork alone must not disturb the timing")

        info.title = "Other"
        info.album = "Album"
        center.nowPlayingInfo = info
        #expect(center.timestamp == stamped)
        #expect(center.extrapolatedPosition(of: info, at: clock.now) == .seconds(5), "stopped state: no progress")
    }

    @Test func timestampChangesWithPlaybackState() {
        center.nowPlayingInfo = item()
        clock.advance(by: .seconds(2))
        center.playbackState = .playing
        #expect(center.timestamp == clock.now)
    }

    @Test func observersNotifiedOnlyOnChange() {
        var notifications = 0
        center.observe { notifications += 1 }
        center.nowPlayingInfo = item()
        #expect(notifications == 1)
        center.nowPlayingInfo = item()
        #expect(notifications == 1, "identical info")
        center.playbackState = .playing
        #expect(notifications == 2)
        center.playbackState = .playing
        #expect(notifications == 2)
        center.volume = 0.5
        #expect(notifications == 3)
        center.volume = 0.5
        #expect(notifications == 3)
        center.nowPlayingInfo = nil
        #expect(notifications == 4)
    }

    @Test func currentPositionExtrapolatesWhilePlaying() {
        center.nowPlayingInfo = item(elapsed: .seconds(10), rate: 1.5)
        center.playbackState = .playing
        clock.advance(by: .seconds(4))
        #expect(center.currentPosition == .seconds(16))
    }

    @Test func currentPositionFrozenWhilePausedAndZeroWhenStopped() {
        center.nowPlayingInfo = item(elapsed: .seconds(10), rate: 1)
        center.playbackState = .paused
        clock.advance(by: .seconds(4))
        #expect(center.currentPosition == .seconds(10))
        center.playbackState = .stopped
        #expect(center.currentPosition == .zero)
    }

    @Test func currentPositionClampedToDuration() {
        center.nowPlayingInfo = item(elapsed: .seconds(90), rate: 1)
        center.playbackState = .playing
        clock.advance(by: .seconds(60))
        #expect(center.currentPosition == .seconds(100))
    }

    @Test func positionProviderWinsAndIsClampedAtZero() {
        center.nowPlayingInfo = item(elapsed: .seconds(10), rate: 1)
        center.playbackState = .playing
        let live = LiveBox()
        live.value = .seconds(42)
        center.positionProvider = { live.value }
        #expect(center.currentPosition == .seconds(42))
        live.value = .seconds(-3)
        #expect(center.currentPosition == .zero)
        live.value = nil
        clock.advance(by: .seconds(1))
        #expect(center.currentPosition == .seconds(11), "falls back to extrapolation")
        center.playbackState = .stopped
        live.value = .seconds(42)
        #expect(center.currentPosition == .zero, "stopped is zero whatever the provider says")
    }
}

@MainActor
final class LiveBox {
    var value: Duration?
}
