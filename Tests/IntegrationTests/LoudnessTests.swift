import AudioCheck
import ChildProcess
import Foundation
import TestKit
import Testing

/// The tagged tones of the loudness tests, made once per test process.
enum LoudnessFixtures {
    struct Track: Sendable {
        var file: URL
        var gains: LoudnessMedia.Gains
        var frequency: Int
    }

    nonisolated(unsafe) private static var made: [String: Task<[Track], any Error>] = [:]
    private static let lock = NSLock()
    static let seconds = 3.0

    /// Makes `specs` (name, container, gains, album) once, each at a frequency of its own.
    static func tracks(_ set: String, _ specs: [(String, LoudnessMedia.Container, LoudnessMedia.Gains, String)])
        async throws -> [Track]
    {
        let task = lock.withLock {
            if let existing = made[set] { return existing }
            let task = Task {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "quaver-loudness-\(getpid())-\(set)")
                var tracks: [Track] = []
                for (index, spec) in specs.enumerated() {
                    let frequency = 300 + 110 * index
                    let file = try await LoudnessMedia.make(
                        spec.0, spec.1, gains: spec.2, album: spec.3, frequency: frequency, seconds: seconds, in: folder
                    )
                    tracks.append(Track(file: file, gains: spec.2, frequency: frequency))
                }
                return tracks
            }
            made[set] = task
            return task
        }
        return try await task.value
    }

    /// One tone per way of tagging, each with its own track and album gain, and one without
    /// tags last (after a tagged one: nothing of its gain may remain).
    static func formats() async throws -> [Track] {
        try await tracks(
            "formats",
            [
                ("flac", .flac, .init(track: -6, trackPeak: 0.25, album: -9, albumPeak: 0.3), "Formats"),
                ("vorbis", .vorbis, .init(track: -3, trackPeak: 0.25, album: -4.5, albumPeak: 0.3), "Formats"),
                ("opus", .opus, .init(track: -8, trackPeak: 0.25, album: -2, albumPeak: 0.3), "Formats"),
                ("r128-track", .opusR128, .init(track: -4), "Formats"),
                ("r128-album", .opusR128, .init(album: -9.5), "Formats"),
                ("ape", .ape, .init(track: -2, trackPeak: 0.25, album: -6, albumPeak: 0.3), "Formats"),
                ("id3", .id3, .init(track: -7, trackPeak: 0.25, album: -3, albumPeak: 0.3), "Formats"),
                ("mp4", .mp4, .init(track: -5, trackPeak: 0.25, album: -1, albumPeak: 0.3), "Formats"),
                ("untagged", .flac, .init(), "Formats"),
            ])
    }
}

/// ReplayGain on the real binary: tones tagged with known gains in every tag format,
/// rendered into a WAV file, whose level must differ from the tone's by the expected gain
/// within 0.1 dB.
@Suite("loudness levelling")
@MainActor
struct LoudnessTests {
    static let tolerance = 0.1

    /// Renders `files` in order (or as Shuffle leaves them) and returns the output and the log.
    private func render(
        _ files: [URL], _ arguments: [String], in session: Session, shuffle: Bool = false,
        beforePlay: (Session) async throws -> Void = { _ in }
    ) async throws -> WAV {
        let output = session.bus.directory.appendingPathComponent("rendered-\(UUID().uuidString).wav")
        let sink =
            "audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=44100,channels=1 ! wavenc ! filesink location=\(output.path)"
        try await session.launch(
            ["--paused", "--log-level", "debug", "--no-resume"] + arguments + files.map(\.path), sink: sink)
        try await session.waitForStatus("Paused")
        if shuffle {
            try await session.set("Shuffle", .boolean(true))
            _ = try await session.call("Stop")
            try await session.waitForStatus("Stopped")
        }
        // Every track's tags are read before it plays, when that comes within 20 s. A track
        // follows gaplessly only once read, and playbin waits at most a second for a read
        // still under way; on a loaded machine a read can take longer, and the reload that
        // follows would reopen the file sink and lose what was rendered before. The levels,
        // not this wait, are what the tests check.
        let ids = try await session.trackListTracks()
        let read = try await Waiter.poll(timeout: .seconds(20), every: .milliseconds(100)) {
            try await session.tagsRead(ids)
        }
        try await beforePlay(session)
        let mark = session.signals.count
        _ = try await session.call("Play")
        // Rendered faster than real time, a short queue can play to its end between two
        // publications of a machine's busy main queue: clients then see it Stopped without a
        // Playing first. The render is whole either way (its length is checked below).
        let moved = try await session.waitForPlayerChange(after: mark, "Playing or Stopped") {
            $0["PlaybackStatus"] == .string("Playing") || $0["PlaybackStatus"] == .string("Stopped")
        }
        if moved.changed["PlaybackStatus"] == .string("Playing") {
            let started = session.signals.firstIndex { $0.received == moved.received } ?? mark
            try await session.waitForStatus("Stopped", after: started + 1)
        }
        _ = try await session.call("Quit", interface: MPRISNames.root)
        #expect(try await session.waitForExit() == 0)
        let wav = try await Task.detached { try WAV(contentsOf: output) }.value
        // The tracks follow each other gaplessly into one file: a shorter render means the
        // file sink was opened again for a track loaded rather than handed over, and the
        // levels after it belong to other tracks. The daemon's debug log says which.
        let rendered = Double(wav.frames) / Double(max(wav.sampleRate, 1))
        #expect(
            rendered >= Double(files.count) * LoudnessFixtures.seconds - 0.5,
            "\(rendered) s rendered for \(files.count) tracks of \(LoudnessFixtures.seconds) s; every track's tags read before Play: \(read); log:\n\(session.log())"
        )
        return wav
    }

    /// The level of each track's middle (its first and last half second left out: lossy
    /// codecs pad a little), in play order.
    private func levels(_ wav: WAV, count: Int) -> [Double] {
        let seconds = LoudnessFixtures.seconds
        return (0..<count).map {
            Level.rms(of: wav, from: Double($0) * seconds + 0.5, to: Double($0 + 1) * seconds - 0.5)
        }
    }

    private func expectLevels(
        _ measured: [Double], _ expected: [Double], _ names: [String], _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (index, name) in names.enumerated() {
            let error = measured[index] - expected[index]
            print("loudness \(what), \(name): \(measured[index]) dBFS for \(expected[index]); error \(error) dB")
            #expect(
                abs(error) <= Self.tolerance, "\(what), \(name): \(measured[index]) dBFS, expected \(expected[index])",
                sourceLocation: sourceLocation)
        }
    }

    /// Each track's level with loudness off: lossy codecs move a tone's level a little,
    /// and the gain is measured from there. Also checks that
    /// off ignores the tags.
    private func baseline(_ tracks: [LoudnessFixtures.Track]) async throws -> [Double] {
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(tracks.map(\.file), ["--replaygain", "off"], in: session)
        let measured = levels(wav, count: tracks.count)
        for (track, level) in zip(tracks, measured) {
            print("loudness off, \(track.file.lastPathComponent): \(level) dBFS (the tone is \(LoudnessMedia.level))")
            #expect(
                abs(level - LoudnessMedia.level) < 0.5,
                "\(track.file.lastPathComponent) at \(level) dBFS with loudness off")
        }
        return measured
    }

    @Test("track mode applies each format's track gain at the track boundary, and none of it to a track without tags")
    func trackMode() async throws {
        let tracks = try await LoudnessFixtures.formats()
        let base = try await baseline(tracks)
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(tracks.map(\.file), ["--replaygain", "track"], in: session)
        let expected = zip(tracks, base).map { $1 + ($0.gains.track ?? $0.gains.album ?? 0) }
        expectLevels(levels(wav, count: tracks.count), expected, tracks.map(\.file.lastPathComponent), "track mode")
        let log = session.log()
        #expect(log.contains("loudness of \(tracks[0].file.path): track gain from ReplayGain tags -6.00 dB"), "\(log)")
        #expect(log.contains("loudness of \(tracks[3].file.path): track gain from R128 tags"), "\(log)")
    }

    @Test("album mode applies each format's album gain")
    func albumMode() async throws {
        let tracks = try await LoudnessFixtures.formats()
        let base = try await baseline(tracks)
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(tracks.map(\.file), ["--replaygain", "album"], in: session)
        let expected = zip(tracks, base).map { $1 + ($0.gains.album ?? $0.gains.track ?? 0) }
        expectLevels(levels(wav, count: tracks.count), expected, tracks.map(\.file.lastPathComponent), "album mode")
    }

    private static func albums() async throws -> [LoudnessFixtures.Track] {
        try await LoudnessFixtures.tracks(
            "albums",
            [
                ("x1", .flac, .init(track: -6, trackPeak: 0.25, album: -10, albumPeak: 0.3), "X"),
                ("x2", .flac, .init(track: -2, trackPeak: 0.25, album: -10, albumPeak: 0.3), "X"),
                ("y", .flac, .init(track: -4, trackPeak: 0.25, album: -1, albumPeak: 0.3), "Y"),
            ])
    }

    @Test("auto mode: album gain while an album plays in order, track gain for a track between albums")
    func autoModeInOrder() async throws {
        let tracks = try await Self.albums()
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(tracks.map(\.file), [], in: session)
        let expected = [-10.0, -10, -4].map { LoudnessMedia.level + $0 }
        expectLevels(
            levels(wav, count: tracks.count), expected, tracks.map(\.file.lastPathComponent), "auto mode in order")
    }

    @Test("auto mode under Shuffle: every track at its track gain")
    func autoModeShuffled() async throws {
        let tracks = try await Self.albums()
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(tracks.map(\.file), [], in: session, shuffle: true)
        let measured = levels(wav, count: tracks.count)
        // Which track played where: by its tone.
        let seconds = LoudnessFixtures.seconds
        let channel = wav.firstChannel
        var names: [String] = []
        var expected: [Double] = []
        for index in 0..<tracks.count {
            let start = Int((Double(index) * seconds + 0.5) * 44100)
            let end = Int((Double(index + 1) * seconds - 0.5) * 44100)
            let frequency =
                Tone.frequency(of: channel[min(start, channel.count)..<min(end, channel.count)], sampleRate: 44100) ?? 0
            let track = try #require(
                tracks.min { abs(Double($0.frequency) - frequency) < abs(Double($1.frequency) - frequency) })
            names.append(track.file.lastPathComponent)
            expected.append(LoudnessMedia.level + (track.gains.track ?? 0))
        }
        #expect(Set(names).count == tracks.count, "each track once: \(names)")
        expectLevels(measured, expected, names, "auto mode shuffled")
    }

    @Test(
        "at a gapless switch the next track plays at its own gain from its first 10 ms, with no tag of the previous one"
    )
    func gainChangesAtTheBoundary() async throws {
        let tracks = try await LoudnessFixtures.tracks(
            "boundary",
            [
                ("tagged", .flac, .init(track: -1, trackPeak: 0.25), "B"), ("untagged", .flac, .init(), "B"),
            ])
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(
            tracks.map(\.file), ["--replaygain", "track", "--replaygain-fallback=-12"], in: session)
        let channel = wav.firstChannel
        let boundary = Int(LoudnessFixtures.seconds * 44100)
        func peak(_ range: Range<Int>) -> Double { Double(channel[range].map { abs(Int($0)) }.max() ?? 0) / 32768 }
        let before = peak(boundary - 441..<boundary)
        let after = peak(boundary..<boundary + 441)
        let expectedBefore = LoudnessMedia.amplitude * pow(10, -1.0 / 20)
        let expectedAfter = LoudnessMedia.amplitude * pow(10, -12.0 / 20)
        print(
            "loudness at the boundary: peak \(before) in the last 10 ms (expected \(expectedBefore)), \(after) in the first 10 ms (expected \(expectedAfter))"
        )
        #expect(abs(before / expectedBefore - 1) < 0.02, "the last 10 ms of the first track peak at \(before)")
        #expect(
            abs(after / expectedAfter - 1) < 0.02,
            "the first 10 ms of the second track peak at \(after): not at its own gain from its first sample")
    }

    @Test("an Opus header's output gain is applied once, by the decoder, under the R128 gain")
    func opusOutputGainIsNotAppliedTwice() async throws {
        let tracks = try await LoudnessFixtures.tracks("opus-header", [("header", .opusR128, .init(track: -5), "O")])
        try LoudnessMedia.setOpusOutputGain(-6 * 256, in: tracks[0].file)
        var levels: [String: Double] = [:]
        for mode in ["off", "track"] {
            let session = try await Session()
            defer { session.stop() }
            let wav = try await render([tracks[0].file], ["--replaygain", mode], in: session)
            levels[mode] = self.levels(wav, count: 1)[0]
        }
        let off = levels["off"] ?? 0
        let track = levels["track"] ?? 0
        print("loudness opus header -6 dB: \(off) dBFS off, \(track) dBFS with R128 -5 dB; error \(track - off + 5) dB")
        #expect(abs(off - (LoudnessMedia.level - 6)) < 0.2, "off: \(off) dBFS, the header's -6 dB not applied once")
        #expect(abs(track - off + 5) <= Self.tolerance, "track mode: \(track) dBFS against \(off) off")
    }

    @Test("the preamp adds to the tagged gain")
    func preamp() async throws {
        let tracks = try await LoudnessFixtures.formats()
        let session = try await Session()
        defer { session.stop() }
        let wav = try await render(
            [tracks[0].file], ["--replaygain", "track", "--replaygain-preamp", "3.5"], in: session)
        expectLevels(levels(wav, count: 1), [LoudnessMedia.level - 6 + 3.5], ["flac"], "preamp +3.5")
    }

    @Test("clipping prevention holds a +6 dB gain back to the tagged peak of 1.0; without it the gain applies whole")
    func clippingPrevention() async throws {
        let tracks = try await LoudnessFixtures.tracks(
            "loud", [("loud", .flac, .init(track: 6, trackPeak: 1.0), "Loud")])
        for (clipping, gain) in [("peak", 0.0), ("off", 6.0)] {
            let session = try await Session()
            defer { session.stop() }
            let wav = try await render(
                [tracks[0].file], ["--replaygain", "track", "--replaygain-clipping", clipping], in: session)
            expectLevels(levels(wav, count: 1), [LoudnessMedia.level + gain], ["loud"], "clipping \(clipping)")
        }
    }

    @Test("the limiter keeps a +12 dB gain on a quarter-scale tone below full scale, where clipping off reaches it")
    func limiter() async throws {
        let tracks = try await LoudnessFixtures.tracks(
            "hot", [("hot", .flac, .init(track: 12, trackPeak: 0.25), "Hot")])
        var peaks: [String: Double] = [:]
        for clipping in ["limiter", "off"] {
            let session = try await Session()
            defer { session.stop() }
            let wav = try await render(
                [tracks[0].file], ["--replaygain", "track", "--replaygain-clipping", clipping], in: session)
            let middle = wav.firstChannel[Int(0.5 * 44100)..<Int(2.5 * 44100)]
            peaks[clipping] = Double(middle.map { abs(Int($0)) }.max() ?? 0) / 32768
        }
        print("loudness limiter: peak \(peaks["limiter"] ?? 0) with rglimiter, \(peaks["off"] ?? 0) with clipping off")
        #expect((peaks["off"] ?? 0) > 0.99, "clipping off: peak \(peaks["off"] ?? 0)")
        #expect((0.6..<0.97).contains(peaks["limiter"] ?? 0), "limiter: peak \(peaks["limiter"] ?? 0)")
    }

    @Test("a track without tags plays at the fallback gain, then at the gain measured then, also after a restart")
    func measuredGainIsKept() async throws {
        let tracks = try await LoudnessFixtures.tracks("untagged", [("plain", .flac, .init(), "Plain")])
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig("replaygain = track\nreplaygain-fallback = -4 dB\n")
        let first = try await render([tracks[0].file], [], in: session)
        expectLevels(levels(first, count: 1), [LoudnessMedia.level - 4], ["plain"], "first play, fallback -4 dB")

        let folder = session.home.appendingPathComponent(".cache/quaver")
        let cache = folder.appendingPathComponent("loudness")
        let text = try String(contentsOf: cache, encoding: .utf8)
        let line = try #require(
            text.split(separator: "\n").first { $0.hasSuffix("\t" + tracks[0].file.path) }, "\(text)")
        let measured = try #require(Double(line.split(separator: "\t")[0]))
        #expect(try FileManager.default.attributesOfItem(atPath: cache.path)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o700)
        // The tone is louder than ReplayGain's reference: its measured gain is a small cut.
        #expect((-5.0 ... -1.0).contains(measured), "measured \(measured) dB")

        let second = try await render([tracks[0].file], [], in: session)
        expectLevels(
            levels(second, count: 1), [LoudnessMedia.level + measured], ["plain"],
            "second play, measured \(measured) dB")
        #expect(session.log().contains("loudness of \(tracks[0].file.path): measured gain"), "\(session.log())")
    }

    @Test("a 96 kHz 5.1 24-bit track, which rganalysis cannot take as it is, plays whole and is measured")
    func unusualFormatIsMeasured() async throws {
        guard let gstLaunch = Tools.find("gst-launch-1.0") else {
            throw HarnessError("gst-launch-1.0 is not installed")
        }
        let session = try await Session()
        defer { session.stop() }
        let file = session.home.appendingPathComponent("surround.flac")
        let made = try await Tools.run(
            gstLaunch,
            [
                "-q", "audiotestsrc", "wave=sine", "volume=0.25", "freq=441", "samplesperbuffer=960", "num-buffers=300",
                "!", "audio/x-raw,rate=96000,channels=6", "!", "audioconvert", "!", "audio/x-raw,format=S24LE", "!",
                "flacenc",
                "!", "filesink", "location=\(file.path)",
            ], environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 }
        )
        try #require(made.status == 0, "\(made.error)")
        let wav = try await render([file], ["--replaygain", "track"], in: session)
        #expect(
            abs(Double(wav.frames) / Double(wav.sampleRate) - 3) < 0.05,
            "\(wav.frames) frames rendered of a 3 s track\n\(session.log())")
        #expect(Level.rms(of: wav, from: 0.5, to: 2.5) > -40, "\(session.log())")
        let cache = try String(
            contentsOf: session.home.appendingPathComponent(".cache/quaver/loudness"), encoding: .utf8)
        #expect(cache.contains("\t" + file.path + "\n"), "\(cache)\n\(session.log())")
    }

    @Test("a corrupt cache is ignored with a log line, and written anew")
    func corruptCache() async throws {
        let tracks = try await LoudnessFixtures.tracks("untagged", [("plain", .flac, .init(), "Plain")])
        let session = try await Session()
        defer { session.stop() }
        let folder = session.home.appendingPathComponent(".cache/quaver")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("quaver-loudness 1\nnot a line\n".utf8).write(to: folder.appendingPathComponent("loudness"))
        let wav = try await render([tracks[0].file], ["--replaygain-fallback=-2"], in: session)
        expectLevels(levels(wav, count: 1), [LoudnessMedia.level - 2], ["plain"], "with a corrupt cache")
        #expect(session.log().contains("ignoring the loudness cache"), "\(session.log())")
        let text = try String(contentsOf: folder.appendingPathComponent("loudness"), encoding: .utf8)
        #expect(text.hasPrefix("quaver-loudness 1\n") && text.contains(tracks[0].file.path), "\(text)")
    }

    @Test("SIGHUP rereads quaver.conf: the next track plays at the new setting")
    func reloadOnSIGHUP() async throws {
        let tracks = try await LoudnessFixtures.tracks(
            "reload",
            [
                ("long", .flac, .init(track: -6, trackPeak: 0.25), "R"),
                ("short", .flac, .init(track: -6, trackPeak: 0.25), "R"),
            ])
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig("replaygain = off\n")
        let wav = try await render(tracks.map(\.file), [], in: session) { session in
            try session.writeConfig("replaygain = track\n")
            let pid = try #require(session.daemon?.pid)
            kill(pid, SIGHUP)
            let reread = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
                session.log().contains("SIGHUP: quaver.conf read again")
            }
            #expect(reread, "\(session.log())")
        }
        expectLevels(
            levels(wav, count: 2), [LoudnessMedia.level, LoudnessMedia.level - 6], ["long (off)", "short (track)"],
            "reloaded")
    }

    @Test("SIGHUP with an error in quaver.conf changes nothing, says why, and Quaver plays on")
    func reloadWithAnError() async throws {
        let tracks = try await LoudnessFixtures.formats()
        let session = try await Session()
        defer { session.stop() }
        try await session.launch(["--paused", tracks[0].file.path])
        try await session.waitForStatus("Paused")
        try session.writeConfig("replaygain = loud\n")
        kill(try #require(session.daemon?.pid), SIGHUP)
        let said = await session.waiter.wait(timeout: .seconds(10), pollingEvery: .milliseconds(50)) {
            session.log().contains("quaver.conf:1: \"replaygain\": must be")
        }
        #expect(said, "\(session.log())")
        #expect(session.daemonStatus == nil, "quaver exited on SIGHUP: \(session.log())")
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
    }

    @Test(
        "a bad loudness value in quaver.conf is refused, naming the line and the key",
        arguments: [
            ("replaygain", "loud"), ("replaygain-preamp", "20"), ("replaygain-preamp", "nan"),
            ("replaygain-fallback", "-31"),
            ("replaygain-clipping", "soft"), ("replaygain-analysis", "maybe"),
        ])
    func badConfiguration(key: String, value: String) async throws {
        let session = try await Session()
        defer { session.stop() }
        try session.writeConfig("# loudness\n\(key) = \(value)\n")
        let log = session.bus.directory.appendingPathComponent("config.log")
        let process = try session.spawn([], sink: "fakesink", log: log)
        let status = await ChildProcess.onThread { process.wait(timeout: .seconds(10)) }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(status == 2, "\(key) = \(value): exit \(status.map(String.init) ?? "none")\n\(text)")
        #expect(text.contains("\(session.configFile.path):2: \"\(key)\": must be"), "\(key) = \(value):\n\(text)")
    }
}
