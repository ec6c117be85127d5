import ChildProcess
import DBus
import Foundation
import TestKit
import Testing

/// quaver plays through hostile media made by `scripts/make-hostile-media` (truncated, empty,
/// random, misnamed, oversized and malformed files, odd file names, good tracks between
/// them), named as a folder or file by file: what can play plays, in order; what cannot is
/// skipped with one log line naming it; the daemon neither stops early, stalls, crashes, logs
/// criticals nor leaks file descriptors.
@Suite("hostile media")
@MainActor
struct HostileMediaTests {
    static let repository = Tools.repository

    /// One file of the corpus, as the script lists it.
    struct CorpusFile: CustomStringConvertible {
        enum Expect: String { case play, skip, after }
        /// The file name's bytes (not all names are UTF-8).
        var name: [UInt8]
        var expect: Expect
        /// The title its Metadata shows when it plays (tags, or the file name).
        var title: String
        var what: String

        /// The name as printed by the script (bytes that are not UTF-8 as \xHH).
        var shownName: String
        var description: String { "\(shownName) (\(what))" }

        /// What a log line naming the file contains: its path, or for a name that is not
        /// UTF-8 (which a log line cannot hold as it is) the UTF-8 part after its last bad byte.
        func needle(in folder: URL) -> String {
            if let utf8 = String(validating: name, as: UTF8.self) { return folder.appendingPathComponent(utf8).path }
            let tail = name.reversed().prefix { $0 < 0x80 }.reversed()
            return String(decoding: Array(tail), as: UTF8.self)
        }
    }

    /// Runs the script into `folder` and parses its listing; `mode` picks another corpus
    /// than the media files (`--traps`, `--tags`).
    static func makeCorpus(in folder: URL, mode: String? = nil) async throws -> [CorpusFile] {
        guard let bash = Tools.find("bash") else { throw HarnessError("bash is not installed") }
        let script = repository.appendingPathComponent("scripts/make-hostile-media")
        let environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 }
        let result = try await Tools.run(
            bash, [script.path] + (mode.map { [$0] } ?? []) + [folder.path], environment: environment)
        guard result.status == 0 else {
            throw HarnessError("make-hostile-media failed (\(result.status)): \(result.error)")
        }
        return try result.output.split(separator: "\n").map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4, let expect = CorpusFile.Expect(rawValue: fields[1]) else {
                throw HarnessError("unexpected line from make-hostile-media: \(line)")
            }
            return CorpusFile(
                name: unescape(fields[0]), expect: expect, title: fields[2], what: fields[3], shownName: fields[0])
        }
    }

    /// `\xHH` to the byte HH; everything else as its UTF-8.
    static func unescape(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\\"), index + 3 < bytes.count, bytes[index + 1] == UInt8(ascii: "x"),
                let value = UInt8(String(decoding: bytes[index + 2...index + 3], as: UTF8.self), radix: 16)
            {
                result.append(value)
                index += 4
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return result
    }

    /// What the recorded PropertiesChanged signals say happened, from the state read when the
    /// name appeared (`start`, ordered among the signals by its serial): the titles that were
    /// current while playing (in order, each run once), the URLs ever published, and whether
    /// the queue ended (a Stopped after a Playing). The state read matters when the name
    /// appears at the start's deadline, Stopped, with the first track already shown: its
    /// Playing then comes without Metadata.
    struct Playback {
        var playedTitles: [String] = []
        var publishedURLs: Set<String> = []
        var stoppedAfterPlaying = false
        /// Each change, for failure messages: "PlaybackStatus | title | url".
        var trace: [String] = []
        private var status = "Stopped"
        private var title: String?
        private var played = false

        init(_ signals: [Session.RecordedSignal], from start: (serial: UInt32, properties: [String: Value])? = nil) {
            var start = start
            for signal in signals
            where signal.member == "PropertiesChanged" && signal.changedInterface == "org.mpris.MediaPlayer2.Player" {
                if let state = start, signal.serial > state.serial {
                    take(state.properties, read: true)
                    start = nil
                }
                take(signal.changed, read: false)
            }
            if let state = start { take(state.properties, read: true) }
        }

        private mutating func take(_ changed: [String: Value], read: Bool) {
            if let metadata = changed["Metadata"]?.stringVariantDictionary {
                title = metadata["xesam:title"]?.string
                if let url = metadata["xesam:url"]?.string { publishedURLs.insert(url) }
            }
            if let newStatus = changed["PlaybackStatus"]?.string {
                if newStatus == "Playing" { played = true }
                if newStatus == "Stopped" && played { stoppedAfterPlaying = true }
                status = newStatus
            }
            if status == "Playing", let title, playedTitles.last != title { playedTitles.append(title) }
            trace.append(
                "\(read ? "read: " : "")\(status) | \((title ?? "-").prefix(40)) | \(changed["Metadata"]?.stringVariantDictionary?["xesam:url"]?.string ?? "")"
            )
        }
    }

    /// Removes a folder whose names need not be UTF-8 (which Foundation may fail to remove).
    static func removeFolder(_ folder: URL) {
        guard let rm = try? ChildProcess("/bin/rm", ["-rf", "--", folder.path]) else { return }
        rm.wait(timeout: .seconds(60))
    }

    /// How quaver is told about the corpus.
    enum Launch: String, CaseIterable, CustomTestStringConvertible {
        /// The folder, which quaver reads recursively in natural order.
        case folder
        /// The files by name, in the same order, from the first bad one on: the queue starts
        /// with files that fail (skipped while nothing plays yet, and while their tags are
        /// read ahead). A name that is not UTF-8 is given as a file URI (an argument of the
        /// test's Process must be a String).
        case files
        var testDescription: String { rawValue }

        /// The files queued, in order.
        func queued(_ corpus: [CorpusFile]) -> [CorpusFile] {
            switch self {
            case .folder: corpus
            case .files: Array(corpus.drop { $0.expect == .play })
            }
        }

        func arguments(_ corpus: [CorpusFile], in folder: URL) -> [String] {
            switch self {
            case .folder:
                return [folder.path]
            case .files:
                return queued(corpus).map { file in
                    if let name = String(validating: file.name, as: UTF8.self) {
                        return folder.appendingPathComponent(name).path
                    }
                    let escaped = file.name.map { byte -> String in
                        byte < 0x80
                            && (byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte))
                            ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
                    }.joined()
                    return folder.absoluteURL.absoluteString + (folder.absoluteString.hasSuffix("/") ? "" : "/")
                        + escaped
                }
            }
        }
    }

    /// The order the tracker sees when the name appears at the start's deadline: Stopped with
    /// the first track shown (read, serial 5), then Playing with no Metadata (7), then the
    /// next track (9). Read after the Playing instead (serial 8), the state says the same.
    @Test("the playback tracker counts a track shown when the name appeared, then played")
    func trackerTakesTheStateReadAtTheName() {
        func changed(_ serial: UInt32, _ properties: [String: Value]) -> Session.RecordedSignal {
            Session.RecordedSignal(
                interface: MPRISNames.properties, member: "PropertiesChanged",
                arguments: [.string(MPRISNames.player), .stringVariantDictionary(properties), .array(.string, [])],
                serial: serial)
        }
        func metadata(_ title: String) -> Value { .stringVariantDictionary(["xesam:title": .string(title)]) }
        let signals = [
            changed(7, ["PlaybackStatus": .string("Playing")]),
            changed(9, ["Metadata": metadata("Second")]),
            changed(11, ["PlaybackStatus": .string("Stopped")]),
        ]
        #expect(Playback(signals).playedTitles == ["Second"], "without the state read, the first is missed")
        let atTheName = Playback(
            signals, from: (5, ["PlaybackStatus": .string("Stopped"), "Metadata": metadata("First")]))
        #expect(atTheName.playedTitles == ["First", "Second"])
        #expect(atTheName.stoppedAfterPlaying)
        let afterPlaying = Playback(
            signals, from: (8, ["PlaybackStatus": .string("Playing"), "Metadata": metadata("First")]))
        #expect(afterPlaying.playedTitles == ["First", "Second"])
    }

    @Test(
        "hostile media: good files play in order, bad ones are skipped with one log line each; no stall, crash or leak",
        arguments: Launch.allCases)
    func hostileCorpus(launch: Launch) async throws {
        let started = ContinuousClock.now
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-hostile-\(UUID().uuidString)")
        defer { Self.removeFolder(folder) }
        let corpus = try await Self.makeCorpus(in: folder)
        try #require(corpus.count == 25 && corpus.filter { $0.expect == .play }.count == 15, "\(corpus)")
        try #require(corpus.first?.expect == .play && corpus.last?.expect == .play)
        let queued = launch.queued(corpus)
        let good = queued.filter { $0.expect == .play }
        let bad = queued.filter { $0.expect == .skip }
        try #require(bad.count == 10)

        let session = try await Session()
        defer { session.stop() }

        // The baseline: file descriptors once one good file has played to the end.
        let first = folder.appendingPathComponent(String(decoding: corpus[0].name, as: UTF8.self))
        try await session.launch([first.path])
        let baselineDone = await session.waiter.wait(timeout: .seconds(20)) {
            Playback(session.signals).stoppedAfterPlaying || session.daemonStatus != nil
        }
        try #require(
            baselineDone && session.daemonStatus == nil, "one good file did not play to its end:\n\(session.log())")
        _ = try await session.call(
            "GetAll", interface: "org.freedesktop.DBus.Properties", [.string("org.mpris.MediaPlayer2.Player")])
        let baseline = ProcessProbe.openDescriptors(of: session.daemon!.pid)
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        #expect(try await session.waitForExit() == 0)

        // The whole corpus, with LoopStatus None.
        let mark = session.signals.count
        let launched = ContinuousClock.now
        try await session.launch(launch.arguments(corpus, in: folder))
        let pid = session.daemon!.pid
        // A daemon that hangs ignores the SIGTERM of session.stop(), which would wait forever.
        defer { if session.daemonStatus == nil { kill(pid, SIGKILL) } }
        let start = try await session.playerState()
        try await session.set("LoopStatus", .string("None"))  // the default; said for certain
        #expect(try await session.get("LoopStatus") == .string("None"))
        let ended = await session.waiter.wait(timeout: .seconds(60)) {
            Playback(Array(session.signals.dropFirst(mark)), from: start).stoppedAfterPlaying
                || session.daemonStatus != nil
        }
        let runTime = ContinuousClock.now - launched
        let log = session.log()
        let playback = Playback(Array(session.signals.dropFirst(mark)), from: start)

        // No crash, no stall: the queue ends within the deadline; quaver still runs and answers.
        #expect(
            session.daemonStatus == nil && kill(pid, 0) == 0,
            "quaver exited with status \(session.daemonStatus.map(String.init) ?? "?"):\n\(log)")
        #expect(
            ended,
            "the queue did not play to its end within 60 s (stalled, or stopped before playing); played so far: \(playback.playedTitles)\nchanges:\n\(playback.trace.joined(separator: "\n"))\nlog:\n\(log)"
        )
        try #require(session.daemonStatus == nil)
        let player =
            try await session.call(
                "GetAll", interface: "org.freedesktop.DBus.Properties", [.string("org.mpris.MediaPlayer2.Player")]
            )
            .first?.stringVariantDictionary ?? [:]
        #expect(player["PlaybackStatus"] == .string("Stopped"))
        #expect(player["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string(good.last!.title))

        // Every file was queued.
        #expect(log.contains("queue loaded: \(queued.count) tracks"), "\(log)")

        // Each good file played (its title was current while Playing), in order, and nothing
        // else did. The 1 MiB title is shown cut to 1,024 characters.
        let hugeTitle = playback.playedTitles.first { $0.hasPrefix("Huge Title ") }
        #expect(hugeTitle.map { $0.count <= 1024 } ?? true, "a title of \(hugeTitle?.count ?? 0) characters")
        let played = playback.playedTitles.map { $0.hasPrefix("Huge Title ") ? "Huge Title" : $0 }
        #expect(
            played == good.map(\.title),
            "titles played, in order:\n\(played)\nexpected:\n\(good.map(\.title))\nchanges:\n\(playback.trace.joined(separator: "\n"))\nlog:\n\(log)"
        )

        // No bad file was ever published as the current track.
        for file in bad {
            let path = file.needle(in: folder)
            let published = playback.publishedURLs.filter { URL(string: $0)?.path == path }
            #expect(
                published.isEmpty,
                "\(file) was published in Metadata: \(published)\n\(playback.trace.joined(separator: "\n"))")
        }

        // Each bad file is named by exactly one log line, "skipping <path>: <reason>"; no
        // good file is named by a skip line; there are no other skip lines.
        let lines = log.split(separator: "\n").map(String.init)
        let skipLines = lines.filter { $0.hasPrefix("quaver[warning]: skipping ") }
        for file in bad {
            let path = file.needle(in: folder)
            let naming = lines.filter { $0.contains(path) }
            #expect(naming.count == 1, "\(naming.count) log lines name \(file):\n\(naming.joined(separator: "\n"))")
            if let line = naming.first {
                let prefix = "quaver[warning]: skipping \(path): "
                #expect(line.hasPrefix(prefix) && line.count > prefix.count, "not a skip line with a reason: \(line)")
                if file.what.contains("no audio stream") {
                    #expect(
                        line.dropFirst(prefix.count).contains("no audio stream"),
                        "the reason does not say there is no audio: \(line)")
                }
            }
        }
        for file in good {
            let needle = file.needle(in: folder)
            let naming = skipLines.filter { $0.contains(needle) }
            #expect(naming.isEmpty, "\(file) plays, yet: \(naming)")
        }
        #expect(
            skipLines.count == bad.count,
            "\(skipLines.count) skip lines for \(bad.count) bad files:\n\(skipLines.joined(separator: "\n"))")
        // Each file was tried once: played, or skipped.
        #expect(
            played.count + skipLines.count == queued.count,
            "\(played.count) played + \(skipLines.count) skipped of \(queued.count) files")

        // Nothing worse than a warning (GLib's and GStreamer's criticals included).
        let severe = lines.filter { $0.lowercased().contains("critical") || $0.hasPrefix("quaver[error]") }
        #expect(severe.isEmpty, "\(severe)")

        // No file descriptor leaked: as many as after one good file, give or take a few.
        _ = try await session.metadata()
        let after = ProcessProbe.openDescriptors(of: pid)
        #expect(
            after.count <= baseline.count + 3,
            "\(after.count) descriptors after the corpus, \(baseline.count) after one file\nafter:\n\(after.joined(separator: "\n"))\nbaseline:\n\(baseline.joined(separator: "\n"))"
        )

        #expect(runTime < .seconds(30), "the corpus took \(runTime) to play")
        print(
            "hostile media (\(launch)): \(queued.count) files in \(runTime), the whole test \(ContinuousClock.now - started); descriptors \(baseline.count) after one file, \(after.count) after all"
        )
    }
}
