import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPlayer

/// The position clock on instants the test chooses: no waiting, no real time.
@Suite("PositionClock: extrapolation, pause, rate and seek")
struct PositionClockTests {
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func aNewClockStandsAtZero() {
        let clock = PositionClock(at: start)
        #expect(clock.position(at: at(5_000)) == .zero)
        #expect(clock.rate == 0)
    }

    @Test("while playing, the position advances at the rate from the snapshot", arguments: [0.5, 1.0, 1.5, 2.0])
    func extrapolatesWithRate(rate: Double) {
        var clock = PositionClock(at: start)
        clock.set(.seconds(10), rate: rate, at: at(0))
        #expect(clock.position(at: at(0)) == .seconds(10))
        #expect(clock.position(at: at(2_000)) == .seconds(10) + .seconds(2) * rate)
        #expect(clock.position(at: at(60_000)) == .seconds(10) + .seconds(60) * rate)
    }

    @Test func pausedItStandsStill() {
        var clock = PositionClock(at: start)
        clock.set(.seconds(3), rate: 1, at: at(0))
        clock.changeRate(to: 0, at: at(1_500))  // paused 1.5 s later
        #expect(clock.position(at: at(1_500)) == .milliseconds(4_500))
        #expect(clock.position(at: at(90_000)) == .milliseconds(4_500), "no drift while paused")
        clock.changeRate(to: 1, at: at(10_000))  // resumed
        #expect(clock.position(at: at(11_000)) == .milliseconds(5_500), "goes on from where it paused")
    }

    @Test func aRateChangeKeepsThePositionAndGoesOnAtTheNewRate() {
        var clock = PositionClock(at: start)
        clock.set(.zero, rate: 1, at: at(0))
        clock.changeRate(to: 2, at: at(4_000))
        #expect(clock.position(at: at(4_000)) == .seconds(4))
        #expect(clock.position(at: at(5_000)) == .seconds(6))
        clock.changeRate(to: 0.5, at: at(5_000))
        #expect(clock.position(at: at(7_000)) == .seconds(7))
    }

    /// What Player does on Seek: the target, standing still, until the seek lands.
    @Test("right after a seek, the position is its target, however long the seek takes")
    func seekTargetRightAfterASeek() {
        var clock = PositionClock(at: start)
        clock.set(.seconds(40), rate: 1, at: at(0))
        clock.set(.seconds(12), rate: 0, at: at(1_000))  // the seek is asked for
        #expect(clock.position(at: at(1_000)) == .seconds(12))
        #expect(clock.position(at: at(4_000)) == .seconds(12), "a slow seek does not move it")
        clock.set(.seconds(12), rate: 1, at: at(4_000))  // it landed, playing
        #expect(clock.position(at: at(4_250)) == .milliseconds(12_250))
    }

    @Test func aReadBeforeTheSnapshotIsTheSnapshot() {
        var clock = PositionClock(at: start)
        clock.set(.seconds(8), rate: 1, at: at(1_000))
        // A snapshot the pipeline took after the read began is never extrapolated backwards.
        #expect(clock.position(at: at(500)) == .seconds(8))
    }

    @Test func neverNegativeNorNaN() {
        var clock = PositionClock(at: start)
        clock.set(.seconds(-5), rate: 1, at: at(0))
        #expect(clock.elapsed == .zero)
        clock.set(.seconds(1), rate: -1, at: at(0))  // rewinding past the start
        #expect(clock.position(at: at(3_000)) == .zero)
        clock.set(.seconds(1), rate: .nan, at: at(0))
        #expect(clock.rate == 0)
        #expect(clock.position(at: at(3_000)) == .seconds(1))
        clock.set(.seconds(1), rate: .infinity, at: at(0))
        #expect(clock.position(at: at(3_000)) == .seconds(1))
    }
}
