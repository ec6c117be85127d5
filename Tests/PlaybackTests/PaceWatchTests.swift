import Glibc
import Testing

@testable import PlaybackPipeline

/// The calm sample a pace alarm reports beside the sample off the pace: where the output's
/// audio last kept its pace, as the engine's progress watch judges it.
@Suite("PaceWatch: the calm sample of an alarm")
struct PaceWatchTests {
    /// CLOCK_MONOTONIC in ns, the clock of the output's pace check.
    private static func monotonicNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    private static let reference = Pipeline.Progress(position: .seconds(3), at: .now)
    private static let watch = PaceWatch(reference: reference, rate: 1, share: 0.8, period: .seconds(1))

    @Test func withoutABufferThatKeptThePaceTheReferenceIsTheCalmSample() {
        let sample = Pipeline.Progress(position: .seconds(4), at: .now)
        #expect(Self.watch.calm(before: sample, keptAt: Self.monotonicNow(), at: -1) == Self.reference)
    }

    @Test func theCalmSampleIsWhenAndWhereTheOutputLastKeptThePace() {
        let sample = Pipeline.Progress(position: .seconds(9), clockName: "GstSystemClock", at: .now)
        let calm = Self.watch.calm(
            before: sample, keptAt: Self.monotonicNow() - 1_200_000_000, at: 8_500_000_000)
        #expect(calm.position == .milliseconds(8500))
        let age = sample.at - calm.at
        #expect(age > .milliseconds(700) && age < .milliseconds(1700), "1.2 s before the sample: \(age)")
        #expect(calm.clock == nil, "the clock then is not known")
        #expect(calm.clockName == "GstSystemClock")
    }

    /// The buffer that last kept the pace had entered the output ahead of what was heard:
    /// audio that stood since must not seem to have gone back.
    @Test func theCalmPositionIsNeverPastTheSampleOffThePace() {
        let sample = Pipeline.Progress(position: .seconds(9), at: .now)
        let calm = Self.watch.calm(
            before: sample, keptAt: Self.monotonicNow() - 1_100_000_000, at: 9_200_000_000)
        #expect(calm.position == .seconds(9))
    }
}
