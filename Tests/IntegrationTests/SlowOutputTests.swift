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
    /// Position follows it calmly: one `Seeked` when the slowness is first seen, where the
    /// clock's holds and resumes sent one about every second (28 in 23 s), each backward,
    /// and a few changes of Rate while the pace is measured over a longer stretch. Counted
    /// from the start; a second `Seeked` is let pass for a loaded machine, whose late answers
    /// can make the first pace measured further off.
    @Test("a 0.7x output: Playing at the rate it really moves, Position near the audio, one Seeked")
    func slowOutputIsFollowedCalmly() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 60)
        let session = try await Session()
        defer { session.stop() }
        let mark = session.signals.count
        try await session.launch([tracks[0].path], sink: "identity sleep-time=150000 ! fakesink sync=true")
        try await session.waitForStatus("Playing")
        await session.waiter.elapse(.seconds(1))
        let before = try await session.position()
        let started = ContinuousClock.now
        await session.waiter.elapse(.seconds(12))
        let after = try await session.position()
        let pace = Double(after - before) / 1e6 / (ContinuousClock.now - started).inSeconds
        let signals = session.signals.dropFirst(mark)
        let seeked = signals.filter { $0.member == "Seeked" }
        let rates = signals.filter { $0.member == "PropertiesChanged" && $0.changed["Rate"] != nil }
        print("0.7x output: \(seeked.count) Seeked and \(rates.count) changes of Rate in 13 s; pace \(pace)")
        #expect((0.4...0.9).contains(pace), "the output is slow: Position moved \(pace) s a second")
        #expect(seeked.count <= 2, "\(seeked.count) Seeked in 13 s:\n\(session.log())")
        #expect(rates.count <= 5, "\(rates.count) changes of Rate in 13 s")
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))
        let rate = try await session.get("Rate").double ?? 1
        #expect(abs(rate - pace) < 0.15, "Rate \(rate) is the pace the audio moves at, \(pace)")
    }
}
