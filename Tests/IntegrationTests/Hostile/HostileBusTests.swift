import DBus
import Foundation
import TestKit
import Testing

/// Hostile D-Bus input against the real binary: calls generated from the live
/// introspection document (every method, every property, of every interface) with hostile
/// values and wrong signatures, plus unknown names and other object paths, several in
/// flight. Every call must be answered with a sensible D-Bus error or a reply, refused
/// calls must change nothing, and the daemon must stay up, answer with exact types, log no
/// critical problem and execute nothing it was handed.
///
/// The default run sends about 10,000 calls; `QUAVER_LONG_TESTS=1` sends 100,000.
/// `QUAVER_HOSTILE_SEED` replays another seed (printed by every run).
@Suite("hostile D-Bus input", .serialized)
@MainActor
struct HostileBusTests {
    static let environment = ProcessInfo.processInfo.environment
    nonisolated static let longRun = ProcessInfo.processInfo.environment["QUAVER_LONG_TESTS"] == "1"
    /// `QUAVER_HOSTILE_SEED`: decimal, or hexadecimal with `0x` as printed.
    static let seed: UInt64 =
        environment["QUAVER_HOSTILE_SEED"].flatMap { text in
            text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        } ?? 0x5155_4156_4552_0001
    static let randomCalls = longRun ? 100_000 : 10_000
    static let inFlight = 8

    // MARK: - The generated run

    @Test("calls generated from the live introspection: hostile values, wrong signatures, unknown names, other paths")
    func generatedCalls() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        let started = ContinuousClock.now
        print(
            "hostile bus: seed 0x\(String(Self.seed, radix: 16)) (replay with QUAVER_HOSTILE_SEED), \(Self.randomCalls) random calls, \(Self.inFlight) in flight"
        )

        let planner = try await fixture.planner()
        #expect(planner.objectInterfaces.count >= 4, "interfaces: \(planner.interfaces.map(\.name))")
        #expect(planner.allMethods.count >= 20 && planner.allProperties.count >= 25)
        var random = HostileRandom(seed: Self.seed)
        let runner = HostileRunner(connection: session.client, destination: session.busName)
        var tally = HostileTally()

        // 1. Calls that must all be refused leave the state as it was (Position aside: the
        //    daemon is paused, but Position is not a state a refusal could be blamed for).
        let before = try await fixture.settledState()
        let batch = planner.rejectedBatch(&random)
        #expect(batch.allSatisfy { $0.expectation.rejects })
        let batchOutcomes = await runner.run(batch, inFlight: Self.inFlight)
        for (index, (call, outcome)) in zip(batch, batchOutcomes).enumerated() {
            tally.add(call, outcome, index: index)
        }
        let after = try await fixture.state()
        for key in Set(before.keys).union(after.keys).sorted() where before[key] != after[key] {
            Issue.record(
                "refused calls changed \(key): \(before[key].map { HostileFormat.describe($0) } ?? "nil") → \(after[key].map { HostileFormat.describe($0) } ?? "nil")"
            )
        }
        print("hostile bus: the refused batch (\(batch.count) calls) took \(ContinuousClock.now - started)")

        // 2. Every member and writable property with each hostile value of its types, then
        //    random calls of every category, the daemon's state changing as they go.
        let generationStarted = ContinuousClock.now
        let sweep = planner.coverageCalls(&random)
        let calls = sweep + (0..<max(0, Self.randomCalls - sweep.count)).map { _ in planner.randomCall(&random) }
        print(
            "hostile bus: generating \(calls.count) calls (\(sweep.count) of them the coverage sweep) took \(ContinuousClock.now - generationStarted)"
        )
        let exercised = Set(calls.compactMap { $0.exercises(planner) })
        let declared = Set(
            planner.allMethods.map { "\($0.interface.name).\($0.method.name)" }
                + planner.allProperties.filter(\.property.writable).map {
                    "Set \($0.interface.name).\($0.property.name)"
                })
        #expect(
            declared.subtracting(exercised).sorted() == ["org.mpris.MediaPlayer2.Quit"],
            "not called with their declared signature")
        let offset = batch.count
        let randomStarted = ContinuousClock.now
        let outcomes = await runner.run(calls, inFlight: Self.inFlight)
        for (index, (call, outcome)) in zip(calls, outcomes).enumerated() {
            tally.add(call, outcome, index: offset + index)
        }
        print(
            "hostile bus: the \(calls.count) generated calls took \(ContinuousClock.now - randomStarted); slowest: \(runner.slowest.prefix(3).map { "\($0.duration) \(String(calls[$0.index].label.prefix(100)))" })"
        )

        for failure in tally.failures.prefix(25) {
            Issue.record(
                "call #\(failure.index) [\(failure.call.category.rawValue)] \(failure.call.label): \(failure.why)")
        }
        if tally.failures.count > 25 { Issue.record("… and \(tally.failures.count - 25) more failed calls") }
        let failuresByCategory = Dictionary(grouping: tally.failures, by: \.call.category).mapValues(\.count)
        #expect(
            tally.failures.count == 0,
            "failed calls per category: \(failuresByCategory.map { "\($0.key.rawValue): \($0.value)" })")

        // 3. Still up, still exact.
        let checkStarted = ContinuousClock.now
        try await fixture.expectHealthy(planner)
        print(
            "hostile bus: the health check took \(ContinuousClock.now - checkStarted); the log has \(session.log().utf8.count) bytes"
        )
        let elapsed = ContinuousClock.now - started
        print("hostile bus: \(tally.summary)")
        print(
            "hostile bus: \(tally.calls) calls in \(elapsed), \(tally.failures.count) failures, seed 0x\(String(Self.seed, radix: 16))"
        )
        try await fixture.quitCleanly()
    }

    // MARK: - URI schemes

    @Test("OpenUri and AddTrack accept only SupportedUriSchemes, and never run a pipeline description or a shell")
    func uriSchemes() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        let supported =
            try await session.get("SupportedUriSchemes", interface: "org.mpris.MediaPlayer2").stringArray ?? []
        #expect(!supported.isEmpty)
        let noTrack = Value.objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!)
        let tracksBefore = try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList")

        let schemes = [
            "ftp", "sftp", "javascript", "data", "smb", "nfs", "rtsp", "rtmp", "mms", "udp", "tcp", "fd", "appsrc",
            "pipe", "dvb", "cdda", "dvd", "v4l2", "alsa", "pulse", "pipewire", "dav", "resource", "trash", "gopher",
            "about", "mailto", "filesrc", "x-evil", "f1le", "fil", "files", "httpx", "http2",
        ]
        var rejected: [String] = []
        for scheme in schemes where !supported.contains(scheme) {
            rejected += [
                "\(scheme)://127.0.0.1:1/a.flac", "\(scheme):a", "\(scheme.uppercased()):///\(fixture.canary.path)",
            ]
        }
        rejected += [
            "javascript:alert(document.cookie)", "data:audio/flac;base64,ZkxhQwAAACI=", "data:,",
            "audiotestsrc ! fakesink", "audiotestsrc ! filesink location=\(fixture.pipelineTarget.path)",
            "audiotestsrc num-buffers=1 ! wavenc ! filesink location=\(fixture.pipelineTarget.path)",
            "$(touch \(fixture.canary.path))", "`touch \(fixture.canary.path)`", "\(fixture.canary.path)", "",
        ]
        for uri in rejected {
            await expectMPRISError(HostileExpectation.invalidArgs, "OpenUri(\(uri))") {
                _ = try await session.call("OpenUri", [.string(uri)])
            }
            await expectMPRISError(HostileExpectation.invalidArgs, "AddTrack(\(uri))") {
                _ = try await session.call(
                    "AddTrack", interface: "org.mpris.MediaPlayer2.TrackList", [.string(uri), noTrack, .boolean(true)])
            }
        }
        #expect(
            try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList") == tracksBefore,
            "a refused URI was queued")

        // Supported schemes carrying pipeline and shell syntax: whatever the answer, nothing runs.
        let smuggled = [
            "file:///tmp/x.flac ! filesink location=\(fixture.pipelineTarget.path)",
            "file://\(fixture.pipelineTarget.path)",
            "file:///$(touch \(fixture.canary.path))",
            "file:///nonexistent|touch \(fixture.canary.path)",
            "http://127.0.0.1:1/a ! filesink location=\(fixture.pipelineTarget.path)",
            "http://127.0.0.1:1/$(touch%20\(fixture.canary.path))",
            "https://127.0.0.1:1/`touch \(fixture.canary.path)`",
        ]
        for uri in smuggled where supported.contains(where: { uri.lowercased().hasPrefix($0 + ":") }) {
            for body in [
                { _ = try await session.call("OpenUri", [.string(uri)]) },
                {
                    _ = try await session.call(
                        "AddTrack", interface: "org.mpris.MediaPlayer2.TrackList",
                        [.string(uri), noTrack, .boolean(false)])
                },
            ] as [() async throws -> Void] {
                do {
                    try await body()
                } catch let error as BusError {
                    #expect(
                        error.name == .invalidArgs || error.name.rawValue.hasPrefix(HostileExpectation.playerErrors),
                        "\(uri): \(error)")
                }
            }
        }
        // Give any pipeline that was (wrongly) started a second to write its file.
        _ = await session.waiter.wait(timeout: .seconds(1), pollingEvery: .milliseconds(50)) {
            FileManager.default.fileExists(atPath: fixture.pipelineTarget.path)
                || FileManager.default.fileExists(atPath: fixture.canary.path)
        }
        _ = try await session.call("Ping", interface: "org.freedesktop.DBus.Peer")
        #expect(
            !FileManager.default.fileExists(atPath: fixture.pipelineTarget.path),
            "a pipeline description passed as a URI was executed")
        #expect(!FileManager.default.fileExists(atPath: fixture.canary.path), "shell syntax in a URI was executed")

        // A supported URI still works (the checks are not refusing everything).
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let count = try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList").objectPaths.count
        _ = try await session.call(
            "AddTrack", interface: "org.mpris.MediaPlayer2.TrackList",
            [.string(URL(fileURLWithPath: tracks[2].path).absoluteString), noTrack, .boolean(false)])
        #expect(
            try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList").objectPaths.count == count
                + 1)
        try await fixture.expectHealthy(try await fixture.planner())
        try await fixture.quitCleanly()
    }

    @Test("An http URI does not bring the daemon down when no GSettings schemas are installed")
    func httpWithoutSchemas() async throws {
        // The harness's XDG_DATA_DIRS is a bare folder of the test's own: GIO finds no
        // GSettings schemas there, and the GNOME proxy resolver that souphttpsrc asks for
        // calls g_error ("No GSettings schemas are installed on the system"): SIGTRAP.
        let fixture = try await HostileFixture.launch(systemSchemas: false)
        defer { fixture.stop() }
        let session = fixture.session
        do {
            _ = try await session.call("OpenUri", [.string("http://127.0.0.1:1/a.flac")])
        } catch let error as BusError {
            #expect(error.name.rawValue.hasPrefix(HostileExpectation.playerErrors), "\(error)")
        }
        // The stream fails at once (nothing listens on port 1); the crash, if any, follows.
        _ = await session.waiter.wait(timeout: .seconds(2)) { [unowned session] in session.daemonStatus != nil }
        #expect(
            session.daemonStatus == nil,
            "quaver died (status \(session.daemonStatus ?? 0)) after OpenUri(http://…): \(session.log().split(separator: "\n").filter { $0.contains("ERROR") || $0.contains("crashed") }.prefix(3))"
        )
        if session.daemonStatus == nil { try await fixture.quitCleanly() }
    }

    // MARK: - Nesting limits

    @Test(
        "Values as deep as a message may nest are answered; one level deeper is refused before sending, and the connection stays"
    )
    func deepNesting() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        let runner = HostileRunner(connection: session.client, destination: session.busName)
        for (value, tooDeep) in HostilePlanner.deepValues {
            let call = HostileCall(
                category: .deepVariant, path: HostilePlanner.objectPath, interface: HostilePlanner.propertiesInterface,
                member: "Set",
                arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("Volume"), value],
                expectation: tooDeep ? .refusedBeforeSending : .error(HostileExpectation.invalidArgs))
            let outcome = await runner.perform(call)
            #expect(HostileRunner.verdict(call, outcome) == nil, "\(call.label): \(outcome.summary)")
        }
        #expect(session.client.isConnected, "the bus dropped the test's connection")
        try await fixture.expectHealthy(try await fixture.planner())
    }

    // MARK: - Message size limits

    @Test("A reply larger than the bus allows comes back as LimitsExceeded; the daemon stays on the bus")
    func oversizedReply() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        // A track whose URL is about 4 KB long: its metadata map, asked for 20,000 times in
        // one GetTracksMetadata (a 500 KB call), makes a reply array past the 64 MiB the
        // protocol allows. Sent, it would make the bus drop the daemon's connection.
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        // (POSIX calls: Foundation's file functions give up on paths this long.)
        var path = fixture.folder.path
        for level in 0..<15 {
            path += "/" + String(repeating: Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(level))), count: 250)
            guard mkdir(path, 0o755) == 0 else {
                throw HarnessError("mkdir of a \(path.utf8.count)-byte path: errno \(errno)")
            }
        }
        path += "/t.flac"
        let audio = try Data(contentsOf: tracks[0])
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessError("open of a \(path.utf8.count)-byte path: errno \(errno)") }
        let written = audio.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        #expect(written == audio.count)
        let longTrack = URL(fileURLWithPath: path)
        let before = Set(try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList").objectPaths)
        _ = try await session.call(
            "AddTrack", interface: "org.mpris.MediaPlayer2.TrackList",
            [
                .string(URL(fileURLWithPath: longTrack.path).absoluteString),
                .objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!), .boolean(false),
            ])
        let added = Set(try await session.get("Tracks", interface: "org.mpris.MediaPlayer2.TrackList").objectPaths)
            .subtracting(before)
        let id = try #require(added.first, "AddTrack of \(longTrack.path.utf8.count)-byte path added nothing")
        // More ids than one call answers (10,000) is refused outright.
        do {
            _ = try await session.call(
                "GetTracksMetadata", interface: "org.mpris.MediaPlayer2.TrackList",
                [.array(.objectPath, Array(repeating: .objectPath(id), count: 10_001))])
            Issue.record("GetTracksMetadata of 10,001 ids answered")
        } catch let error as BusError {
            #expect(error.name == .invalidArgs, "\(error)")
        }
        // 10,000 maps of a 4 KB URL and title are over the 64 MiB array limit. Finding that
        // out means building most of them: seconds of work on a busy machine, not a hang.
        do {
            let reply = try await session.client.call(
                destination: session.busName, path: ObjectPath("/org/mpris/MediaPlayer2")!,
                interface: MPRISNames.trackList,
                member: "GetTracksMetadata",
                arguments: [.array(.objectPath, Array(repeating: .objectPath(id), count: 10_000))],
                timeout: .seconds(60))
            guard case .array(_, let items)? = reply.first else {
                throw HarnessError("GetTracksMetadata answered \(reply)")
            }
            #expect(!items.isEmpty)
        } catch let error as BusError {
            #expect(error.name == .limitsExceeded, "\(error)")
        }
        #expect(session.client.isConnected)
        try await fixture.expectHealthy(try await fixture.planner())
        try await fixture.quitCleanly()
    }

    /// Long run only: marshalling two 64 MiB arrays holds the test process's main actor for
    /// seconds, which would stall every other test running beside it.
    @Test(
        "Messages exactly at the protocol's array limit pass the bus; one byte more is refused before sending",
        .enabled(if: longRun))
    func arrayLimit() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        let mebibyte = 1 << 20
        // `as`: each element 4 + length + 1 bytes, 4-aligned: 64 elements of exactly 1 MiB.
        let strings = Array(repeating: Value.string(String(repeating: "s", count: mebibyte - 5)), count: 64)
        // `a{sv}`: each entry 8-aligned: key (4 + 1 + 1), variant signature "s" (3), padding
        // to 4, string (4 + length + 1): exactly 1 MiB each.
        let entries = Array(
            repeating: Value.DictionaryEntry(
                .string("k"), .variant(.string(String(repeating: "d", count: mebibyte - 17)))), count: 64)
        let atLimit: [Value] = [.array(.string, strings), .dictionary(key: .string, value: .variant, entries)]
        var overLimit = atLimit
        overLimit[0] = .array(
            .string, Array(strings.dropLast()) + [.string(String(repeating: "s", count: mebibyte - 4))])
        overLimit[1] = .dictionary(
            key: .string, value: .variant,
            Array(entries.dropLast()) + [
                .init(.string("k"), .variant(.string(String(repeating: "d", count: mebibyte - 16))))
            ])
        for (index, value) in atLimit.enumerated() {
            // Peer.Ping is answered by libdbus whatever its arguments: a pure trip through the bus.
            _ = try await session.client.call(
                destination: session.busName, path: ObjectPath("/org/mpris/MediaPlayer2")!,
                interface: "org.freedesktop.DBus.Peer",
                member: "Ping", arguments: [value], timeout: .seconds(60))
            #expect(session.client.isConnected, "the bus dropped the connection for a \(value.type) of exactly 64 MiB")
            do {
                _ = try Message.methodCall(
                    destination: session.busName, path: ObjectPath("/org/mpris/MediaPlayer2")!,
                    interface: "org.freedesktop.DBus.Peer",
                    member: "Ping", arguments: [overLimit[index]])
                Issue.record("a \(value.type) of 64 MiB + 1 byte was accepted for sending")
            } catch {
                #expect(error.name == .limitsExceeded, "\(error)")
            }
        }
        try await fixture.expectHealthy(try await fixture.planner())
    }

    // MARK: - File descriptors

    @Test("Unix file descriptors sent where none is expected are not kept open by the daemon")
    func descriptorsAreNotLeaked() async throws {
        let fixture = try await HostileFixture.launch()
        defer { fixture.stop() }
        let session = fixture.session
        let pid = try #require(session.daemon?.pid)
        let runner = HostileRunner(connection: session.client, destination: session.busName)
        _ = try await session.call("Ping", interface: "org.freedesktop.DBus.Peer")
        let before = ProcessProbe.openDescriptorCount(of: pid)
        let fd = Value.unixFD(fixture.descriptor)
        var calls: [HostileCall] = []
        for _ in 0..<100 {
            calls.append(
                HostileCall(
                    category: .wrongTypes, path: HostilePlanner.objectPath, interface: "org.mpris.MediaPlayer2.Player",
                    member: "OpenUri",
                    arguments: [fd], expectation: .error(HostileExpectation.invalidArgs)))
            calls.append(
                HostileCall(
                    category: .propertySetWrongType, path: HostilePlanner.objectPath,
                    interface: HostilePlanner.propertiesInterface, member: "Set",
                    arguments: [
                        .string("org.mpris.MediaPlayer2.Player"), .string("Volume"),
                        .variant(.array(.unixFD, [fd, fd, fd])),
                    ],
                    expectation: .error(HostileExpectation.invalidArgs)))
            calls.append(
                HostileCall(
                    category: .unknownMember, path: HostilePlanner.objectPath,
                    interface: "org.mpris.MediaPlayer2.Player", member: "NoSuchMethod",
                    arguments: [fd], expectation: .error(HostileExpectation.unknownMethod)))
            calls.append(
                HostileCall(
                    category: .otherPath, path: "/org/mpris", interface: "org.mpris.MediaPlayer2.Player",
                    member: "Play",
                    arguments: [fd],
                    expectation: .error(HostileExpectation.unknownMethod, HostileExpectation.unknownObject)))
        }
        let outcomes = await runner.run(calls, inFlight: Self.inFlight)
        for (call, result) in zip(calls, outcomes) {
            if let why = result.verdict {
                Issue.record("\(call.label): \(why)")
                break
            }
        }
        _ = try await session.call("Ping", interface: "org.freedesktop.DBus.Peer")
        let after = ProcessProbe.openDescriptorCount(of: pid)
        #expect(
            before > 0 && after - before < 20,
            "the daemon had \(before) descriptors open before \(calls.count) calls carried \(calls.count * 3 / 2) descriptors to it, \(after) after"
        )
        try await fixture.expectHealthy(try await fixture.planner())
    }
}
