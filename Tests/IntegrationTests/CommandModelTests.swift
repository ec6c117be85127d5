import DBus
import Foundation
import SeededRandom
import TestKit
import Testing

/// 200 random transport commands fired as fast as the bus takes them, in order on one
/// connection without waiting for replies, must leave quaver in the state a simple model of
/// the semantics of docs/mpris.md reaches for the same sequence: PlaybackStatus, the current track,
/// Rate, Volume, LoopStatus and Shuffle untouched, and Can* consistent with the track's place
/// in the queue and the status.
///
/// The seeds are printed; `QUAVER_MODEL_SEED` replays one (decimal, or hexadecimal with `0x`),
/// `QUAVER_MODEL_RUNS` runs more seeds than the default.
@Suite("random commands against a model")
@MainActor
struct CommandModelTests {
    nonisolated static let environment = ProcessInfo.processInfo.environment
    nonisolated static let seeds: [UInt64] = {
        if let text = environment["QUAVER_MODEL_SEED"],
            let seed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        {
            return [seed]
        }
        let runs = environment["QUAVER_MODEL_RUNS"].flatMap { Int($0) } ?? 3
        return (0..<UInt64(max(runs, 1))).map { 0x4D4F_4445_4C00_0000 &+ $0 }
    }()
    static let commandCount = 200
    static let trackCount = 5
    /// Long tracks, and positions that are multiples of 10 s: a seek never lands within
    /// seconds of the end or of Previous's 3 s threshold, whatever the few seconds the run
    /// takes add to a position.
    static let trackSeconds = 55

    @Test("200 random commands end in the state of the model", arguments: seeds)
    func randomCommandsMatchTheModel(seed: UInt64) async throws {
        let tracks = try await TestMedia.tracks(count: Self.trackCount, seconds: Double(Self.trackSeconds))
        let session = try await Session()
        defer { session.stop() }
        // At debug level, the log (shown on failure) says which commands were ignored and why.
        try await session.launch(["--log-level", "debug"] + tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let ids = try await session.trackListTracks()
        try #require(ids.count == Self.trackCount, "Tracks: \(ids)")
        // Every track's tags are read (in the background, from start-up): the commands act on
        // known lengths. (A Seek on a track not read yet is ignored: its end is unknown.)
        let tagsRead = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
            try await session.tagsRead(ids)
        }
        guard tagsRead else { throw HarnessError("the tracks' tags were not read; log:\n\(session.log())") }

        var random = SplitMix(seed: seed)
        var model = Model(
            ids: ids, trackSeconds: Double(Self.trackSeconds),
            position: Double(try await session.position()) / 1_000_000)
        var commands: [Command] = []
        var expectations: [Reply] = []
        var trace: [String] = []
        for _ in 0..<Self.commandCount {
            let command = Command.random(&random, model: model)
            commands.append(command)
            expectations.append(model.apply(command))
            trace.append("\(command) → \(model)")
        }
        print(
            "model: seed 0x\(String(seed, radix: 16)) (replay with QUAVER_MODEL_SEED), \(commands.count) commands, expected end: \(model)"
        )

        let started = ContinuousClock.now
        let answers = await session.sendPipelined(try commands.map { try $0.message(session) })
        let answered = ContinuousClock.now - started
        // The model leaves out the time the calls take, during which a track plays on. Each
        // decision that depends on the position (Previous's 3 s, a Seek reaching the end) had
        // a margin; the verdict holds while the calls, at the pace they were answered (taken
        // three times slower, at the fastest rate), leave it intact.
        let perCall = answered.inSeconds / Double(commands.count)
        print(
            "model: \(commands.count) calls answered in \(answered); the tightest position margin allows \(String(format: "%.1f", model.tightestMargin * 1000)) ms a call"
        )
        #expect(
            perCall * 3 < model.tightestMargin,
            "the calls took \(answered) to be answered: too slow for the model's positions to hold (the tightest margin allows \(model.tightestMargin * 1000) ms a call)"
        )
        for (index, (answer, expected)) in zip(answers, expectations).enumerated() where answer != expected {
            Issue.record("call #\(index) \(commands[index]) was answered \(answer), the model expects \(expected)")
        }

        // The state settles on the model's (each change is signalled), then stays there.
        let (settled, final) = try await session.waitForPlayerState { model.matches($0) }
        let differences = model.differences(final)
        #expect(
            settled && differences.isEmpty,
            """
            seed 0x\(String(seed, radix: 16)): the daemon's state is not the model's: \(differences.joined(separator: "; "))
            daemon: \(PlayerMirror.describe(final))
            model: \(model)
            the sequence, with the model's state after each command:
            \(trace.enumerated().map { "#\($0.offset) \($0.element)" }.joined(separator: "\n"))
            log:
            \(session.log().suffix(40000))
            """)
        if settled && differences.isEmpty {
            // Nothing moves on afterwards (a late load or a stale seek would).
            let mark = session.signals.count
            let moved = await session.waiter.wait(timeout: .seconds(2)) {
                session.signals.dropFirst(mark).contains {
                    $0.changed["Metadata"] != nil || $0.changed["PlaybackStatus"] != nil
                }
            }
            #expect(
                !moved,
                "the state moved after settling on the model's: \(session.signals.dropFirst(mark).map(\.description))")
            if model.status == "Playing" {
                // Playing at the Rate it says: the position moves that fast.
                let progress = try await session.progress(rate: model.rate, over: .seconds(2))
                #expect(abs(progress.error) <= 0.05 + progress.slack, "Playing at Rate \(model.rate), but: \(progress)")
            }
        }
        #expect(session.daemonStatus == nil, "quaver exited")
    }

    // MARK: - Commands

    typealias Reply = CallOutcome

    enum Command: CustomStringConvertible {
        case play, pause, next, previous
        case seek(seconds: Int)
        case setPosition(ObjectPath, seconds: Int)
        case rate(Double)
        case volume(Double)

        static func random(_ random: inout SplitMix, model: Model) -> Command {
            switch random.int(0..<16) {
            case 0, 1: return .play
            case 2, 3: return .pause
            case 4, 5, 6: return .next
            case 7, 8: return .previous
            case 9, 10: return .seek(seconds: random.pick([-100, -10, 10, 20, 100]))
            case 11, 12:
                // Mostly the current track (as the model has it), sometimes another one (stale).
                let id = random.chance(0.7) ? model.ids[model.index] : random.pick(model.ids)
                return .setPosition(id, seconds: random.pick([10, 20, 30, 40, 50, 60, -1]))
            case 13, 14: return .rate(random.pick([0, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 0.25]))
            default: return .volume(random.pick([0, 0.2, 0.5, 0.8, 1, 1.5, -0.5]))
            }
        }

        @MainActor func message(_ session: Session) throws -> Message {
            switch self {
            case .play: try session.playerMessage("Play")
            case .pause: try session.playerMessage("Pause")
            case .next: try session.playerMessage("Next")
            case .previous: try session.playerMessage("Previous")
            case .seek(let seconds): try session.playerMessage("Seek", [.int64(Int64(seconds) * 1_000_000)])
            case .setPosition(let id, let seconds):
                try session.playerMessage("SetPosition", [.objectPath(id), .int64(Int64(seconds) * 1_000_000)])
            case .rate(let rate): try session.setMessage("Rate", .double(rate))
            case .volume(let volume): try session.setMessage("Volume", .double(volume))
            }
        }

        var description: String {
            switch self {
            case .play: "Play"
            case .pause: "Pause"
            case .next: "Next"
            case .previous: "Previous"
            case .seek(let seconds): "Seek(\(seconds) s)"
            case .setPosition(let id, let seconds): "SetPosition(\(id.rawValue), \(seconds) s)"
            case .rate(let rate): "Rate=\(rate)"
            case .volume(let volume): "Volume=\(volume)"
            }
        }
    }

    // MARK: - The model

    /// The semantics of docs/mpris.md, with LoopStatus None and Shuffle off: Next and Previous keep
    /// Paused paused and Stopped stopped, and do nothing at the ends of the queue (CanGoNext
    /// or CanGoPrevious is false there); Previous restarts a track more than 3 s in; Seek
    /// clamps at 0 and past the end acts as Next (Stop on the last track); SetPosition with a
    /// stale track id, a negative position or one past the end is ignored; neither seeks
    /// while Stopped (CanSeek is false); Rate 0 means Pause and a rate outside 0.5...2 is
    /// InvalidArgs; Volume is clamped to 0...1.
    struct Model: CustomStringConvertible {
        let ids: [ObjectPath]
        let trackSeconds: Double
        var index = 0
        var status = "Playing"
        /// Seconds into the current track, leaving out the time the commands take to arrive
        /// (the positions used are far from every threshold; `tightestMargin` says how far).
        var position: Double
        var rate = 1.0
        var volume = 1.0
        /// Commands applied so far.
        private(set) var applied = 0
        /// The command since which the position may have moved on unseen (while playing);
        /// a track change, SetPosition, a restart or Play from Stopped sets it exactly.
        private var exactAt = 0
        /// The smallest margin (seconds of media) of a decision that depends on the position,
        /// per command since the position was exact, at the fastest rate: how long each
        /// command may take before a decision could go the other way.
        private(set) var tightestMargin = Double.infinity

        init(ids: [ObjectPath], trackSeconds: Double, position: Double) {
            self.ids = ids
            self.trackSeconds = trackSeconds
            self.position = position
        }

        private mutating func decide(margin: Double) {
            tightestMargin = min(tightestMargin, margin / Double(applied - exactAt + 1) / 2)
        }

        var description: String {
            "\(status) track \(index + 1) at \(String(format: "%.1f", position)) s, Rate \(rate), Volume \(volume)"
        }

        private mutating func moveTo(_ newIndex: Int) {
            index = newIndex
            position = 0
            exactAt = applied
        }

        mutating func apply(_ command: Command) -> Reply {
            defer { applied += 1 }
            switch command {
            case .play:
                if status == "Stopped" {
                    position = 0
                    exactAt = applied
                }
                status = "Playing"
            case .pause:
                if status == "Playing" { status = "Paused" }
            case .next:
                if index < ids.count - 1 { moveTo(index + 1) }
            case .previous:
                guard index > 0 else { break }
                if status != "Stopped" { decide(margin: abs(position - 3)) }
                if status != "Stopped" && position > 3 {
                    position = 0
                    exactAt = applied
                } else {
                    moveTo(index - 1)
                }
            case .seek(let seconds):
                guard status != "Stopped" else { break }
                let target = max(position + Double(seconds), 0)
                if seconds > 0 { decide(margin: abs(trackSeconds - target)) }
                if target >= trackSeconds {
                    if index < ids.count - 1 {
                        moveTo(index + 1)
                    } else {
                        status = "Stopped"
                        position = 0
                        exactAt = applied
                    }
                } else {
                    position = target  // relative: what had moved on unseen still has
                }
            case .setPosition(let id, let seconds):
                guard status != "Stopped", id == ids[index], seconds >= 0, Double(seconds) <= trackSeconds else {
                    break
                }
                position = Double(seconds)
                exactAt = applied
            case .rate(let newRate):
                if newRate == 0 {
                    if status == "Playing" { status = "Paused" }
                } else if (0.5...2).contains(newRate) {
                    rate = newRate
                } else {
                    return .error(MPRISNames.invalidArgs)
                }
            case .volume(let newVolume):
                volume = min(max(newVolume, 0), 1)
            }
            return .ok
        }

        /// What the daemon must show, property by property.
        var expected: [String: Value] {
            [
                "PlaybackStatus": .string(status),
                "Rate": .double(rate),
                "Volume": .double(volume),
                "LoopStatus": .string("None"),
                "Shuffle": .boolean(false),
                "CanGoNext": .boolean(index < ids.count - 1),
                "CanGoPrevious": .boolean(index > 0),
                "CanSeek": .boolean(status != "Stopped"),
                "CanPlay": .boolean(true),
                "CanPause": .boolean(true),
            ]
        }

        func differences(_ properties: [String: Value]) -> [String] {
            var found: [String] = []
            for (name, value) in expected.sorted(by: { $0.key < $1.key }) where properties[name] != value {
                found.append(
                    "\(name) is \(properties[name].map(PlayerMirror.describe) ?? "missing"), the model's \(PlayerMirror.describe(value))"
                )
            }
            let metadata = properties["Metadata"]?.stringVariantDictionary ?? [:]
            if metadata["mpris:trackid"]?.objectPath != ids[index] {
                found.append(
                    "mpris:trackid is \(metadata["mpris:trackid"]?.objectPath?.rawValue ?? "missing"), the model's \(ids[index].rawValue)"
                )
            }
            if metadata["xesam:title"]?.string != "Track \(index + 1)" {
                found.append(
                    "xesam:title is \(metadata["xesam:title"]?.string ?? "missing"), the model's Track \(index + 1)")
            }
            return found
        }

        func matches(_ properties: [String: Value]) -> Bool { differences(properties).isEmpty }
    }
}
