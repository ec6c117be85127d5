import CDBus
import ChildProcess
import Dispatch
import Foundation
import TestKit
import Testing

@testable import DBus

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

// MARK: - Parameterized cases

/// A named value, so that a parameterized test's output says which case failed.
struct ValueCase: CustomTestStringConvertible, Sendable {
    var name: String
    var value: Value
    init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }
    var testDescription: String { name }
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
