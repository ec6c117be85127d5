import DBus
import Testing

@testable import NowPlaying

/// `skipForwardCommand` and `skipBackwardCommand`, as code written for Apple's
/// `MPSkipIntervalCommand` uses them: MPRIS `Seek` reaches them when `seekCommand` has no
/// target, by the sign of its offset, with the step in seconds.
@MainActor
@Suite struct SkipCommandTests {
    /// What the skip handlers received, in order: the command's name and the interval.
    final class Skips {
        var events: [(String, Double)] = []
    }

    /// A player written the Apple way: a position command for the slider and the two skip
    /// commands, and no `seekCommand`.
    func applePlayer(keepPosition: Bool = true, forward: Bool = true, backward: Bool = true) -> (Harness, Skips) {
        let skips = Skips()
        let h = Harness { commands in
            commands.seekCommand.removeAllTargets()
            if !keepPosition { commands.changePlaybackPositionCommand.removeAllTargets() }
            if forward {
                commands.skipForwardCommand.addTarget { event in
                    skips.events.append(("skipForward", event.interval))
                    return .success
                }
            }
            if backward {
                commands.skipBackwardCommand.addTarget { event in
                    skips.events.append(("skipBackward", event.interval))
                    return .success
                }
            }
        }
        return (h, skips)
    }

    @Test("a positive Seek skips forward, a negative one back, by the client's step in seconds")
    func seekOffsetsBecomeSkips() {
        let (h, skips) = applePlayer()
        h.start(0, at: .seconds(60), state: .paused)
        #expect(h.call("Seek", [.int64(45_000_000)]) == .success([]))  // GNOME's FastForward key
        #expect(h.call("Seek", [.int64(-10_000_000)]) == .success([]))  // GNOME's Rewind key
        #expect(h.call("Seek", [.int64(30_000_000)]) == .success([]))  // Plasma's seek shortcuts
        #expect(h.call("Seek", [.int64(-5_000_000)]) == .success([]))
        #expect(h.call("Seek", [.int64(-2_500_001)]) == .success([]))
        #expect(
            skips.events.map(\.0) == ["skipForward", "skipBackward", "skipForward", "skipBackward", "skipBackward"])
        #expect(skips.events.map(\.1) == [45, 10, 30, 5, 2.500001])
        #expect(h.engine.events == [], "the position command gets none of them")
    }

    @Test("seekCommand, when it has a target, takes every Seek and the skip commands none")
    func seekCommandWins() {
        let skips = Skips()
        let h = Harness { commands in
            commands.skipForwardCommand.addTarget { event in
                skips.events.append(("skipForward", event.interval))
                return .success
            }
        }
        h.start(0, at: .seconds(60), state: .paused)
        #expect(h.call("Seek", [.int64(10_000_000)]) == .success([]))
        #expect(h.engine.events == [.seek(offset: .seconds(10), position: .seconds(70))])
        #expect(skips.events.isEmpty)
    }

    @Test("a Seek whose direction has no active skip command goes to changePlaybackPosition")
    func otherDirectionFallsBackToPosition() {
        let (h, skips) = applePlayer(backward: false)
        h.start(0, at: .seconds(60), state: .paused)
        #expect(h.call("Seek", [.int64(-10_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(50))])
        h.commands.skipForwardCommand.isEnabled = false
        #expect(h.call("Seek", [.int64(10_000_000)]) == .success([]))
        #expect(h.engine.events == [.changePlaybackPosition(.seconds(50)), .changePlaybackPosition(.seconds(60))])
        #expect(skips.events.isEmpty)
    }

    @Test("the skip commands alone make CanSeek, and disabling both takes it away")
    func skipsAloneMakeCanSeek() {
        let (h, _) = applePlayer(keepPosition: false, backward: false)
        h.start(0, at: .seconds(60), state: .paused)
        #expect(h.value("CanSeek") == .boolean(true))
        h.commands.skipForwardCommand.isEnabled = false
        let changes = h.playerChanges(h.flush())
        #expect(h.value("CanSeek") == .boolean(false))
        #expect(changes.count == 1 && changes.first?.changed["CanSeek"] == .boolean(false), "\(changes)")
    }

    @Test("with skip commands alone, SetPosition skips by the distance to the position asked for")
    func setPositionBecomesASkip() {
        let (h, skips) = applePlayer(keepPosition: false)
        h.start(0, at: .seconds(60), state: .paused)
        #expect(h.call("SetPosition", [h.trackID(101), .int64(100_000_000)]) == .success([]))
        #expect(h.call("SetPosition", [h.trackID(101), .int64(20_000_000)]) == .success([]))
        #expect(skips.events.map(\.0) == ["skipForward", "skipBackward"])
        #expect(skips.events.map(\.1) == [40, 40], "both from 60 s: the handlers here do not move the position")
    }

    @Test("a Seek past the end is Next, whatever handles the step")
    func pastTheEndIsNext() {
        let (h, skips) = applePlayer()
        h.start(0, at: .seconds(190))
        #expect(h.call("Seek", [.int64(30_000_000)]) == .success([]))
        #expect(h.engine.events == [.nextTrack])
        #expect(skips.events.isEmpty)
    }

    @Test("a live stream cannot seek: no skip reaches the handlers")
    func liveStreamIgnoresSkips() {
        let skips = Skips()
        let h = Harness(queue: [TestTrack(id: 9, title: "Live", duration: .seconds(100), isLiveStream: true)]) {
            commands in
            commands.seekCommand.removeAllTargets()
            commands.skipForwardCommand.addTarget { event in
                skips.events.append(("skipForward", event.interval))
                return .success
            }
        }
        h.start(0)
        #expect(h.value("CanSeek") == .boolean(false))
        #expect(h.call("Seek", [.int64(10_000_000)]) == .success([]))
        #expect(skips.events.isEmpty)
    }

    @Test("preferredIntervals keeps what the program sets; removeAllTargets removes the skip targets")
    func preferredIntervalsAndRemoval() {
        let (h, _) = applePlayer(keepPosition: false)
        #expect(h.commands.skipForwardCommand.preferredIntervals == [15])
        h.commands.skipBackwardCommand.preferredIntervals = [10, 30]
        #expect(h.commands.skipBackwardCommand.preferredIntervals == [10, 30])
        h.commands.removeAllTargets()
        #expect(!h.commands.skipForwardCommand.hasTargets && !h.commands.skipBackwardCommand.hasTargets)
    }
}
