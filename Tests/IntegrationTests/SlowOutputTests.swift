import DBus
import Foundation
import TestKit
import Testing

/// An output slower than real time, as a client on the bus meets it.
@Suite("an output slower than real time")
@MainActor
struct SlowOutputTests {
    /// A sink that sleeps 150 ms on each buffer takes the audio at about 0.7 of real time, in
    /// bursts. Quaver stays Playing, Rate says the pace the audio really moves at, and
    /// Position follows it calmly: at most two `Seeked` in 12 s, where the clock's holds and
    /// resumes sent one about every second (28 in 23 s), each backward.
    @Test("a 0.7x output: Playing at the rate it really moves, Position near the audio, at most two Seeked")
    func slowOutputIsFollowedCalmly() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 60)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([tracks[0].path], sink: "identity sleep-time=150000 ! fakesink sync=true")
        try await session.waitForStatus("Playing")
        await session.waiter.elapse(.seconds(1))
        let mark = session.signals.count
        let before = try await session.position()
        let started = ContinuousClock.now
        await session.waiter.elapse(.seconds(12))
        let after = try await session.position()
        let pace = Double(after - before) / 1e6 / (ContinuousClock.now - started).inSeconds
        let seeked = session.signals.dropFirst(mark).filter { $0.member == "Seeked" }
        #expect((0.4...0.9).contains(pace), "the output is slow: Position moved \(pace) s a second")
        #expect(seeked.count <= 2, "\(seeked.count) Seeked in 12 s:\n\(session.log())")
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        let rate = try await session.get("Rate").double ?? 1
        #expect(abs(rate - pace) < 0.15, "Rate \(rate) is the pace the audio moves at, \(pace)")
    }
}
