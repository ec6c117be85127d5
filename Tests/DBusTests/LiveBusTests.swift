import Foundation
import TestKit
import Testing

@testable import DBus

/// Two connections on a private `dbus-daemon`: one exports an object and owns a name,
/// the other calls it and listens to its signals.
///
/// Every test has a private bus daemon of its own, so the tests run in parallel, opening
/// and closing connections while others are being cancelled (see
/// `connectionOpenedRightAfterClose` for that pattern on its own).
@MainActor
@Suite("Live bus", .timeLimit(.minutes(1)))
struct LiveBusTests {
    static let name = "org.example.QuaverTest"
    static let interfaceName = "org.example.Music"
    static let objectPath = ObjectPath("/org/example/Music")!

    /// A private bus with a service connection (exporting the test object and owning
    /// `name`) and a client connection.
    @MainActor
    final class Fixture {
        let bus: PrivateBus
        let service: Connection
        let client: Connection
        let object: ExportedObject
        var volume = 0.5

        init(bus: PrivateBus) throws {
            self.bus = bus
            service = try Connection(address: bus.address)
            client = try Connection(address: bus.address)
            object = ExportedObject(path: LiveBusTests.objectPath, interfaces: [])
            object.replaceInterfaces([makeInterface()])
            service.export(object)
        }

        private func makeInterface() -> Interface {
            Interface(
                LiveBusTests.interfaceName,
                methods: [
                    Method("Add", in: [Argument("a", .int32), Argument("b", .int32)], out: [Argument("sum", .int64)]) {
                        args throws(BusError) in
                        guard case .int32(let a) = args[0], case .int32(let b) = args[1] else { return [] }
                        return [.int64(Int64(a) + Int64(b))]
                    },
                    Method("Echo", in: [Argument("value", .variant)], out: [Argument("value", .variant)]) { $0 },
                    Method("Fail") { _ throws(BusError) -> [Value] in
                        throw BusError(BusError.Name("org.example.Error.Nope"), "it failed\0here")
                    },
                    Method("BadReply") { _ in [.array(.string, [.int32(1)])] },
                ],
                properties: [
                    Property(
                        "Volume", .double, get: { [unowned self] in .double(volume) },
                        set: { [unowned self] (value: Value) throws(BusError) in volume = value.double ?? volume })
                ],
                signals: [SignalDeclaration("Seeked", [Argument("position", .int64)])])
        }

        func call(
            _ member: String, _ arguments: [Value] = [], interface: String = LiveBusTests.interfaceName,
            path: ObjectPath = LiveBusTests.objectPath, destination: String = LiveBusTests.name
        ) async throws(BusError) -> [Value] {
            try await client.call(
                destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        }

        func stop() {
            client.close()
            service.close()
            bus.stop()
        }
    }

    /// Runs `body` with a fresh fixture whose service owns `name`.
    func withFixture(_ body: (Fixture) async throws -> Void) async throws {
        let fixture = try Fixture(bus: await PrivateBus())
        defer { fixture.stop() }
        #expect(try fixture.service.requestName(Self.name) == .primaryOwner)
        try await body(fixture)
    }

    /// Expects an async call to throw a `BusError` named `name`; returns the error.
    @discardableResult
    func expectCallError(
        _ name: BusError.Name, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> [Value]
    ) async -> BusError? {
        do {
            let values = try await body()
            Issue.record("expected \(name), got \(values)", sourceLocation: sourceLocation)
            return nil
        } catch let error as BusError {
            #expect(error.name == name, "\(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected a BusError \(name), got \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    // MARK: Names

    @Test("requesting names")
    func names() async throws {
        try await withFixture { f async throws in
            #expect(f.service.uniqueName.hasPrefix(":"))
            #expect(f.client.uniqueName.hasPrefix(":"))
            #expect(f.service.uniqueName != f.client.uniqueName)
            #expect(f.service.isConnected && f.client.isConnected)
            #expect(try f.service.requestName(Self.name) == .alreadyOwner)
            #expect(try f.client.requestName(Self.name) == .exists)
            #expect(try f.client.requestName("org.example.Other") == .primaryOwner)
            expectBusError(.invalidArgs) { try f.client.requestName(":1.99") }
            expectBusError(.invalidArgs) { try f.client.requestName("single") }

            // Once released, the other connection can take it.
            f.service.releaseName(Self.name)
            #expect(try f.client.requestName(Self.name) == .primaryOwner)
        }
    }

    @Test("requesting names without blocking: the same answers, and the connection serves meanwhile")
    func namesWithoutBlocking() async throws {
        try await withFixture { f async throws in
            @MainActor func request(_ connection: Connection, _ name: String) async -> Result<
                Connection.RequestNameReply, BusError
            > {
                await withCheckedContinuation { continuation in
                    connection.requestName(name) { continuation.resume(returning: $0) }
                }
            }
            #expect(try await request(f.service, Self.name).get() == .alreadyOwner)
            #expect(try await request(f.client, Self.name).get() == .exists)
            #expect(try await request(f.client, "org.example.Other").get() == .primaryOwner)
            if case .success(let reply) = await request(f.client, ":1.99") {
                Issue.record("a unique name is refused, not \(reply)")
            }
            if case .failure(let error) = await request(f.client, "single") {
                #expect(error.name == .invalidArgs)
            } else {
                Issue.record("a name without a dot is refused")
            }
            // The service answers a call while its own request is on its way: nothing blocks.
            var came = false
            var answer: Connection.RequestNameReply?
            f.service.requestName("org.example.Third") {
                came = true
                answer = try? $0.get()
            }
            #expect(!came, "the answer comes later, from the bus")
            #expect(try await f.call("Add", [.int32(1), .int32(2)]) == [.int64(3)])
            _ = try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(10)) { came }
            #expect(answer == .primaryOwner)
            f.service.releaseName(Self.name)
            #expect(try await request(f.client, Self.name).get() == .primaryOwner)
        }
    }

    // MARK: Method calls

    @Test("method calls and their replies")
    func methodCalls() async throws {
        try await withFixture { f async throws in
            #expect(try await f.call("Add", [.int32(40), .int32(2)]) == [.int64(42)])
            // By unique name too.
            #expect(
                try await f.call("Add", [.int32(-1), .int32(-1)], destination: f.service.uniqueName) == [.int64(-2)])
            let payload = Value.variant(
                .stringVariantDictionary([
                    "nested": .variant(.structure([.string("é"), .array(.int64, [.int64(.min)])])),
                    "empty": .array(.string, []),
                ]))
            #expect(try await f.call("Echo", [payload]) == [payload])
            #expect(try await f.call("Ping", interface: "org.freedesktop.DBus.Peer") == [])
        }
    }

    @Test("error replies arrive as thrown BusErrors")
    func errorReplies() async throws {
        try await withFixture { f async throws in
            let failure = await expectCallError(BusError.Name("org.example.Error.Nope")) { try await f.call("Fail") }
            #expect(failure?.message == "it failed\u{FFFD}here")
            await expectCallError(.invalidArgs) { try await f.call("Add", [.int32(1)]) }
            await expectCallError(.unknownMethod) { try await f.call("Subtract") }
            await expectCallError(.unknownInterface) {
                try await f.call("Add", [.int32(1), .int32(2)], interface: "org.example.Nothing")
            }
            await expectCallError(.serviceUnknown) { try await f.call("Add", destination: "org.example.NobodyHere") }
            // A handler whose reply cannot be built answers Failed instead of crashing.
            await expectCallError(.failed) { try await f.call("BadReply") }
            // An invalid argument is refused before anything is sent.
            await expectCallError(.invalidArgs) { try await f.call("Echo", [.structure([])]) }
            // Nothing is exported here: libdbus answers UnknownMethod for the unhandled call.
            await expectCallError(.unknownMethod) { try await f.call("Add", path: ObjectPath("/nothing")!) }
        }
    }

    @Test("properties over the bus")
    func properties() async throws {
        try await withFixture { f async throws in
            let properties = ExportedObject.propertiesInterface
            #expect(
                try await f.call("Get", [.string(Self.interfaceName), .string("Volume")], interface: properties) == [
                    .variant(.double(0.5))
                ])
            #expect(
                try await f.call(
                    "Set", [.string(Self.interfaceName), .string("Volume"), .variant(.double(0.9))],
                    interface: properties) == [])
            #expect(f.volume == 0.9)
            let all = try await f.call("GetAll", [.string(Self.interfaceName)], interface: properties)
            #expect(all.first?.stringVariantDictionary == ["Volume": .double(0.9)])
            await expectCallError(.unknownProperty) {
                try await f.call("Get", [.string(Self.interfaceName), .string("Nope")], interface: properties)
            }
            await expectCallError(.invalidArgs) {
                try await f.call(
                    "Set", [.string(Self.interfaceName), .string("Volume"), .variant(.string("x"))],
                    interface: properties)
            }
            #expect(f.volume == 0.9)
        }
    }

    @Test("unexported objects stop answering; a closed connection refuses calls")
    func unexportAndClose() async throws {
        try await withFixture { f async throws in
            #expect(try await f.call("Add", [.int32(1), .int32(1)]) == [.int64(2)])
            f.service.unexport(Self.objectPath)
            await expectCallError(.unknownMethod) { try await f.call("Add", [.int32(1), .int32(1)]) }
            f.client.close()
            #expect(!f.client.isConnected)
            await expectCallError(.disconnected) { try await f.call("Add", [.int32(1), .int32(1)]) }
        }
    }

    // MARK: Introspection

    @Test("Introspect walks the tree from / to the object")
    func introspection() async throws {
        try await withFixture { f async throws in
            let introspectable = ExportedObject.introspectableInterface
            let root = try await f.call("Introspect", interface: introspectable, path: .root).first?.string ?? ""
            #expect(root.contains("<node name=\"org\"/>"), "\(root)")
            let middle =
                try await f.call("Introspect", interface: introspectable, path: ObjectPath("/org/example")!).first?
                .string ?? ""
            #expect(middle.contains("<node name=\"Music\"/>"), "\(middle)")
            let leaf = try await f.call("Introspect", interface: introspectable).first?.string ?? ""
            #expect(leaf.contains("<interface name=\"org.example.Music\">"))
            #expect(leaf.contains("<method name=\"Add\">"))
            #expect(!leaf.contains("<node name="), "the object has no children")

            // A child below the object shows up in its introspection.
            f.service.export(ExportedObject(path: ObjectPath("/org/example/Music/Track_1")!, interfaces: []))
            let withChild = try await f.call("Introspect", interface: introspectable).first?.string ?? ""
            #expect(withChild.contains("<node name=\"Track_1\"/>"))
        }
    }

    // MARK: Signals

    @Test("signals reach subscribers")
    func signals() async throws {
        try await withFixture { f async throws in
            let received = EventRecorder<Message>()
            try f.client.onSignal(interface: Self.interfaceName, member: "Seeked", path: Self.objectPath) {
                received.record($0)
            }
            let changes = EventRecorder<Message>()
            try f.client.onSignal(interface: ExportedObject.propertiesInterface, member: "PropertiesChanged") {
                changes.record($0)
            }
            // Round trip once so the match rules are surely installed before emitting.
            _ = try await f.call("Ping", interface: "org.freedesktop.DBus.Peer")

            f.object.emit(interface: Self.interfaceName, member: "Seeked", arguments: [.int64(1234)])
            f.object.emitPropertiesChanged(interface: Self.interfaceName, changed: ["Volume": .double(0.1)])
            f.object.emitPropertiesChanged(interface: Self.interfaceName, changed: [:])  // sends nothing

            #expect(await received.wait(forCount: 1), "no Seeked signal within the deadline")
            let seeked = try #require(received.events.first)
            #expect(seeked.arguments == [.int64(1234)])
            #expect(seeked.sender == f.service.uniqueName)
            #expect(seeked.path == Self.objectPath.rawValue)
            #expect(seeked.kind == .signal)

            #expect(await changes.wait(forCount: 1), "no PropertiesChanged signal within the deadline")
            #expect(changes.events.first?.signature == "sa{sv}as")
            #expect(
                changes.events.first?.arguments == [
                    .string(Self.interfaceName), .stringVariantDictionary(["Volume": .double(0.1)]),
                    .array(.string, []),
                ])
        }
    }

    @Test("a removed signal handler is not called again")
    func removeSignalHandler() async throws {
        try await withFixture { f async throws in
            let removed = EventRecorder<Message>()
            let kept = EventRecorder<Message>()
            let subscription = try f.client.onSignal(member: "Seeked") { removed.record($0) }
            try f.client.onSignal(member: "Seeked") { kept.record($0) }
            _ = try await f.call("Ping", interface: "org.freedesktop.DBus.Peer")

            f.object.emit(interface: Self.interfaceName, member: "Seeked", arguments: [.int64(1)])
            #expect(await kept.wait(forCount: 1))
            #expect(removed.events.count == 1)

            f.client.removeSignalHandler(subscription)
            f.object.emit(interface: Self.interfaceName, member: "Seeked", arguments: [.int64(2)])
            #expect(await kept.wait(forCount: 2))
            #expect(removed.events.count == 1, "the removed handler was called again")
        }
    }

    @Test("a handler subscribed for one sender ignores other senders")
    func senderFilter() async throws {
        try await withFixture { f async throws in
            let other = try Connection(address: f.bus.address)
            defer { other.close() }
            let fromService = EventRecorder<Message>()
            let fromAnyone = EventRecorder<Message>()
            try f.client.onSignal(sender: f.service.uniqueName, member: "Seeked") { fromService.record($0) }
            try f.client.onSignal(member: "Seeked") { fromAnyone.record($0) }
            _ = try await f.call("Ping", interface: "org.freedesktop.DBus.Peer")

            other.emitSignal(
                path: Self.objectPath, interface: Self.interfaceName, member: "Seeked", arguments: [.int64(9)])
            #expect(await fromAnyone.wait(forCount: 1))
            #expect(fromAnyone.events.first?.sender == other.uniqueName)
            // Both handlers ran for that message, so the sender-filtered one has had its chance.
            #expect(fromService.events.isEmpty, "got a signal from \(fromService.events.first?.sender ?? "?")")
        }
    }

    @Test("a handler subscribed for a well-known name hears only its current owner")
    func wellKnownSenderFilter() async throws {
        try await withFixture { f async throws in
            let other = try Connection(address: f.bus.address)
            defer { other.close() }
            let fromName = EventRecorder<Message>()
            let fromAnyone = EventRecorder<Message>()
            try f.client.onSignal(sender: Self.name, member: "Seeked") { fromName.record($0) }
            try f.client.onSignal(member: "Seeked") { fromAnyone.record($0) }
            _ = try await f.call("Ping", interface: "org.freedesktop.DBus.Peer")
            @MainActor func seeked(from connection: Connection, _ position: Int64) {
                connection.emitSignal(
                    path: Self.objectPath, interface: Self.interfaceName, member: "Seeked",
                    arguments: [.int64(position)])
            }
            @MainActor func heard() -> [Int64] { fromName.events.compactMap { $0.arguments.first?.int64 }.sorted() }

            // The service owns the name.
            seeked(from: other, 1)
            seeked(from: f.service, 2)
            #expect(await fromAnyone.wait(forCount: 2))
            #expect(heard() == [2])

            // The name moves to the other connection: the subscription follows it.
            f.service.releaseName(Self.name)
            #expect(try other.requestName(Self.name) == .primaryOwner)
            seeked(from: other, 3)
            seeked(from: f.service, 4)
            #expect(await fromAnyone.wait(forCount: 4))
            #expect(heard() == [2, 3])

            // Nobody owns it: nobody is heard.
            other.releaseName(Self.name)
            seeked(from: other, 5)
            #expect(await fromAnyone.wait(forCount: 5))
            #expect(heard() == [2, 3])
        }
    }

    @Test("onSignal refuses names that are not valid (they would break the match rule)")
    func onSignalValidatesNames() async throws {
        try await withFixture { f async throws in
            expectBusError(.invalidArgs) { try f.client.onSignal(sender: "org.example.X',member='Y") { _ in } }
            expectBusError(.invalidArgs) {
                try f.client.onSignal(sender: ":1." + String(repeating: "2", count: 253)) { _ in }
            }
            expectBusError(.invalidArgs) { try f.client.onSignal(interface: "noDots") { _ in } }
            expectBusError(.invalidArgs) { try f.client.onSignal(member: "a.b") { _ in } }
        }
    }

    @Test("losing the bus calls onDisconnect once")
    func disconnect() async throws {
        try await withFixture { f async throws in
            let disconnects = EventRecorder<Void>()
            f.client.onDisconnect = { disconnects.record(()) }
            f.bus.stop()
            #expect(await disconnects.wait(forCount: 1), "onDisconnect was not called within the deadline")
            #expect(!f.client.isConnected)
            await expectCallError(.disconnected) { try await f.call("Add", [.int32(1), .int32(2)]) }
            #expect(disconnects.events.count == 1)
        }
    }

    @Test("a connection opened right after another was closed still receives messages")
    func connectionOpenedRightAfterClose() async throws {
        let bus = try await PrivateBus()
        defer { bus.stop() }
        // What a reconnect in `onDisconnect` does: close, then connect again at once, so
        // the new socket gets the closed one's descriptor number before the main queue
        // has run the old dispatch sources' cancellation. Each source watches its own
        // duplicate of the descriptor, so the old registration cannot shadow the new one.
        for _ in 0..<3 {
            let old = try Connection(address: bus.address)
            _ = try old.requestName("org.example.Reconnect")
            old.close()
            let new = try Connection(address: bus.address)
            new.export(
                ExportedObject(
                    path: .root,
                    interfaces: [
                        Interface("org.example.E", methods: [Method("Hi") { _ in [.string("hi")] }])
                    ]))
            let reply = try await new.call(
                destination: new.uniqueName, path: .root, interface: "org.example.E", member: "Hi",
                timeout: .seconds(10))
            #expect(reply == [.string("hi")])
            new.close()
            await Task.yield()
        }
    }

    @Test("a very long call timeout is clamped, not a crash")
    func hugeTimeout() async throws {
        let bus = try await PrivateBus()
        defer { bus.stop() }
        let address = bus.address
        // `seconds * 1000` overflows for durations above ~292 million years; such a
        // timeout must become "no timeout", not a trap.
        await #expect(processExitsWith: .success) { [address = address as String] in
            try await Task { @MainActor in
                let connection = try Connection(address: address)
                _ = try await connection.call(
                    destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                    interface: "org.freedesktop.DBus", member: "GetId", timeout: .seconds(Int64.max / 2))
            }.value
        }
    }

    @Test(
        "call timeouts become libdbus milliseconds without overflow",
        arguments: [
            (Duration.seconds(25), Int32(25_000)),
            (.milliseconds(1), 1),
            (.microseconds(1), 1),  // a partial millisecond counts as one
            (.milliseconds(1500) + .nanoseconds(1), 1501),
            (.zero, 1),
            (.seconds(-5), 1),
            (.seconds(Int64.min), 1),
            (.milliseconds(Int64(Int32.max) - 1), Int32.max - 1),
            (.milliseconds(Int64(Int32.max)), Int32.max),  // DBUS_TIMEOUT_INFINITE
            (.seconds(30 * 24 * 3600), Int32.max),
            (.seconds(Int64.max / 2), Int32.max),
            (.seconds(Int64.max), Int32.max),
        ])
    func timeoutMilliseconds(_ timeout: Duration, _ expected: Int32) {
        #expect(Connection.milliseconds(timeout) == expected)
    }

    @Test("connecting to a dead address throws libdbus's error")
    func badAddress() {
        expectBusError(BusError.Name("org.freedesktop.DBus.Error.FileNotFound")) {
            try Connection(address: "unix:path=/nonexistent/quaver-test-socket")
        }
        expectBusError(BusError.Name("org.freedesktop.DBus.Error.BadAddress")) {
            try Connection(address: "no-such-transport:")
        }
    }
}
