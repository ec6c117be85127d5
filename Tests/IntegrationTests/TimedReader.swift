import CDBus
import DBus
import Dispatch
import TestKit

/// Reads a player's Position on a bus connection and a queue of its own, and times the
/// call there: the round trip is not stretched by other tests' tasks on the main actor,
/// and the main actor is never blocked, so the signals the tests beside it receive are
/// stamped when they come, not after this call's wait.
final class TimedReader: @unchecked Sendable {
    /// One Position read: the value, the midpoint of the call and half its round trip.
    typealias Reading = (microseconds: Int64, at: ContinuousClock.Instant, halfWidth: Duration)

    // Used only on `queue`, which serializes every call.
    private let raw: OpaquePointer
    private let queue = DispatchQueue(label: "quaver-tests.timed-reader")

    /// Connects to the bus at `address` and registers with it.
    init(address: String) throws {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw HarnessError("the timed reader could not connect to \(address): \(Self.text(of: error))")
        }
        guard dbus_bus_register(raw, &error) != 0 else {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw HarnessError("the timed reader could not register on \(address): \(Self.text(of: error))")
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        self.raw = raw
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// `busName`'s Position, read on the reader's queue with up to 5 calls for at most 0.2 s,
    /// until one comes back within 4 ms; else the quickest one.
    func position(of busName: String) async throws -> Reading {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try self.bestReading(of: busName) }) }
        }
    }

    private func bestReading(of busName: String) throws -> Reading {
        var best: Reading?
        let started = ContinuousClock.now
        for _ in 0..<5 where best == nil || ContinuousClock.now - started < .milliseconds(200) {
            let before = ContinuousClock.now
            let value = try readPosition(of: busName)
            let half = (ContinuousClock.now - before) / 2
            if best.map({ half < $0.halfWidth }) ?? true { best = (value, before + half, half) }
            if half < .milliseconds(2) { break }
        }
        return best!
    }

    /// How long `busName` took to answer a call of `member` on `interface` with string
    /// `arguments`, timed on the reader's queue: what the daemon took, and the bus, without
    /// the wait for the test's main actor. Throws when the call fails.
    func roundTrip(
        of busName: String, interface: String, member: String, arguments: [String] = []
    ) async throws -> Duration {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        try self.timedCall(of: busName, interface: interface, member: member, arguments: arguments)
                    })
            }
        }
    }

    /// `busName`'s Player property `name`, as ``roundTrip(of:interface:member:arguments:)``
    /// times it.
    func roundTrip(of busName: String, get name: String) async throws -> Duration {
        try await roundTrip(
            of: busName, interface: MPRISNames.properties, member: "Get", arguments: [MPRISNames.player, name])
    }

    private func timedCall(of busName: String, interface: String, member: String, arguments: [String]) throws
        -> Duration
    {
        let call = try makeCall(to: busName, interface: interface, member: member, arguments: arguments)
        defer { dbus_message_unref(call) }
        let (reply, took) = try send(call, naming: member)
        dbus_message_unref(reply)
        return took
    }

    /// One blocking `Properties.Get(Player, Position)`.
    private func readPosition(of busName: String) throws -> Int64 {
        let call = try makeCall(
            to: busName, interface: MPRISNames.properties, member: "Get", arguments: [MPRISNames.player, "Position"])
        defer { dbus_message_unref(call) }
        let (reply, _) = try send(call, naming: "Position")
        defer { dbus_message_unref(reply) }
        var body = DBusMessageIter()
        var variant = DBusMessageIter()
        guard dbus_message_iter_init(reply, &body) != 0,
            dbus_message_iter_get_arg_type(&body) == Int32(UInt8(ascii: "v"))
        else {
            throw HarnessError("Position answered with signature \(String(cString: dbus_message_get_signature(reply)))")
        }
        dbus_message_iter_recurse(&body, &variant)
        guard dbus_message_iter_get_arg_type(&variant) == Int32(UInt8(ascii: "x")) else {
            throw HarnessError("Position's variant holds type \(dbus_message_iter_get_arg_type(&variant)), not x")
        }
        var microseconds: Int64 = 0
        dbus_message_iter_get_basic(&variant, &microseconds)
        return microseconds
    }

    /// A call of `member` on `busName`'s MPRIS object with string `arguments`; the caller
    /// unrefs it.
    private func makeCall(to busName: String, interface: String, member: String, arguments: [String]) throws
        -> OpaquePointer
    {
        let path = interface == MPRISNames.properties || interface == MPRISNames.player ? MPRISNames.path.rawValue : "/"
        guard let call = dbus_message_new_method_call(busName, path, interface, member) else {
            throw HarnessError("out of memory for a \(member) call")
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(call, &iterator)
        for text in arguments {
            let appended = text.withCString { string in
                var pointer: UnsafePointer<CChar>? = string
                return dbus_message_iter_append_basic(&iterator, Int32(UInt8(ascii: "s")), &pointer)
            }
            guard appended != 0 else {
                dbus_message_unref(call)
                throw HarnessError("out of memory for a \(member) call")
            }
        }
        return call
    }

    /// Sends `call` and blocks for its reply (the caller unrefs it), with the round trip's time.
    private func send(_ call: OpaquePointer, naming member: String) throws -> (reply: OpaquePointer, took: Duration) {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let before = ContinuousClock.now
        guard let reply = dbus_connection_send_with_reply_and_block(raw, call, 10_000, &error) else {
            throw HarnessError("\(member) was not answered: \(Self.text(of: error))")
        }
        return (reply, ContinuousClock.now - before)
    }

    private static func text(of error: DBusError) -> String {
        let name = error.name.map { String(cString: $0) } ?? "no error name"
        return error.message.map { "\(name): \(String(cString: $0))" } ?? name
    }
}
