import DBus
import TestKit
import Testing

@testable import NowPlaying

/// `Seeked` on discontinuities only, and `Position` answered live.
@MainActor
@Suite struct MPRISSeekedTests {
    func seeked(_ signals: [RecordedSignal]) -> [RecordedSignal] { signals.filter(\.isSeeked) }

    /// Playing item 101 (200 s) at elapsed 10 s, rate 1, published.
    func playingAtTen() -> Harness {
        let h = Harness()
        h.start(0, at: .seconds(10))
        #expect(h.info.playbackState == .playing)
        #expect(h.info.nowPlayingInfo?.elapsedPlaybackTime == .seconds(10))
        #expect(h.info.nowPlayingInfo?.playbackRate == 1)
        return h
    }

    @Test func ordinaryProgressIsNotASeek() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(2))
        h.engine.setElapsed(.seconds(12))
        #expect(h.flush().isEmpty)
    }

    @Test func progressWithinToleranceIsNotASeek() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(2))
        h.engine.setElapsed(.milliseconds(12_080))
        #expect(h.flush().isEmpty)
    }

    @Test func jumpEmitsSeekedWithTheNewPosition() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(2))
        h.engine.setElapsed(.seconds(30))
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.isSeeked == true)
        #expect(signals.first?.arguments == [.int64(30_000_000)])
    }

    /// A client's seek is always answered with Seeked, even when it lands within the
    /// tolerance of where playback would have been (GNOME Shell resyncs its slider on it).
    @Test func aRequestedSeekWithinToleranceStillEmitsSeeked() {
        let h = playingAtTen()
        h.clock.advance(by: .milliseconds(50))
        _ = h.flush()
        #expect(h.call("Seek", [.int64(-50_000)]) == .success([]))
        let signals = seeked(h.flush())
        #expect(signals.count == 1, "\(signals)")
        #expect(signals.first?.arguments == [.int64(10_000_000)])
        // The request is used up: ordinary progress afterwards is not a seek.
        h.clock.advance(by: .seconds(1))
        h.engine.setElapsed(.milliseconds(11_000))
        #expect(seeked(h.flush()).isEmpty)
    }

    @Test func anIgnoredSetPositionLeavesNoPendingSeeked() {
        let h = playingAtTen()
        #expect(h.call("SetPosition", [.objectPath(ObjectPath("/quaver/track/999999")!), .int64(0)]) == .success([]))
        h.clock.advance(by: .seconds(1))
        h.engine.setElapsed(.seconds(11))
        #expect(seeked(h.flush()).isEmpty)
    }

    @Test func backwardJumpEmitsSeeked() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(20))
        h.engine.setElapsed(.seconds(5))
        #expect(seeked(h.flush()).map(\.arguments) == [[.int64(5_000_000)]])
    }

    @Test func seekedComesAfterThePropertiesChangedOfTheSameTransition() {
        let h = Harness()
        h.start(0, at: .seconds(10), state: .paused)
        h.clock.advance(by: .seconds(2))
        // One transition: resume somewhere else.
        h.engine.play()
        h.engine.setElapsed(.seconds(30))
        let signals = h.flush()
        #expect(signals.count == 2, "\(signals)")
        #expect(signals.first?.changedInterface == Harness.player)
        #expect(signals.first?.changed == ["PlaybackStatus": .string("Playing")])
        #expect(signals.last?.isSeeked == true)
        #expect(signals.last?.arguments == [.int64(30_000_000)])
    }

    @Test func resumeWherePausedIsNotASeek() {
        let h = Harness()
        h.start(0, at: .seconds(10), state: .paused)
        h.clock.advance(by: .seconds(60))
        _ = h.call("Play")
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(signals.first?.changed == ["PlaybackStatus": .string("Playing")])
        #expect(h.position == 10_000_000)
    }

    @Test func newItemAtZeroIsNotASeek() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(5))
        _ = h.call("Next")
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(signals.count == 1)
        #expect(signals.first?.changed["Metadata"] != nil)
    }

    @Test func newItemStartingElsewhereIsASeek() {
        let h = playingAtTen()
        h.engine.load(1, at: .seconds(45))  // resumes a bookmarked position
        let signals = h.flush()
        #expect(signals.first?.changed["Metadata"] != nil)
        #expect(signals.last?.isSeeked == true)
        #expect(signals.last?.arguments == [.int64(45_000_000)])
    }

    @Test func repeatOneRestartEmitsSeekedZeroWithoutMetadata() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(190))  // reached the end (200 s)
        h.engine.setElapsed(.zero)  // the same entry loops onto itself
        let signals = h.flush()
        #expect(signals.count == 1, "\(signals)")
        #expect(signals.first?.isSeeked == true)
        #expect(signals.first?.arguments == [.int64(0)])
        #expect(!signals.contains { $0.changed["Metadata"] != nil })
        #expect(h.position == 0)
    }

    /// The most common repeat-one case: a track played from 0 without any seek or pause
    /// loops onto itself. The engine republishes elapsed 0, rate 1 for the same entry,
    /// which equals what the center already holds, so the center neither restamps nor
    /// notifies: Position keeps extrapolating from the first start and no Seeked goes out.
    @Test func repeatOneRestartOfAnUntouchedTrackEmitsSeekedZero() {
        let h = Harness()
        h.start(0)  // item 101 (200 s) playing from 0
        h.clock.advance(by: .seconds(200))
        h.engine.setElapsed(.zero)  // loop: the same entry starts again at 0
        h.clock.advance(by: .seconds(5))
        let signals = h.flush()
        #expect(signals.map(\.member) == ["Seeked"], "the loop is a discontinuity")
        #expect(h.position == 5_000_000, "5 s into the second play-through")
    }

    @Test func previousRestartingTheTrackIsASeek() {
        let h = Harness()
        h.start(1, at: .seconds(10))
        h.clock.advance(by: .seconds(5))
        #expect(h.call("Previous") == .success([]))
        #expect(h.engine.events == [.previousTrack])
        let signals = h.flush()
        #expect(signals.map(\.member) == ["Seeked"], "same item: no Metadata")
        #expect(signals.first?.arguments == [.int64(0)])
    }

    @Test func previousToTheEarlierItemIsNotASeek() {
        let h = Harness()
        h.start(1, at: .seconds(2))
        #expect(h.call("Previous") == .success([]))
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(
            signals.first?.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.unwrapped == h.trackID(101))
    }

    @Test func setPositionEmitsSeeked() {
        let h = playingAtTen()
        _ = h.call("SetPosition", [h.trackID(101), .int64(100_000_000)])
        #expect(seeked(h.flush()).map(\.arguments) == [[.int64(100_000_000)]])
    }

    @Test func stoppingIsNotASeek() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(5))
        _ = h.call("Stop")
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(signals.count == 1)
        #expect(signals.first?.changed == ["PlaybackStatus": .string("Stopped")])
    }

    @Test func startingFromStoppedAtZeroIsNotASeek() {
        let h = playingAtTen()
        _ = h.call("Stop")
        h.flush()
        h.clock.advance(by: .seconds(5))
        _ = h.call("Play")
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(signals.first?.changed == ["PlaybackStatus": .string("Playing")])
    }

    @Test func pausingIsNotASeek() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(7))
        _ = h.call("Pause")
        #expect(seeked(h.flush()).isEmpty)
        #expect(h.info.nowPlayingInfo?.elapsedPlaybackTime == .seconds(17))
    }

    @Test func rateChangeKeepsThePositionAndIsNotASeek() {
        let h = Harness()
        h.commands.supportedPlaybackRates = 0.5...2
        h.start(0, at: .seconds(10))
        h.clock.advance(by: .seconds(4))
        _ = h.set("Rate", .double(2))
        let signals = h.flush()
        #expect(seeked(signals).isEmpty)
        #expect(signals.first?.changed == ["Rate": .double(2)])
        h.clock.advance(by: .seconds(3))
        #expect(h.position == 20_000_000, "14 s + 3 s × 2")
        h.clock.advance(by: .seconds(1))
        h.engine.setElapsed(.seconds(22))
        #expect(h.flush().isEmpty, "progress at rate 2 is predicted")
    }

    // MARK: Position

    @Test func positionExtrapolatesWhilePlaying() {
        let h = playingAtTen()
        #expect(h.position == 10_000_000)
        h.clock.advance(by: .milliseconds(2_500))
        #expect(h.position == 12_500_000)
        #expect(h.getAll()["Position"] == .int64(12_500_000))
    }

    @Test func positionFrozenWhilePaused() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(3))
        _ = h.call("Pause")
        h.clock.advance(by: .seconds(30))
        #expect(h.position == 13_000_000)
    }

    @Test func positionZeroWhenStoppedOrEmpty() {
        let h = Harness()
        #expect(h.position == 0)
        h.start(0, at: .seconds(10))
        _ = h.call("Stop")
        h.clock.advance(by: .seconds(3))
        #expect(h.position == 0)
    }

    @Test func positionNeverPassesTheEnd() {
        let h = playingAtTen()
        h.clock.advance(by: .seconds(500))
        #expect(h.position == 200_000_000)
    }

    @Test func positionUsesTheProvider() {
        let h = playingAtTen()
        h.info.positionProvider = { .milliseconds(77_000) }
        #expect(h.position == 77_000_000)
    }
}
