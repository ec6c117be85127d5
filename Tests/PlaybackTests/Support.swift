import ChildProcess
import Dispatch
import Foundation
import Logging
import TestKit
import Testing
import ToneGenerator

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// Bytes no GStreamer plugin can make sense of, under an audio file name.
let garbageBytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })

// MARK: - Generated media

enum Media {
    /// `count` numbered tracks ("Track N" by "Artist N") of `seconds` each, written into `folder`.
    /// Rendered on a thread of its own: suites that play in real time share the main actor.
    static func tracks(_ count: Int, seconds: Double, in folder: TemporaryFolder) async throws -> [URL] {
        try await render(TrackGenerator.numbered(count: count, seconds: seconds), into: folder)
    }

    /// Numbered tracks with the given durations (track N lasts `durations[N - 1]` seconds).
    static func tracks(durations: [Double], in folder: TemporaryFolder) async throws -> [URL] {
        var tracks = TrackGenerator.numbered(count: durations.count, seconds: 1)
        for index in tracks.indices { tracks[index].seconds = durations[index] }
        return try await render(tracks, into: folder)
    }

    private static func render(_ tracks: [TrackGenerator.Track], into folder: TemporaryFolder) async throws -> [URL] {
        let url = folder.url
        let result = await ChildProcess.onThread { Result { try TrackGenerator.generate(tracks, into: url) } }
        return try result.get()
    }

    static var hasGstLaunch: Bool { FileManager.default.isExecutableFile(atPath: gstLaunch) }
    static let gstLaunch = "/usr/bin/gst-launch-1.0"

    /// Runs a `gst-launch-1.0` pipeline (used to make media that `TrackGenerator` cannot:
    /// files with a video stream).
    static func launch(_ description: String) async throws {
        try await launch(arguments: ["-q"] + description.split(separator: " ").map(String.init))
    }

    /// Runs gst-launch-1.0 to its end without blocking the main actor (other tests time
    /// playback on it meanwhile).
    static func launch(arguments: [String]) async throws {
        let result = try await ChildProcess.run(gstLaunch, arguments)
        guard result.status == 0 else {
            throw MediaError(
                "gst-launch-1.0 failed (\(result.status)): \(arguments.joined(separator: " ")): \(result.error)")
        }
    }

    /// An Ogg file with a Theora video stream and a Vorbis audio stream, `seconds` long.
    static func videoWithAudio(_ file: URL, seconds: Int = 1) async throws {
        try await launch(
            "videotestsrc num-buffers=\(seconds * 10) ! video/x-raw,width=64,height=48,framerate=10/1 ! theoraenc ! oggmux name=mux "
                + "! filesink location=\(file.path) "
                + "audiotestsrc num-buffers=\(seconds * 10) samplesperbuffer=4410 ! audio/x-raw,rate=44100,channels=1 "
                + "! audioconvert ! vorbisenc ! mux.")
    }

    /// An Ogg file with only a Theora video stream.
    static func videoOnly(_ file: URL) async throws {
        try await launch(
            "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48,framerate=10/1 ! theoraenc ! oggmux "
                + "! filesink location=\(file.path)")
    }
}

// MARK: - Waiting

/// Waits for conditions on the main actor (TestKit's `Waiter`), in the words the playback
/// tests use: `recheck()` from an observer callback, `poll` for values no callback announces.
@MainActor
class MainActorWaiter: Waiter {
    /// Checks every pending condition again.
    func recheck() { poke() }

    /// True once `condition` holds; false if the deadline passes first.
    func wait(
        upTo timeout: Duration = .seconds(15), poll: Duration? = nil,
        until condition: @escaping @MainActor () -> Bool
    ) async -> Bool {
        await wait(timeout: timeout, pollingEvery: poll, until: condition)
    }
}

/// Watches a `Player` through `onChange`.
@MainActor
final class PlayerProbe: MainActorWaiter {
    let player: Player
    let log: LogCapture
    private(set) var changes: [Player.Change] = []
    /// Each settled status, in order, starting with the one at creation (repeats collapsed).
    private(set) var statuses: [Player.Status]
    /// The entry ids the player reported as playing, in order (repeats collapsed).
    private(set) var playedIDs: [UInt64] = []
    /// For each entry reported playing: `statuses` as they were when it first played. What
    /// came before a track is checked there, whatever happened after it (on a loaded machine
    /// a short track can end before the test resumes).
    private(set) var statusesUntilPlaying: [UInt64: [Player.Status]] = [:]

    init(player: Player, log: LogCapture) {
        self.player = player
        self.log = log
        statuses = [player.status]
        super.init()
        player.onChange = { [weak self] change in self?.observe(change) }
    }

    /// A player on a real pipeline whose output is a fake sink keeping real time.
    static func make(
        supportedRates: ClosedRange<Double> = 0.5...2.0, audioSink: String = "fakesink sync=true",
        stuckLimit: Duration = .seconds(3)
    ) throws -> PlayerProbe {
        let log = LogCapture()
        let player = try Player(
            audioSink: audioSink, supportedRates: supportedRates, stuckLimit: stuckLimit, logger: log.logger)
        return PlayerProbe(player: player, log: log)
    }

    /// A player with `files` queued, prerolled paused at the first of them.
    static func prerolled(_ files: [URL]) async throws -> PlayerProbe {
        let probe = try make()
        probe.player.enqueue(files.map(\.absoluteString))
        probe.player.preroll()
        try #require(await probe.waitFor(.paused, entry: 0), "the first file did not preroll")
        return probe
    }

    private func observe(_ change: Player.Change) {
        changes.append(change)
        if statuses.last != player.status { statuses.append(player.status) }
        if player.status == .playing, let id = player.current?.id, playedIDs.last != id {
            playedIDs.append(id)
            if statusesUntilPlaying[id] == nil { statusesUntilPlaying[id] = statuses }
        }
        recheck()
    }

    func count(_ change: Player.Change) -> Int { changes.filter { $0 == change }.count }

    /// Waits until the player settles in `status` (with `entry` current, if given).
    func waitFor(_ status: Player.Status, entry: Int? = nil, upTo timeout: Duration = .seconds(15)) async -> Bool {
        await wait(upTo: timeout) { [player] in
            player.status == status && (entry.map { player.current?.id == player.entries[$0].id } ?? true)
        }
    }

    /// Waits until the live position satisfies `condition` (polled: no callback announces it).
    func waitForPosition(upTo timeout: Duration = .seconds(15), _ condition: @escaping (Double) -> Bool) async -> Bool {
        await wait(upTo: timeout, poll: .milliseconds(20)) { [player] in
            player.position.map { condition($0.inSeconds) } ?? false
        }
    }
}

/// Watches a `Pipeline`'s events.
@MainActor
final class PipelineProbe: MainActorWaiter {
    private(set) var pipeline: Pipeline!
    private(set) var events: [Pipeline.Event] = []
    /// The load number each event came with.
    private(set) var loads: [Int] = []
    private(set) var lastFacts: Pipeline.Facts?
    private(set) var lastPosition: Duration?
    private(set) var elements: [String] = []

    init(audioSink: String? = "fakesink sync=true", stuckLimit: Duration = .seconds(3)) {
        super.init()
        pipeline = Pipeline(audioSink: audioSink, volume: 1, stuckLimit: stuckLimit) { [weak self] delivery in
            guard let self else { return }
            events.append(delivery.event)
            loads.append(delivery.load)
            switch delivery.event {
            case .asyncDone(let facts): lastFacts = facts
            case .position(let position, _): lastPosition = position
            case .elements(let names): elements = names
            default: break
            }
            recheck()
        }
    }

    func waitForEvent(upTo timeout: Duration = .seconds(15), _ match: @escaping (Pipeline.Event) -> Bool) async -> Bool
    {
        await wait(upTo: timeout) { [unowned self] in events.contains(where: match) }
    }

    func isAsyncDone(_ event: Pipeline.Event) -> Bool {
        if case .asyncDone = event { true } else { false }
    }

    var reachedPlaying: Bool {
        events.contains { if case .stateChanged(_, .playing, .voidPending, _, _) = $0 { true } else { false } }
    }

    var endedStream: Bool {
        events.contains { if case .endOfStream = $0 { true } else { false } }
    }

    var errorMessage: String? {
        for event in events { if case .error(let error) = event { return error.reason } }
        return nil
    }

    var errorURI: String? {
        for event in events { if case .error(let error) = event { return error.uri } }
        return nil
    }
}

/// The invariant checks of a random walk: a failed one is recorded as an issue, and the walk
/// stops after the step that broke it (each later step would only repeat the failure).
final class InvariantChecks {
    /// Whether a check failed.
    private(set) var failed = false

    /// Records `message` as an issue unless `condition` holds.
    func callAsFunction(_ condition: Bool, _ message: @autoclosure () -> String) {
        guard !condition else { return }
        failed = true
        Issue.record(Comment(rawValue: message()))
    }
}
