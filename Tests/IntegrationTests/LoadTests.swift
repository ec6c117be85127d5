import DBus
import Foundation
import SeededRandom
import TestKit
import Testing

/// Load against the real binary: 32 clients, each on a D-Bus connection of its own to the
/// private bus, send a mix of transport commands, writable-property Sets, TrackList edits and
/// property reads as fast as they get answers, for 10 s (60 s with `QUAVER_LONG_TESTS=1`).
///
/// Every call must get a reply or an error it may get (no NoReply, no timeout: each call
/// waits 10 s at most); afterwards the daemon must answer a Get within 1 s, still run, have
/// logged nothing critical, be in a consistent state (PlaybackStatus settled and the same
/// as `playerctl status`, the current track in `Tracks`, CanGoNext and CanGoPrevious as
/// LoopStatus and the current track's place in the queue make them) and have grown its
/// resident memory by less than 8 MiB after a 2 s warm-up (2 MiB in the long run).
@Suite("load: 32 concurrent clients", .serialized)
@MainActor
struct LoadTests {
    static let longRun = ProcessInfo.processInfo.environment["QUAVER_LONG_TESTS"] == "1"
    static let clientCount = 32
    static let duration: Duration = longRun ? .seconds(60) : .seconds(10)
    static let callTimeout: Duration = .seconds(10)
    static let warmUp: Duration = .seconds(2)
    /// Resident memory the daemon may gain between the end of the warm-up and the end.
    static let rssGrowthLimit = longRun ? 2 << 20 : 8 << 20
    static let seed: UInt64 = 0x4C4F_4144_5445_5354
    static let originalCount = 6
    /// Entries the clients may have added and not removed yet, all clients together: with
    /// the 6 queued at start-up the queue stays within one `Tracks` window (20 entries), so
    /// that every client sees every entry (its own included) and `Tracks` is the queue.
    static let addedLimit = 14

    @Test("32 clients, each on its own connection, mixing commands and reads as fast as they can")
    func concurrentClients() async throws {
        let started = ContinuousClock.now
        let tracks = try await TestMedia.tracks(count: Self.originalCount, seconds: 10)
        let session = try await Session()
        var clients: [LoadClient] = []
        defer {
            for client in clients { client.connection.close() }
            if let status = session.daemonStatus, status != 0 {
                print("load: quaver exited with status \(status); its log ends:\n\(String(session.log().suffix(3000)))")
            }
            session.stop()
        }
        try await session.launch(["--paused"] + tracks.map(\.path))
        try await session.waitForStatus("Paused")
        let originals = try await Self.waitForQueue(of: Self.originalCount, session)
        let pid = try #require(session.daemon?.pid)

        // Each client adds a file of its own (a hard link to a test track), so it can tell
        // the entries it added by their xesam:url and remove only those.
        let folder = session.bus.directory.appendingPathComponent("load", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let board = LoadBoard(originals: originals, deadline: ContinuousClock.now + Self.duration + .milliseconds(200))
        for index in 0..<Self.clientCount {
            let file = folder.appendingPathComponent(String(format: "load-client-%02d.flac", index))
            do {
                try FileManager.default.linkItem(at: tracks[index % tracks.count], to: file)
            } catch {
                try FileManager.default.copyItem(at: tracks[index % tracks.count], to: file)
            }
            let connection = try Connection(address: session.bus.address)
            clients.append(
                LoadClient(
                    index: index, connection: connection, destination: session.busName, file: file,
                    random: SplitMix(seed: Self.seed &+ UInt64(index) &* 0x9E37_79B9), board: board))
        }
        #expect(
            Set(clients.map(\.connection.uniqueName)).count == Self.clientCount,
            "the clients do not have a connection each")
        print(
            "load: \(Self.clientCount) clients (\(Self.longRun ? "long" : "bounded") run of \(Self.duration)), seed 0x\(String(Self.seed, radix: 16)); set-up took \(ContinuousClock.now - started)"
        )

        // The load, with a resident-memory sample once the warm-up is over.
        let loadStarted = ContinuousClock.now
        board.deadline = loadStarted + Self.duration
        let warmUpSample = Task { @MainActor () -> Int? in
            try? await Task.sleep(for: Self.warmUp)  // when the sample is taken is what is measured
            return ProcessProbe.anonymousResidentBytes(of: pid)
        }
        // RssAnon and the call rate every few seconds, to tell steady growth from a plateau
        // and see whether the daemon slows down as the load goes on.
        let interval = Self.longRun ? 5 : 1
        let series = Task { @MainActor () -> [String] in
            var samples: [String] = []
            var calls = board.calls
            while ContinuousClock.now < board.deadline {
                try? await Task.sleep(for: .seconds(interval))  // the sampling interval is what is measured
                samples.append(
                    "\((ProcessProbe.anonymousResidentBytes(of: pid) ?? 0) >> 10) KiB \((board.calls - calls) / interval)/s"
                )
                calls = board.calls
            }
            return samples
        }
        let cpuBefore = ProcessProbe.cpuSeconds(of: pid)
        let workers = clients.map { client in Task { @MainActor in await client.run() } }
        for worker in workers { await worker.value }
        let loadTook = ContinuousClock.now - loadStarted
        let cpuDuring = ProcessProbe.cpuSeconds(of: pid).flatMap { after in cpuBefore.map { after - $0 } }
        let rssWarm = await warmUpSample.value

        // No deadlock: a Get from another connection is answered within 1 s.
        let getStarted = ContinuousClock.now
        var answeredGet = false
        do {
            let reply = try await session.client.call(
                destination: session.busName, path: ObjectPath("/org/mpris/MediaPlayer2")!,
                interface: "org.freedesktop.DBus.Properties",
                member: "Get", arguments: [.string(MPRISNames.player), .string("PlaybackStatus")], timeout: .seconds(1))
            answeredGet = reply.first?.unwrapped.string != nil
        } catch {
            Issue.record("after the load, Get(PlaybackStatus) answered \(error) (\(ContinuousClock.now - getStarted))")
        }
        let getTook = ContinuousClock.now - getStarted
        #expect(answeredGet && getTook < .seconds(1), "after the load, Get(PlaybackStatus) took \(getTook)")
        let rssEnd = ProcessProbe.anonymousResidentBytes(of: pid)
        print("load: RssAnon and calls/s every \(interval) s: \(await series.value.joined(separator: ", "))")

        // The totals.
        let seconds = Double(loadTook.components.seconds) + Double(loadTook.components.attoseconds) / 1e18
        let rate = Double(board.calls) / max(seconds, 0.001)
        print(
            "load: \(board.calls) calls in \(loadTook) (\(Int(rate.rounded())) calls/s), \(board.inFlightPeak) in flight at most; slowest \(board.slowest) (\(board.slowerThanOneSecond) over 1 s); quaver used \(cpuDuring.map { String(format: "%.1f", $0) } ?? "?") s of CPU"
        )
        print(
            "load: answers: \(board.answers.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
        )
        print(
            "load: per call: \(board.perOperation.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))"
        )
        print(
            "load: entries added \(board.addsAnswered), removed \(board.removesAnswered), still queued by the clients \(board.added)"
        )

        // Every call answered, with a reply or an error it may get.
        for failure in board.failures.prefix(20) { Issue.record("load: \(failure)") }
        if board.failureCount > 20 { Issue.record("load: … and \(board.failureCount - 20) more unexpected answers") }
        #expect(
            board.timeouts == 0, "\(board.timeouts) calls got no reply within \(Self.callTimeout) (NoReply/Timeout)")
        #expect(board.failureCount == 0, "\(board.failureCount) calls got an answer they may not get")
        #expect(board.calls >= Self.clientCount * 10, "only \(board.calls) calls were made")

        // Alive, and nothing critical in its log.
        #expect(
            session.daemonStatus == nil,
            "quaver exited during the load (status \(session.daemonStatus ?? 0)); log tail:\n\(String(session.log().suffix(3000)))"
        )
        try #require(session.daemonStatus == nil)

        // A consistent, settled state.
        let state = try await Self.settledState(session)
        print("load: settled state: \(state)")
        #expect(["Playing", "Paused", "Stopped"].contains(state.status), "PlaybackStatus \(state.status)")
        #expect(Set(state.tracks).count == state.tracks.count, "Tracks has an id twice: \(state.tracks)")
        #expect(
            state.tracks.count == Self.originalCount + board.added,
            "Tracks has \(state.tracks.count) entries; \(Self.originalCount) queued at start-up and \(board.added) added and not removed make \(Self.originalCount + board.added): \(state.tracks)"
        )
        #expect(
            Set(originals).isSubset(of: state.tracks),
            "an entry queued at start-up (no client removes those) is gone: \(originals) vs \(state.tracks)")
        if state.tracks.isEmpty {
            #expect(
                state.status == "Stopped" && (state.trackID == nil || state.trackID == MPRISNames.noTrack),
                "an empty queue with \(state)")
        } else {
            #expect(
                state.trackID.map(state.tracks.contains) ?? false,
                "Metadata's mpris:trackid \(state.trackID?.rawValue ?? "(none)") is not in Tracks \(state.tracks)")
        }
        if state.status == "Playing", let trackID = state.trackID {
            // Playing means the pipeline plays: the position moves (unless the track
            // changed or, with LoopStatus Track, started again meanwhile).
            let mark = session.signals.count
            let before = try await session.position()
            var after = before
            let moved = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(50)) {
                after = try await session.position()
                return after > before
            }
            let jumped = session.signals.dropFirst(mark).contains { $0.member == "Seeked" }
            if try await session.currentTrackID() == trackID, !jumped {
                #expect(moved, "Playing, but the position stays at \(before) µs (then \(after) µs)")
            }
        }

        // CanGoNext and CanGoPrevious with Shuffle off: from LoopStatus and where the
        // current track is in the queue (Tracks is the whole queue, 20 entries at most).
        var plain = state
        if state.shuffle {
            try await session.set("Shuffle", .boolean(false))
            plain = try await Self.settledState(session)
            print("load: with Shuffle off: \(plain)")
        }
        #expect(!plain.shuffle)
        if let trackID = plain.trackID, let index = plain.tracks.firstIndex(of: trackID) {
            let last = plain.tracks.count - 1
            let (next, previous) = plain.loopStatus == "Playlist" ? (true, true) : (index < last, index > 0)
            #expect(
                plain.canGoNext == next,
                "CanGoNext \(plain.canGoNext) with LoopStatus \(plain.loopStatus) at entry \(index) of \(plain.tracks.count): \(plain)"
            )
            #expect(
                plain.canGoPrevious == previous,
                "CanGoPrevious \(plain.canGoPrevious) with LoopStatus \(plain.loopStatus) at entry \(index) of \(plain.tracks.count): \(plain)"
            )
        } else {
            #expect(plain.tracks.isEmpty, "no current track in a queue of \(plain.tracks.count): \(plain)")
            #expect(
                !plain.canGoNext && !plain.canGoPrevious,
                "no current track, yet CanGoNext \(plain.canGoNext), CanGoPrevious \(plain.canGoPrevious)")
        }

        #expect(session.daemonStatus == nil, "quaver exited after the load (status \(session.daemonStatus ?? 0))")
        let lines = session.log().split(whereSeparator: { $0 == "\n" || $0 == "\r" })
        let critical = lines.filter { line in
            let lower = line.lowercased()
            return lower.contains("critical") || lower.contains("fatal error") || lower.contains("segmentation fault")
        }
        #expect(
            critical.isEmpty,
            "the log has \(critical.count) critical lines: \(critical.prefix(5).map { String($0.prefix(300)) })")
        let warnings = lines.filter { $0.lowercased().contains("warning") || $0.lowercased().contains("error") }
        print(
            "load: the log has \(lines.count) lines, \(warnings.count) of them warnings or errors\(warnings.first.map { ", e.g. \(String($0.prefix(200)))" } ?? "")"
        )
        for warning in warnings.prefix(10) { print("load: log: \(warning.prefix(300))") }

        // Memory: resident size after the warm-up and at the end of the load.
        let warm = try #require(rssWarm, "no RssAnon after the warm-up")
        let end = try #require(rssEnd, "no RssAnon at the end")
        let settledRSS = ProcessProbe.anonymousResidentBytes(of: pid) ?? 0
        print(
            "load: RssAnon after the \(Self.warmUp) warm-up \(warm >> 10) KiB, at the end \(end >> 10) KiB (\(end - warm >= 0 ? "+" : "")\((end - warm) >> 10) KiB; limit +\(Self.rssGrowthLimit >> 10) KiB), after the checks \(settledRSS >> 10) KiB"
        )
        if ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil {
            // AddressSanitizer keeps freed memory in a quarantine of 256 MiB, so resident
            // size says nothing of leaks there (scripts/sanitize sets ASAN_OPTIONS).
            print("load: RssAnon growth not checked under AddressSanitizer (its quarantine keeps freed memory)")
        } else {
            #expect(
                end - warm < Self.rssGrowthLimit,
                "RssAnon grew by \((end - warm) >> 10) KiB during the load (\(warm >> 10) → \(end >> 10) KiB)")
        }

        // And it still quits cleanly.
        _ = try await session.call("Quit", interface: MPRISNames.root)
        let status = try await session.waitForExit(timeout: .seconds(15))
        #expect(
            status == 0,
            "quaver exited with status \(status) after the load; log tail:\n\(String(session.log().suffix(3000)))")
        print(
            "load: summary: \(board.calls) calls, \(Int(rate.rounded()))/s, \(board.timeouts) timeouts, \(board.failureCount) unexpected answers, RssAnon \(warm >> 10) → \(end >> 10) KiB, final \(state.status); the test took \(ContinuousClock.now - started)"
        )
    }

    // MARK: - Helpers

    /// Waits until the queue given at start-up is in (it is loaded in the background).
    static func waitForQueue(of count: Int, _ session: Session) async throws -> [ObjectPath] {
        var ids: [ObjectPath] = []
        let complete = try await Waiter.poll(timeout: .seconds(30), every: .milliseconds(100)) {
            ids = try await session.trackListTracks()
            return ids.count == count
        }
        guard complete else {
            throw HarnessError("the queue of \(count) tracks did not come in; log:\n\(session.log())")
        }
        return ids
    }

    /// What the checks compare: one GetAll of the Player interface and the Tracks property.
    struct State: Equatable, CustomStringConvertible {
        var status: String
        var trackID: ObjectPath?
        var tracks: [ObjectPath]
        var loopStatus: String
        var shuffle: Bool
        var canGoNext: Bool
        var canGoPrevious: Bool

        var description: String {
            "\(status), current \(trackID?.rawValue ?? "none") at \(trackID.flatMap { tracks.firstIndex(of: $0) }.map(String.init) ?? "-") of \(tracks.count), LoopStatus \(loopStatus), Shuffle \(shuffle), CanGoNext \(canGoNext), CanGoPrevious \(canGoPrevious)"
        }
    }

    static func state(_ session: Session) async throws -> State {
        let reply = try await session.call(
            "GetAll", interface: "org.freedesktop.DBus.Properties", [.string(MPRISNames.player)])
        let all = reply.first?.stringVariantDictionary ?? [:]
        let tracks = try await session.trackListTracks()
        return State(
            status: all["PlaybackStatus"]?.string ?? "?",
            trackID: all["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath,
            tracks: tracks,
            loopStatus: all["LoopStatus"]?.string ?? "?",
            shuffle: all["Shuffle"]?.boolean ?? false,
            canGoNext: all["CanGoNext"]?.boolean ?? false,
            canGoPrevious: all["CanGoPrevious"]?.boolean ?? false)
    }

    /// The state once it reads the same twice in a row, with `playerctl status` between
    /// the two reads saying the same PlaybackStatus (a track may end while it plays).
    static func settledState(_ session: Session) async throws -> State {
        var seen: [String] = []
        var settled: State?
        _ = try await Waiter.poll(timeout: .seconds(30), every: .milliseconds(200)) {
            let first = try await state(session)
            // `playerctl status` where it is installed; otherwise a Get, as it would make.
            let playerctl =
                Tools.find("playerctl") != nil
                ? try await session.playerctl("status") : (try await session.get("PlaybackStatus").string ?? "?")
            let second = try await state(session)
            if first == second && playerctl == first.status { settled = first }
            seen.append("\(first) / playerctl \(playerctl) / \(second)")
            return settled != nil
        }
        guard let settled else { throw HarnessError("the state did not settle: \(seen.suffix(3))") }
        return settled
    }
}

// MARK: - The clients

/// The calls a client makes, with how often each is picked.
enum LoadOperation: String, CaseIterable, Sendable {
    case play, pause, playPause, next, previous, seek, setPosition
    case setVolume, setRate, setLoopStatus, setShuffle
    case goTo, addTrack, removeTrack
    case get, getAll, getTracks, getTracksMetadata

    var weight: Int {
        switch self {
        case .play, .pause, .playPause: 3
        case .next, .previous, .seek: 4
        case .setPosition, .goTo, .addTrack, .removeTrack: 3
        case .setVolume, .setRate, .setLoopStatus, .setShuffle: 2
        case .get: 8
        case .getAll: 6
        case .getTracks, .getTracksMetadata: 5
        }
    }

    static let table: [LoadOperation] = allCases.flatMap { Array(repeating: $0, count: $0.weight) }

    /// Errors a call may be answered with under load (anything else is a failure).
    func allows(_ name: String) -> Bool {
        switch self {
        case .seek, .setPosition:
            // "the track cannot seek now": the daemon answers this while Stopped (CanSeek
            // stays true) or while a track is being loaded, which the load makes common.
            name == "org.mpris.MediaPlayer2.quaver.Error.CommandFailed"
        default:
            false
        }
    }
}

/// What all clients share: the deadline, the tallies, and how many entries they have added.
@MainActor
final class LoadBoard {
    let originals: [ObjectPath]
    var deadline: ContinuousClock.Instant
    private(set) var calls = 0
    private(set) var answers: [String: Int] = [:]
    private(set) var perOperation: [LoadOperation: Int] = [:]
    private(set) var timeouts = 0
    private(set) var failures: [String] = []
    private(set) var failureCount = 0
    private(set) var slowest: Duration = .zero
    private(set) var slowerThanOneSecond = 0
    private(set) var inFlight = 0
    private(set) var inFlightPeak = 0
    /// Entries added (or being added) by the clients and not removed.
    var added = 0
    var addsAnswered = 0
    var removesAnswered = 0

    init(originals: [ObjectPath], deadline: ContinuousClock.Instant) {
        self.originals = originals
        self.deadline = deadline
    }

    func begin() {
        inFlight += 1
        inFlightPeak = max(inFlightPeak, inFlight)
    }

    func record(_ operation: LoadOperation, client: Int, error: BusError?, took: Duration) {
        inFlight -= 1
        calls += 1
        perOperation[operation, default: 0] += 1
        slowest = max(slowest, took)
        if took > .seconds(1) { slowerThanOneSecond += 1 }
        guard let error else {
            answers["success", default: 0] += 1
            return
        }
        let name = error.name.rawValue
        answers[name.replacingOccurrences(of: "org.freedesktop.DBus.Error.", with: ""), default: 0] += 1
        if error.name == .noReply || error.name == .timeout {
            timeouts += 1
        }
        if !operation.allows(name) {
            failureCount += 1
            if failures.count < 20 {
                failures.append(
                    "client \(client) \(operation.rawValue): \(name): \(error.message.prefix(200)) after \(took)")
            }
        }
    }
}

/// One client: its own connection, its own file to add, what it last read.
@MainActor
final class LoadClient {
    let index: Int
    let connection: Connection
    let destination: String
    let uri: String
    let fileName: String
    var random: SplitMix
    let board: LoadBoard
    /// Ids of the entries this client added and found again in the track list.
    private var mine: [ObjectPath] = []
    private var lastTracks: [ObjectPath] = []
    private var lastTrackID: ObjectPath?

    static let path = ObjectPath("/org/mpris/MediaPlayer2")!
    static let properties = "org.freedesktop.DBus.Properties"
    static let readable = [
        "PlaybackStatus", "Metadata", "Position", "Volume", "Rate", "LoopStatus", "Shuffle",
        "CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek", "MinimumRate", "MaximumRate",
    ]

    init(index: Int, connection: Connection, destination: String, file: URL, random: SplitMix, board: LoadBoard) {
        self.index = index
        self.connection = connection
        self.destination = destination
        uri = URL(fileURLWithPath: file.path).absoluteString
        fileName = file.lastPathComponent
        self.random = random
        self.board = board
        lastTracks = board.originals
    }

    func run() async {
        while ContinuousClock.now < board.deadline {
            await perform(random.pick(LoadOperation.table))
        }
    }

    /// A call; its reply, or nil when it was answered with an error.
    private func call(_ operation: LoadOperation, _ interface: String, _ member: String, _ arguments: [Value] = [])
        async -> [Value]?
    {
        let started = ContinuousClock.now
        board.begin()
        do {
            let reply = try await connection.call(
                destination: destination, path: Self.path, interface: interface, member: member,
                arguments: arguments, timeout: LoadTests.callTimeout)
            board.record(operation, client: index, error: nil, took: ContinuousClock.now - started)
            return reply
        } catch {
            board.record(operation, client: index, error: error, took: ContinuousClock.now - started)
            return nil
        }
    }

    private func set(_ operation: LoadOperation, _ property: String, _ value: Value) async {
        _ = await call(
            operation, Self.properties, "Set", [.string(MPRISNames.player), .string(property), .variant(value)])
    }

    private func someTrack() -> ObjectPath {
        random.pick(lastTracks.isEmpty ? board.originals : lastTracks)
    }

    private func perform(_ operation: LoadOperation) async {
        let player = MPRISNames.player
        let trackList = MPRISNames.trackList
        switch operation {
        case .play: _ = await call(operation, player, "Play")
        case .pause: _ = await call(operation, player, "Pause")
        case .playPause: _ = await call(operation, player, "PlayPause")
        case .next: _ = await call(operation, player, "Next")
        case .previous: _ = await call(operation, player, "Previous")
        case .seek:
            // Mostly within the track; now and then past its end (which acts as Next).
            let offset: Int64 = random.chance(0.05) ? 20_000_000 : Int64(random.int(-6_000..<6_001)) * 1_000
            _ = await call(operation, player, "Seek", [.int64(offset)])
        case .setPosition:
            let id = random.chance(0.8) ? (lastTrackID ?? someTrack()) : someTrack()
            _ = await call(
                operation, player, "SetPosition", [.objectPath(id), .int64(Int64(random.int(0..<11_000)) * 1_000)])
        case .setVolume:
            await set(operation, "Volume", .double(Double(random.int(0..<101)) / 100))
        case .setRate:
            await set(operation, "Rate", .double(random.pick([0.5, 0.75, 1, 1, 1, 1.25, 1.5, 2])))
        case .setLoopStatus:
            await set(operation, "LoopStatus", .string(random.pick(["None", "Track", "Playlist"])))
        case .setShuffle:
            await set(operation, "Shuffle", .boolean(random.chance(0.5)))
        case .goTo:
            _ = await call(operation, trackList, "GoTo", [.objectPath(someTrack())])
        case .addTrack:
            guard board.added < LoadTests.addedLimit else {
                // The queue is full (for this test): remove one instead, or look for ours.
                return await perform(mine.isEmpty ? .getTracksMetadata : .removeTrack)
            }
            // After an entry that cannot be gone: none, one queued at start-up, or our own.
            let after: ObjectPath
            switch random.int(0..<10) {
            case 0..<2: after = MPRISNames.noTrack
            case 2..<7: after = random.pick(board.originals)
            default: after = mine.isEmpty ? random.pick(board.originals) : random.pick(mine)
            }
            board.added += 1
            let reply = await call(
                operation, trackList, "AddTrack", [.string(uri), .objectPath(after), .boolean(random.chance(0.25))])
            if reply == nil { board.added -= 1 } else { board.addsAnswered += 1 }
        case .removeTrack:
            guard let id = mine.isEmpty ? nil : mine.remove(at: random.int(0..<mine.count)) else {
                return await perform(.getTracksMetadata)
            }
            if await call(operation, trackList, "RemoveTrack", [.objectPath(id)]) != nil {
                board.added -= 1
                board.removesAnswered += 1
            } else {
                mine.append(id)
            }
        case .get:
            let property = random.pick(Self.readable)
            if let value = await call(operation, Self.properties, "Get", [.string(player), .string(property)])?.first?
                .unwrapped, property == "Metadata"
            {
                lastTrackID = value.stringVariantDictionary?["mpris:trackid"]?.objectPath
            }
        case .getAll:
            if let all = await call(operation, Self.properties, "GetAll", [.string(player)])?.first?
                .stringVariantDictionary
            {
                lastTrackID = all["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath
            }
        case .getTracks:
            if let tracks = await call(operation, Self.properties, "Get", [.string(trackList), .string("Tracks")])?
                .first?.unwrapped.objectPaths
            {
                lastTracks = tracks
            }
        case .getTracksMetadata:
            let asked = lastTracks.isEmpty ? board.originals : lastTracks
            guard
                let reply = await call(
                    operation, trackList, "GetTracksMetadata", [.array(.objectPath, asked.map(Value.objectPath))]),
                case .array(_, let maps)? = reply.first
            else { return }
            // Our entries: those with our file's URL (only this client removes them).
            for map in maps.compactMap(\.stringVariantDictionary) {
                guard let id = map["mpris:trackid"]?.objectPath, let url = map["xesam:url"]?.string else { continue }
                if url == uri || url.hasSuffix("/" + fileName), !mine.contains(id) { mine.append(id) }
            }
        }
    }
}
