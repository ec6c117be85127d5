import ChildProcess
import CDBus
@testable import DBus
import Dispatch
import Foundation
import Testing

// MARK: - Building messages

/// The path, interface and member every round-trip message uses.
let testPath = ObjectPath("/org/example/Test")!
let testInterface = "org.example.Test"

/// A signal message carrying `arguments`, built by libdbus.
func signalMessage(_ arguments: [Value]) throws(BusError) -> Message {
    try Message.signal(path: testPath, interface: testInterface, member: "Probe", arguments: arguments)
}

/// Sends `arguments` through a libdbus message and reads them back.
func roundTrip(_ arguments: [Value]) throws(BusError) -> [Value] {
    try signalMessage(arguments).arguments
}

/// A signal message carrying `arguments` appended *without* `Value.validate()`, to ask
/// libdbus itself about a value. Only for values whose types are valid: libdbus aborts the
/// process on an invalid contained signature.
func unvalidatedSignalMessage(_ arguments: [Value]) -> Message {
    let message = Message(owning: dbus_message_new_signal(testPath.rawValue, testInterface, "Probe")!)
    var iter = DBusMessageIter()
    dbus_message_iter_init_append(message.raw, &iter)
    for argument in arguments { _ = Marshal.append(argument, to: &iter) }
    return message
}

/// Serializes `message` to the wire format and parses it back with
/// `dbus_message_demarshal`, which validates the whole message exactly like a receiving
/// peer (or the bus daemon) would. Returns nil, and the reason, when libdbus rejects it.
func wireCopy(of message: Message) -> (message: Message?, rejection: String?) {
    dbus_message_set_serial(message.raw, 1)
    var data: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(message.raw, &data, &length) != 0, let data else {
        return (nil, "dbus_message_marshal failed")
    }
    defer { dbus_free(data) }
    let error = ErrorBox()
    guard let copy = dbus_message_demarshal(data, length, &error.raw) else {
        return (nil, error.take()?.message ?? "rejected")
    }
    return (Message(owning: copy), nil)
}

/// What libdbus thinks of a signature (`dbus_signature_validate`).
func libdbusAcceptsSignature(_ signature: String) -> Bool {
    dbus_signature_validate(signature, nil) != 0
}

// MARK: - Nesting builders

/// `n` arrays around `element`: `aa…ai`.
func nestedArrayType(_ n: Int, of element: DataType = .int32) -> DataType {
    (0..<n).reduce(element) { inner, _ in .array(inner) }
}

/// `n` single-field structs around `value`.
func nestedStructs(_ n: Int, around value: Value) -> Value {
    (0..<n).reduce(value) { inner, _ in .structure([inner]) }
}

/// `n` variants around `value`.
func nestedVariants(_ n: Int, around value: Value) -> Value {
    (0..<n).reduce(value) { inner, _ in .variant(inner) }
}

/// `n` copies of `open`, then `middle`, then `n` copies of `close`.
func repeated(_ n: Int, _ open: String, _ middle: String, _ close: String) -> String {
    String(repeating: open, count: n) + middle + String(repeating: close, count: n)
}

// MARK: - Expectations

/// Expects `body` to throw a `BusError` named `name`.
func expectBusError<R>(
    _ name: BusError.Name, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) {
    do {
        let result = try body()
        Issue.record("expected \(name), got \(result)", sourceLocation: sourceLocation)
    } catch let error as BusError {
        #expect(error.name == name, comment, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a BusError \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Expects `result` to be a failure with a `BusError` named `name`.
func expectFailure(
    _ result: Result<[Value], BusError>, _ name: BusError.Name,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    switch result {
    case .success(let values):
        Issue.record("expected \(name), got success \(values)", sourceLocation: sourceLocation)
    case .failure(let error):
        #expect(error.name == name, "\(error)", sourceLocation: sourceLocation)
    }
}

/// The values of a successful result; records an issue and returns nil on failure.
func success(_ result: Result<[Value], BusError>, sourceLocation: SourceLocation = #_sourceLocation) -> [Value]? {
    switch result {
    case .success(let values): return values
    case .failure(let error):
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

// MARK: - Waiting without sleeping

/// Collects events and lets a test wait for one with a deadline. Waiters are resumed by
/// `record(_:)` as soon as their condition holds, or with `false` when the deadline passes.
@MainActor
final class EventRecorder<Event> {
    private(set) var events: [Event] = []
    private var waiters: [UUID: (check: ([Event]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]

    func record(_ event: Event) {
        events.append(event)
        for (id, waiter) in waiters where waiter.check(events) {
            waiters[id] = nil
            waiter.continuation.resume(returning: true)
        }
    }

    /// Returns true once `check` holds for the recorded events, false after `timeout`.
    func wait(timeout: Duration = .seconds(20), until check: @escaping ([Event]) -> Bool) async -> Bool {
        if check(events) { return true }
        return await withCheckedContinuation { continuation in
            let id = UUID()
            waiters[id] = (check, continuation)
            let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
                MainActor.assumeIsolated {
                    guard let waiter = self?.waiters.removeValue(forKey: id) else { return }
                    waiter.continuation.resume(returning: false)
                }
            }
        }
    }

    /// Waits until at least `count` events were recorded.
    func wait(forCount count: Int, timeout: Duration = .seconds(20)) async -> Bool {
        await wait(timeout: timeout) { $0.count >= count }
    }
}

// MARK: - A private bus

struct PrivateBusError: Error, CustomStringConvertible {
    var description: String
}

/// A throwaway `dbus-daemon --session` for one test, killed by `stop()`.
final class PrivateBus {
    let process: ChildProcess
    let address: String
    /// Holds the bus's socket; removed by `stop()`.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quaver-dbus-test-\(UUID().uuidString)")

    /// `dbus-daemon` from `PATH`, or nil when it is not installed.
    static var daemon: URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("dbus-daemon") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    init(daemon: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The socket lives in `directory`: the session default (`unix:tmpdir=/tmp`) leaves a
        // socket file in /tmp for every bus that is killed.
        process = try ChildProcess(
            daemon.path, ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:dir=\(directory.path)"], output: .pipe)
        // The address line comes first. If the daemon fails it exits and the read ends at
        // EOF, so this cannot hang.
        address = process.readFirstLine()
        guard address.hasPrefix("unix:") else {
            stop()
            throw PrivateBusError(description: "dbus-daemon printed no address (got '\(address)')")
        }
    }

    /// Kills the daemon and removes its socket.
    func stop() {
        process.killAndWait()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
