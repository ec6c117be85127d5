import Dispatch
import TestKit
import Testing

@testable import DBus

/// Methods answered through a `MethodReply`, on a private `dbus-daemon`: answered later,
/// answered twice, failed, never answered; and the same in-process.
@MainActor
@Suite("Replies answered later", .timeLimit(.minutes(1)))
struct MethodReplyTests {
    static let name = "org.example.Later"
    static let interfaceName = "org.example.Later"
    static let path = ObjectPath("/org/example/Later")!

    /// A service whose `Later` keeps each call's reply for the test to answer, and a client.
    @MainActor
    final class Fixture {
        let bus: PrivateBus
        let service: Connection
        let client: Connection
        let object: ExportedObject
        let waiter = Waiter()
        /// The calls of `Later` not answered by the service itself, in the order they came.
        var held: [(arguments: [Value], reply: MethodReply)] = []
        /// The answers the client got, by the tag it gave each call.
        var answers: [String: Result<[Value], BusError>] = [:]

        init(bus: PrivateBus) throws {
            self.bus = bus
            service = try Connection(address: bus.address)
            client = try Connection(address: bus.address)
            object = ExportedObject(path: MethodReplyTests.path, interfaces: [])
            object.replaceInterfaces([makeInterface()])
            service.export(object)
        }

        private func makeInterface() -> Interface {
            Interface(
                MethodReplyTests.interfaceName,
                methods: [
                    Method("Later", in: [Argument("n", .int32)], out: [Argument("n", .int32)]) {
                        [unowned self] arguments, reply in
                        held.append((arguments, reply))
                        waiter.poke()
                    },
                    Method("Twice", out: [Argument("n", .int32)]) { _, reply in
                        reply.succeed([.int32(1)])
                        reply.succeed([.int32(2)])
                        reply.fail(BusError(.failed, "a third answer"))
                    },
                    Method("Never") { _, _ in },
                    Method("Now", out: [Argument("n", .int32)]) { _, reply in reply.succeed([.int32(7)]) },
                ])
        }

        /// Calls `member` without waiting: its answer goes to `answers[tag]`.
        func send(_ member: String, _ arguments: [Value] = [], tag: String) throws {
            let message = try Message.methodCall(
                destination: MethodReplyTests.name, path: MethodReplyTests.path,
                interface: MethodReplyTests.interfaceName, member: member, arguments: arguments)
            client.send(message, timeout: .seconds(20)) { [unowned self] result in
                answers[tag] = result.flatMap { reply in
                    if let error = reply.error { return .failure(error) }
                    return Result { () throws(BusError) in try reply.readArguments() }
                }
                waiter.poke()
            }
        }

        /// Waits for the answer tagged `tag`.
        func answer(_ tag: String) async -> Result<[Value], BusError>? {
            _ = await waiter.wait(timeout: .seconds(20)) { [unowned self] in answers[tag] != nil }
            return answers[tag]
        }

        /// A round trip to the service: every call sent before is in its handler by then.
        func ping() async throws {
            _ = try await client.call(
                destination: MethodReplyTests.name, path: MethodReplyTests.path,
                interface: ExportedObject.peerInterface, member: "Ping")
        }

        func stop() {
            client.close()
            service.close()
            bus.stop()
        }
    }

    func withFixture(_ body: (Fixture) async throws -> Void) async throws {
        let fixture = try Fixture(bus: await PrivateBus())
        defer { fixture.stop() }
        #expect(try fixture.service.requestName(Self.name) == .primaryOwner)
        try await body(fixture)
    }

    @Test("a reply answered later reaches its caller; each call gets its own, in the order answered")
    func answeredLater() async throws {
        try await withFixture { f in
            try f.send("Later", [.int32(1)], tag: "first")
            try f.send("Later", [.int32(2)], tag: "second")
            #expect(await f.waiter.wait(timeout: .seconds(10)) { f.held.count == 2 })
            // Both wait for their answer, while the service goes on answering other calls.
            try await f.ping()
            #expect(f.answers.isEmpty)
            #expect(f.held.map(\.arguments) == [[.int32(1)], [.int32(2)]])

            f.held[1].reply.succeed([.int32(20)])
            #expect(await f.answer("second") == .success([.int32(20)]))
            #expect(f.answers["first"] == nil)
            #expect(f.held[1].reply.isAnswered && !f.held[0].reply.isAnswered)

            // Answered from another queue's work, back on the main actor.
            let reply = f.held[0].reply
            DispatchQueue(label: "test.worker").async {
                DispatchQueue.main.async { MainActor.assumeIsolated { reply.succeed([.int32(10)]) } }
            }
            #expect(await f.answer("first") == .success([.int32(10)]))
        }
    }

    @Test("answered twice: the first answer counts, the others are ignored")
    func answeredTwice() async throws {
        try await withFixture { f in
            try f.send("Twice", tag: "twice")
            #expect(await f.answer("twice") == .success([.int32(1)]))

            try f.send("Later", [.int32(3)], tag: "later")
            #expect(await f.waiter.wait(timeout: .seconds(10)) { f.held.count == 1 })
            let reply = f.held[0].reply
            reply.fail(BusError(BusError.Name("org.example.Error.Gone"), "gone"))
            reply.succeed([.int32(3)])
            #expect(await f.answer("later") == .failure(BusError(BusError.Name("org.example.Error.Gone"), "gone")))
            // Nothing more went out for either call: the next call gets its own answer.
            try f.send("Now", tag: "now")
            #expect(await f.answer("now") == .success([.int32(7)]))
        }
    }

    @Test("a reply failed later answers the caller with its error")
    func failedLater() async throws {
        try await withFixture { f in
            try f.send("Later", [.int32(4)], tag: "failed")
            #expect(await f.waiter.wait(timeout: .seconds(10)) { f.held.count == 1 })
            try await f.ping()
            #expect(f.answers["failed"] == nil)
            f.held[0].reply.fail(BusError(.invalidArgs, "not now"))
            #expect(await f.answer("failed") == .failure(BusError(.invalidArgs, "not now")))
        }
    }

    @Test("a reply dropped unanswered answers Failed at once, not after the caller's timeout")
    func neverAnswered() async throws {
        try await withFixture { f in
            let start = ContinuousClock.now
            try f.send("Never", tag: "never")
            let answer = await f.answer("never")
            #expect(ContinuousClock.now - start < .seconds(10))
            guard case .failure(let error)? = answer else {
                Issue.record("expected Failed, got \(String(describing: answer))")
                return
            }
            #expect(error.name == .failed)
            #expect(error.message.contains("Never"), "\(error)")

            // A held reply released unanswered does the same.
            try f.send("Later", [.int32(5)], tag: "released")
            #expect(await f.waiter.wait(timeout: .seconds(10)) { f.held.count == 1 })
            f.held.removeAll()
            guard case .failure(let released)? = await f.answer("released") else {
                Issue.record("expected Failed for the released reply")
                return
            }
            #expect(released.name == .failed)
        }
    }

    @Test("in-process: dispatch with a closure waits for the answer; without one, a later answer is Failed")
    func inProcess() async throws {
        var held: [MethodReply] = []
        let object = ExportedObject(
            path: Self.path,
            interfaces: [
                Interface(
                    Self.interfaceName,
                    methods: [
                        Method("Later", out: [Argument("n", .int32)]) { _, reply in held.append(reply) },
                        Method("Now", out: [Argument("n", .int32)]) { _, reply in reply.succeed([.int32(7)]) },
                    ])
            ])
        var answers: [Result<[Value], BusError>] = []
        object.dispatch(interface: Self.interfaceName, member: "Later", arguments: []) { answers.append($0) }
        #expect(answers.isEmpty && held.count == 1)
        held[0].succeed([.int32(8)])
        held[0].succeed([.int32(9)])
        #expect(answers == [.success([.int32(8)])])

        // The form that returns answers a method that answers at once, and refuses to wait.
        #expect(object.dispatch(interface: Self.interfaceName, member: "Now", arguments: []) == .success([.int32(7)]))
        let refused = object.dispatch(interface: Self.interfaceName, member: "Later", arguments: [])
        #expect(refused.failureName == .failed)
        #expect(held.count == 2)
        held[1].succeed([.int32(1)])  // dropped: nobody waits for it any more
        // Errors of routing come through the closure too.
        object.dispatch(interface: Self.interfaceName, member: "Missing", arguments: []) { answers.append($0) }
        #expect(answers.last?.failureName == .unknownMethod)
        // `handler` of a replying method answers only what is answered before it returns.
        let now = try #require(object.interface(named: Self.interfaceName)?.methods.first { $0.name == "Now" })
        #expect(try now.handler([]) == [.int32(7)])
        #expect(now.replyingHandler != nil)
    }
}

extension Result where Failure == BusError {
    /// The error's name, nil for a success.
    fileprivate var failureName: BusError.Name? {
        if case .failure(let error) = self { return error.name }
        return nil
    }
}
