import Foundation
import SeededRandom
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The Can* flags against what the commands then do, on a real pipeline: random commands on
/// small queues, and before each, the flags of the settled player. A flag that is false
/// promises that its command does nothing; one that is true, that it does something.
@Suite("Player: each Can* flag says what its command does", .serialized)
@MainActor
struct CanFlagPropertyTests {
    /// The flags as the daemon derives them from the player (Daemon.syncNowPlaying and
    /// syncCommandTarget, then MPRISServer): the player names only Next and Previous itself.
    struct Flags: CustomStringConvertible {
        var play, pause, seek, next, previous: Bool

        @MainActor init(_ player: Player) {
            let shown = player.current != nil
            play = shown && player.count > 0
            pause = shown
            let entry = player.selectedEntry.flatMap { $0.failure == nil ? $0 : nil }
            let seekable =
                player.requestedStatus != .stopped
                && (entry?.info.map { $0.isSeekable && !$0.isLive && $0.duration != nil } ?? false)
            seek = shown && player.current?.info?.duration != nil && seekable
            next = player.canGoNext
            previous = player.canGoPrevious
        }

        var description: String {
            "play \(play) pause \(pause) seek \(seek) next \(next) previous \(previous)"
        }
    }

    enum Command: CustomStringConvertible {
        case play, pause, stop, next, previous
        case seek(Duration)
        case repeatMode(Player.RepeatMode)
        case shuffle(Bool)
        case enqueue(Int)
        case remove(Int)

        var description: String {
            switch self {
            case .play: "play"
            case .pause: "pause"
            case .stop: "stop"
            case .next: "next"
            case .previous: "previous"
            case .seek(let target): "seek \(target.inSeconds)"
            case .repeatMode(let mode): "repeat \(mode)"
            case .shuffle(let on): "shuffle \(on)"
            case .enqueue(let index): "enqueue after \(index)"
            case .remove(let index): "remove #\(index)"
            }
        }
    }

    static func randomCommand(_ random: inout SplitMix, count: Int) -> Command {
        // Play and Seek more often than the rest: stopped, most flags are false, and a run
        // should meet each flag both ways.
        switch random.int(0..<16) {
        case 0, 1, 2: .play
        case 3, 4: .pause
        case 5, 6: .next
        case 7, 8: .previous
        case 9, 10, 11: .seek(.milliseconds(random.int(0..<14_000)))
        case 12: .repeatMode(random.pick(Player.RepeatMode.allCases))
        case 13: .shuffle(random.chance(0.5))
        case 14: .enqueue(random.int(0..<max(count, 1)))
        default: random.chance(0.5) ? .remove(random.int(0..<max(count, 1))) : .stop
        }
    }

    /// What a client sees of the player at one instant.
    struct Seen {
        var entry: UInt64?
        var status: Player.Status
        var position: Duration
        var at: ContinuousClock.Instant

        @MainActor init(_ player: Player) {
            entry = player.current?.id
            status = player.status
            position = player.position ?? .zero
            at = .now
        }

        /// Where the position would be at `later` had nothing happened.
        func extrapolated(to later: Seen, rate: Double) -> Duration {
            status == .playing ? position + (later.at - at) * rate : position
        }
    }

    /// Settled: what is shown is what the commands asked for, tags read, nothing on its way.
    func waitUntilSettled(_ probe: PlayerProbe) async -> Bool {
        await probe.wait(upTo: .seconds(10), poll: .milliseconds(20)) { [player = probe.player] in
            let selected = player.selectedEntry.flatMap { $0.failure == nil ? $0 : nil }
            return !player.isSettling && player.status == player.requestedStatus && player.current?.id == selected?.id
                && (player.current == nil || player.current?.info != nil)
        }
    }

    @Test(
        "random commands on a small queue: flag false, nothing happens; flag true, something does",
        arguments: [11, 12, 13, 14, 15] as [UInt64])
    func flagsPredictTheCommands(seed: UInt64) async throws {
        let folder = try TemporaryFolder("canflags\(seed)")
        defer { folder.remove() }
        // Longer than any run of commands on one track, so that no track ends during a step.
        let tracks = try await Media.tracks(4, seconds: 20, in: folder).map(\.absoluteString)
        let probe = try PlayerProbe.make()
        let player = probe.player
        var random = SplitMix(seed: seed)
        player.enqueue(Array(tracks.prefix(1 + random.int(0..<3))))
        var log: [String] = []
        var tally: [String: Int] = [:]

        for step in 0..<40 {
            #expect(
                await waitUntilSettled(probe), "seed \(seed) step \(step): the player did not settle: \(log.suffix(4))")
            // A track near its end would end during the step: it is taken back first.
            if player.status == .playing, let position = player.position, position > .seconds(15) {
                player.seek(to: .seconds(1))
                _ = await waitUntilSettled(probe)
            }
            let command = Self.randomCommand(&random, count: player.count)
            let flags = Flags(player)
            let before = Seen(player)
            let requested = player.requestedPosition
            run(command, on: player, tracks: tracks, random: &random)
            // A command that does nothing may still start something a moment later.
            await probe.elapse(.milliseconds(100))
            let settled = await waitUntilSettled(probe)
            let after = Seen(player)
            let context =
                "seed \(seed) step \(step): \(command) with \(flags), from \(before.status) #\(before.entry.map(String.init) ?? "-") at \(before.position.inSeconds) to \(after.status) #\(after.entry.map(String.init) ?? "-") at \(after.position.inSeconds); earlier: \(log.suffix(4))"
            log.append("\(command) [\(flags)]")
            #expect(settled, "did not settle: \(context)")
            check(command, flags: flags, before: before, after: after, requested: requested, rate: player.rate, context)
            tally[
                "\(command)".split(separator: " ")[0] + " \(flagFor(command, flags).map { String($0) } ?? "-")",
                default: 0] += 1
        }
        // How often each command met each flag value: a run that never met one checks nothing of it.
        print(
            "can-flags seed \(seed): \(tally.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", "))"
        )
    }

    func flagFor(_ command: Command, _ flags: Flags) -> Bool? {
        switch command {
        case .play: flags.play
        case .pause: flags.pause
        case .seek: flags.seek
        case .next: flags.next
        case .previous: flags.previous
        default: nil
        }
    }

    /// The property's Pause case at its narrowest: CanPause is true while playing, so a Pause
    /// must pause, even in the moment a seek is on its way.
    @Test("Pause right after a Seek while playing pauses")
    func pauseRightAfterASeek() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let tracks = try await Media.tracks(1, seconds: 20, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.enqueue(tracks.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing))
        await probe.elapse(.milliseconds(300))
        #expect(Flags(player).pause)
        player.seek(to: .seconds(5))
        player.pause()
        let paused = await probe.waitFor(.paused, upTo: .seconds(5))
        #expect(paused, "status \(player.status), asked \(player.requestedStatus)")
    }

    func run(_ command: Command, on player: Player, tracks: [String], random: inout SplitMix) {
        switch command {
        case .play: player.play()
        case .pause: player.pause()
        case .stop: player.stop()
        case .next: player.next()
        case .previous: player.previous()
        case .seek(let target): player.seek(to: target)
        case .repeatMode(let mode): player.setRepeatMode(mode)
        case .shuffle(let on): player.setShuffle(on)
        case .enqueue(let index):
            player.enqueue([random.pick(tracks)], after: player.count == 0 ? nil : min(index, player.count - 1))
        case .remove(let index): if index < player.count { player.remove(id: player.entries[index].id) }
        }
    }

    func check(
        _ command: Command, flags: Flags, before: Seen, after: Seen, requested: Duration, rate: Double,
        _ context: String
    ) {
        let expected = before.extrapolated(to: after, rate: rate)
        // More than half a second from where it would be: the command moved it.
        let jumped = abs((after.position - expected).inSeconds) > 0.5
        let nothing = after.entry == before.entry && after.status == before.status && !jumped
        switch command {
        case .play:
            if !flags.play { #expect(nothing, "CanPlay false, yet Play did something: \(context)") }
            if flags.play && before.status != .playing {
                #expect(after.status == .playing, "CanPlay true, yet Play did not play: \(context)")
            }
        case .pause:
            if !flags.pause { #expect(nothing, "CanPause false, yet Pause did something: \(context)") }
            if flags.pause && before.status == .playing {
                #expect(after.status == .paused, "CanPause true, yet Pause did not pause: \(context)")
            }
        case .seek(let target):
            if !flags.seek { #expect(nothing, "CanSeek false, yet Seek did something: \(context)") }
            if flags.seek {
                // At the target, plus what played since (with room for a busy machine).
                let played = after.status == .playing ? (after.at - before.at) * rate : .zero
                let landed =
                    after.position >= target - .milliseconds(300)
                    && after.position <= target + played + .milliseconds(300)
                #expect(
                    after.entry == before.entry && landed,
                    "CanSeek true, yet Seek did not land at \(target.inSeconds): \(context)")
            }
        case .next:
            if !flags.next { #expect(nothing, "CanGoNext false, yet Next did something: \(context)") }
            if flags.next {
                #expect(after.entry != before.entry, "CanGoNext true, yet Next kept the track: \(context)")
            }
        case .previous:
            // Previous may restart the track (past 3 s, or with nothing before it): the flag
            // speaks of changing track only.
            if !flags.previous {
                #expect(after.entry == before.entry, "CanGoPrevious false, yet Previous changed track: \(context)")
            }
            let restarts = before.status != .stopped && requested > .seconds(3)
            if flags.previous && !restarts {
                #expect(after.entry != before.entry, "CanGoPrevious true, yet Previous kept the track: \(context)")
            }
            if restarts {
                #expect(
                    after.entry == before.entry && after.position < .seconds(2),
                    "Previous past 3 s restarts: \(context)")
            }
        case .stop, .repeatMode, .shuffle, .enqueue, .remove:
            break  // no flag of their own: they change the flags the next command is checked with
        }
    }
}
