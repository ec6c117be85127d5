import AudioCheck
import DBus
import Foundation
import TestKit
import Testing

/// The reference of the gapless check (`AudioCheck.Gapless`: one continuous sine split into
/// two FLAC files at an exact sample), made once per test process.
enum GaplessMedia {
    nonisolated(unsafe) private static var made: Task<Gapless.Source, any Error>?
    private static let lock = NSLock()

    static func source() async throws -> Gapless.Source {
        let task = lock.withLock {
            if let made { return made }
            let task = Task {
                guard let gstLaunch = Tools.find("gst-launch-1.0") else {
                    throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
                }
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-gapless-\(getpid())")
                let environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry])
                { $1 }
                return try await Gapless.prepare(gstLaunch: gstLaunch.path, folder: folder) { command in
                    let result = try await Tools.run(
                        URL(fileURLWithPath: command[0]), Array(command.dropFirst()), environment: environment)
                    return (result.status, result.output + result.error)
                }
            }
            made = task
            return task
        }
        return try await task.value
    }

    /// A sink description that renders into a 16-bit mono WAV file at 44.1 kHz.
    static func fileSink(_ file: URL) -> String {
        "audioconvert ! \(Gapless.renderCaps) ! wavenc ! filesink location=\(file.path)"
    }
}

/// Gapless playback and playback rate, on the real binary: sample-exact joints rendered to a
/// file, Metadata switching when the next track is heard, Position exact at other rates, and
/// pitch kept.
@Suite("gapless playback and rate")
@MainActor
struct GaplessRateTests {
    private func title(of signal: Session.RecordedSignal) -> String? {
        signal.changed["Metadata"]?.stringVariantDictionary?["xesam:title"]?.string
    }

    /// Renders the two halves of the sine through quaver into a WAV file and compares it with
    /// the original, sample for sample.
    @Test("two consecutive tracks render with no sample inserted or lost at the joint")
    func gaplessJointIsSampleExact() async throws {
        let source = try await GaplessMedia.source()
        let session = try await Session()
        defer { session.stop() }
        let output = session.bus.directory.appendingPathComponent("rendered.wav")
        // Loaded paused first: a file sink renders as fast as the tracks decode, and the end
        // of the queue must come after a change a client is told about.
        try await session.launch(["--paused"] + source.parts.map(\.path), sink: GaplessMedia.fileSink(output))
        try await session.waitForStatus("Paused")
        let mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Stopped", after: mark)
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)

        // Off the main actor, where the signals of the tests running beside this one are handled.
        let analysis = try await Task.detached { try Gapless.analyse(WAV(contentsOf: output), source: source) }.value
        print("gapless: \(analysis.summary)")
        #expect(analysis.inserted == 0, "samples inserted (+) or lost (−) at the joint: \(analysis.summary)")
        #expect(analysis.leading == 0, "samples before the first one: \(analysis.summary)")
        #expect(analysis.renderedSamples == analysis.expectedSamples, "\(analysis.summary)")
        #expect(analysis.firstDeparture == nil, "the rendering departs from the continuous sine: \(analysis.summary)")
        #expect(analysis.headerComplete, "\(analysis.summary)")
    }

    /// In real time (a sink that keeps the clock): the second track's Metadata comes when it is
    /// heard, a first track's length after playback started, not when its URI was handed to
    /// playbin (which asks for it while the first track still has seconds to play).
    @Test("Metadata switches to the next track when it is heard, not when it is queued")
    func metadataSwitchesAtTheAudibleBoundary() async throws {
        let source = try await GaplessMedia.source()
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(source.parts.map(\.path))
        try await session.waitForSignal("Playing") { $0.changed["PlaybackStatus"] == .string("Playing") }
        let lag = MainActorLag()
        // The first track's start from its Position, not from when Playing came (a loaded
        // machine can delay that); times of signals are when the client got them.
        let anchor = try await session.bracketedPosition()
        let anchorRead = ContinuousClock.now
        let playing = anchor.at - .microseconds(anchor.microseconds)
        let uncertainty = anchor.halfWidth.inSeconds
        let firstTitle = session.signals.lazy.compactMap(title).first
        let switchSignal = try await session.waitForSignal("the second track's Metadata") {
            title(of: $0).map { $0 != firstTitle } ?? false
        }
        let switchIndex = session.signals.firstIndex { $0.received == switchSignal.received } ?? 0
        // The reply to the read came before the switch's signal: it was the first track's.
        try #require(
            anchorRead < switchSignal.received,
            "the first track's Position was read only after the switch (a very busy machine)")
        let positionAfterSwitch = try await session.position()
        let positionRead = ContinuousClock.now
        let stoppedSignal = try await session.waitForSignal(after: switchIndex, "the end of the queue") {
            $0.changed["PlaybackStatus"] == .string("Stopped")
        }
        let switched = switchSignal.received
        let stopped = stoppedSignal.received
        let first = source.partSeconds[0]
        let both = source.partSeconds[0] + source.partSeconds[1]
        let switchAfter = (switched - playing).inSeconds
        let stopAfter = (stopped - playing).inSeconds
        // How late this process's main actor (where the signals were stamped) could have
        // handled each of them.
        let lagAtSwitch = lag.worst(before: switched).inSeconds
        let lagAtStop = lag.worst(before: stopped).inSeconds
        print(
            "gapless in real time: the second Metadata came \(String(format: "%.3f", switchAfter)) s after the first track started (which lasts \(String(format: "%.3f", first)) s); Position then \(positionAfterSwitch) µs; Stopped after \(String(format: "%.3f", stopAfter)) s (both last \(String(format: "%.3f", both)) s); the start is known to ±\(String(format: "%.1f", uncertainty * 1000)) ms; the test's main actor was up to \(String(format: "%.3f", lagAtSwitch)) s late before the switch, \(String(format: "%.3f", lagAtStop)) s before Stopped"
        )
        // Early by at most one decoded buffer: a sink that keeps time takes the next
        // stream's start when it has rendered the last buffer of the first, which here is
        // the last FLAC block (up to 4,608 samples, 0.1 s).
        #expect(
            switchAfter > first - 0.15 - uncertainty,
            "the next track was published \(switchAfter) s into a \(first) s track: before it was heard")
        #expect(
            switchAfter < first + 1 + lagAtSwitch,
            "the next track was published \(switchAfter) s after playback started, long after the first (\(first) s) ended (the test's main actor was up to \(lagAtSwitch) s late)"
        )
        // Position then belongs to the new track: at most the time since the first one ended
        // (however late a busy machine delivered the signal and the reply), never the old
        // track's position.
        let sinceFirstEnded = (positionRead - playing).inSeconds - first
        #expect(
            positionAfterSwitch >= 0 && Double(positionAfterSwitch) / 1e6 < sinceFirstEnded + 0.2 + uncertainty,
            "Position just after the switch is \(positionAfterSwitch) µs, \(sinceFirstEnded) s after the first track ended: not the new track's"
        )
        #expect(
            stopAfter > both - 0.15 - uncertainty && stopAfter < both + 1 + lagAtStop,
            "the queue ended \(stopAfter) s after it started playing; both tracks last \(both) s (the test's main actor was up to \(lagAtStop) s late)"
        )
        #expect(session.signals.filter { $0.changed["Metadata"] != nil }.compactMap(title).count >= 2)
        #expect(
            !session.signals.contains { $0.changed["PlaybackStatus"] == .string("Paused") },
            "the switch flipped PlaybackStatus")
    }

    // MARK: - Rate

    /// Waits until Position has reached `seconds` of the current track (after a load or a
    /// switch, so that the measurement starts on settled playback).
    private func waitForPosition(_ session: Session, atLeast seconds: Double) async throws {
        let reached = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(50)) {
            try await session.position() >= Int64(seconds * 1_000_000)
        }
        guard reached else { throw HarnessError("Position did not reach \(seconds) s; log:\n\(session.log())") }
    }

    @Test("Rate 1.5 keeps Position exact over 10 s, and still applies after Next and after a gapless switch")
    func rateKeepsPositionExact() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")

        var mark = session.signals.count
        try await session.set("Rate", .double(1.5))
        try await session.waitForPlayerChange(after: mark, "Rate 1.5") { $0["Rate"] == .double(1.5) }
        try await waitForPosition(session, atLeast: 0.5)
        let steady = try await session.progress(rate: 1.5, over: .seconds(10))
        print("rate 1.5, first track: \(steady)")
        #expect(abs(steady.error) <= 0.05 + steady.slack, "Position after 10 s at 1.5x: \(steady)")
        #expect(try await session.get("PlaybackStatus") == .string("Playing"))

        // Next: the new track is loaded and plays at the same rate.
        mark = session.signals.count
        _ = try await session.call("Next")
        let second = try await session.waitForPlayerChange(after: mark, "Track 2") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 2")
        }
        let secondID = try #require(second.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
        #expect(try await session.get("Rate") == .double(1.5))
        try await waitForPosition(session, atLeast: 0.5)
        let afterNext = try await session.progress(rate: 1.5, over: .seconds(4))
        print("rate 1.5 after Next: \(afterNext)")
        #expect(abs(afterNext.error) <= 0.05 + afterNext.slack, "after Next: \(afterNext)")

        // A gapless switch: near the end of track 2, let it run into track 3.
        _ = try await session.call("SetPosition", [.objectPath(secondID), .int64(27_000_000)])
        mark = session.signals.count
        try await session.waitForPlayerChange(after: mark, "Track 3 (gapless)") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
        #expect(try await session.get("Rate") == .double(1.5))
        try await waitForPosition(session, atLeast: 1)
        let afterSwitch = try await session.progress(rate: 1.5, over: .seconds(4))
        print("rate 1.5 after a gapless switch: \(afterSwitch)")
        #expect(abs(afterSwitch.error) <= 0.05 + afterSwitch.slack, "after a gapless switch: \(afterSwitch)")
        #expect(!session.statusesSignalled(after: mark).contains("Paused"))
    }

    /// Rate sent right behind a command that loads a track (before the pipeline has it):
    /// the track plays at that rate, not only Rate says so.
    @Test("a Rate set while a track loads applies to that track", arguments: ["Next", "Stop, Play"])
    func rateSetWhileLoading(commands: String) async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let members = commands.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let outcomes = await session.sendPipelined(
            try members.map { try session.playerMessage($0) } + [try session.setMessage("Rate", .double(1.5))])
        #expect(outcomes.allSatisfy { $0 == .ok }, "\(outcomes)")
        let title = members.contains("Next") ? "Track 2" : "Track 1"
        let (settled, properties) = try await session.waitForPlayerState {
            $0["PlaybackStatus"] == .string("Playing") && $0["Rate"] == .double(1.5)
                && $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string(title)
        }
        #expect(settled, "not Playing \(title) at Rate 1.5: \(PlayerMirror.describe(properties))")
        try await waitForPosition(session, atLeast: 0.5)
        let measured = try await session.progress(rate: 1.5, over: .seconds(3))
        print("rate 1.5 set behind \(commands): \(measured)")
        #expect(abs(measured.error) <= 0.05 + measured.slack, "Rate says 1.5 after \(commands): \(measured)")
    }

    @Test("the limits of the range, 0.5 and 2.0, play at their speed", arguments: [0.5, 2.0])
    func rateLimits(rate: Double) async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        try await session.launch([tracks[0].path])
        try await session.waitForStatus("Playing")
        #expect(try await session.get("MinimumRate") == .double(0.5))
        #expect(try await session.get("MaximumRate") == .double(2))
        let mark = session.signals.count
        try await session.set("Rate", .double(rate))
        try await session.waitForPlayerChange(after: mark, "Rate \(rate)") { $0["Rate"] == .double(rate) }
        try await waitForPosition(session, atLeast: 0.5)
        let measured = try await session.progress(rate: rate, over: .seconds(4))
        print("rate \(rate): \(measured)")
        #expect(abs(measured.error) <= 0.05 + measured.slack, "\(measured)")
    }

    /// Rendered to a file at 1.5x: a 30 s track of a 440 Hz sine takes 20 s of samples, and
    /// the sine is still 440 Hz (without `scaletempo` it would be 660 Hz).
    @Test("Rate 1.5 keeps the pitch")
    func rateKeepsPitch() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 30)
        let session = try await Session()
        defer { session.stop() }
        let output = session.bus.directory.appendingPathComponent("rate.wav")
        try await session.launch(["--paused", tracks[0].path], sink: GaplessMedia.fileSink(output))
        try await session.waitForStatus("Paused")
        var mark = session.signals.count
        try await session.set("Rate", .double(1.5))
        try await session.waitForPlayerChange(after: mark, "Rate 1.5") { $0["Rate"] == .double(1.5) }
        mark = session.signals.count
        _ = try await session.call("Play")
        try await session.waitForStatus("Stopped", after: mark)
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)

        // Off the main actor, where the signals of the tests running beside this one are handled.
        let (seconds, found) = try await Task.detached {
            let rendered = try WAV(contentsOf: output)
            // The middle of the rendering: away from the preroll before the rate applied.
            let middle = rendered.samples[(rendered.samples.count / 4)..<(rendered.samples.count * 3 / 4)]
            return (
                Double(rendered.frames) / Double(rendered.sampleRate),
                Tone.frequency(of: middle, sampleRate: rendered.sampleRate)
            )
        }.value
        let frequency = try #require(found, "no tone in the rendering")
        print(
            "rate 1.5 rendered: \(String(format: "%.3f", seconds)) s of samples for 30 s of media; tone \(String(format: "%.1f", frequency)) Hz (the track's is 440 Hz)"
        )
        #expect(abs(frequency - 440) / 440 < 0.03, "the tone is \(frequency) Hz at 1.5x, not 440 Hz: the pitch changed")
        #expect(abs(seconds - 20) < 0.5, "\(seconds) s rendered for 30 s of media at 1.5x")
    }
}
