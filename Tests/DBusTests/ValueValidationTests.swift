import CDBus
import DBus
import Foundation
import TestKit
import Testing

/// `Value.validate()` is what keeps libdbus from aborting the process on a value that
/// contradicts its own signature, so every bad value must be refused with InvalidArgs,
/// both by `validate()` and by the message constructors.
@Suite("Value validation")
struct ValueValidationTests {
    typealias Case = ValueCase

    static let mistyped: [Case] = [
        Case("as holding an int32", .array(.string, [.string("ok"), .int32(1)])),
        Case("ai holding an int64", .array(.int32, [.int64(1)])),
        Case("aas holding an ai", .array(.array(.string), [.array(.int32, [])])),
        Case("av holding a bare string", .array(.variant, [.string("not wrapped")])),
        Case("a(is) holding a (si)", .array(.structure([.int32, .string]), [.structure([.string("a"), .int32(1)])])),
        Case("a{vs} with a variant key type", .dictionary(key: .variant, value: .string, [])),
        Case("a{(i)s} with a struct key type", .dictionary(key: .structure([.int32]), value: .string, [])),
        Case("a{ass} with an array key type", .dictionary(key: .array(.string), value: .string, [])),
        Case(
            "a{sv} holding an int key",
            .dictionary(key: .string, value: .variant, [.init(.int32(1), .variant(.int32(1)))])),
        Case(
            "a{sv} holding an unwrapped value",
            .dictionary(key: .string, value: .variant, [.init(.string("k"), .int32(1))])),
        Case("empty struct", .structure([])),
        Case("struct holding an empty struct", .structure([.int32(1), .structure([])])),
        Case("variant holding an empty struct", .variant(.structure([]))),
        Case("mistyped array deep inside", .variant(.structure([.array(.string, [.boolean(true)])]))),
        Case(
            "mistyped dict value inside an array",
            .array(
                .dictionary(key: .string, value: .int32),
                [
                    .dictionary(key: .string, value: .int32, [.init(.string("k"), .uint32(1))])
                ])),
        Case("variants nested 65 deep", nestedVariants(65, around: .int32(1))),
    ]

    @Test("validate() rejects mistyped containers", arguments: mistyped)
    func validateRejects(_ test: Case) {
        expectBusError(.invalidArgs) { try test.value.validate() }
    }

    @Test("message constructors throw on mistyped containers instead of crashing", arguments: mistyped)
    func constructorsThrow(_ test: Case) {
        expectBusError(.invalidArgs) { try signalMessage([.int32(0), test.value]) }
        expectBusError(.invalidArgs) {
            try Message.methodCall(
                destination: nil, path: testPath, interface: nil, member: "M", arguments: [test.value])
        }
    }

    @Test("validate() accepts well-typed values", arguments: RoundTripTests.containers.map { Case($0.name, $0.value) })
    func validateAccepts(_ test: Case) throws {
        try test.value.validate()
    }

    @Test("invalid header fields throw instead of reaching libdbus")
    func invalidHeaders() {
        expectBusError(.invalidArgs) { try Message.signal(path: testPath, interface: "noDots", member: "M") }
        expectBusError(.invalidArgs) { try Message.signal(path: testPath, interface: testInterface, member: "1bad") }
        expectBusError(.invalidArgs) { try Message.signal(path: testPath, interface: testInterface, member: "") }
        expectBusError(.invalidArgs) {
            try Message.methodCall(destination: "not a bus name", path: testPath, interface: nil, member: "M")
        }
        expectBusError(.invalidArgs) {
            try Message.methodCall(destination: nil, path: testPath, interface: "org.example.", member: "M")
        }
        expectBusError(.invalidArgs) { try ObjectPath(validating: "/bad/") }
    }

    // MARK: Values whose *types* are invalid

    /// Values whose type signature is not a valid D-Bus signature. libdbus aborts the
    /// process on the first three (it checks the contained signature of
    /// `dbus_message_iter_open_container` and aborts on failure) and silently builds an
    /// invalid message for the last ones, so `validate()` must refuse them all.
    static let invalidTypes: [Case] = [
        Case("empty array of empty structs a()", .array(.structure([]), [])),
        Case("empty array of a{vs}", .array(.dictionary(key: .variant, value: .string), [])),
        Case(
            "variant holding an empty array of a{(i)s}",
            .variant(.array(.dictionary(key: .structure([.int32]), value: .string), []))),
        Case("empty array, 34 arrays deep", .array(nestedArrayType(33), [])),
        Case("structs nested 33 deep", nestedStructs(33, around: .int32(1))),
    ]

    /// The innermost type of `value` whose signature libdbus must judge (a variant's own
    /// type is always "v").
    static func innermostType(_ value: Value) -> DataType {
        if case .variant(let inner) = value { innermostType(inner) } else { value.type }
    }

    @Test("validate() rejects values whose type signature is invalid", arguments: invalidTypes)
    func invalidTypeSignatures(_ test: Case) {
        let signature = Self.innermostType(test.value).signature
        #expect(!libdbusAcceptsSignature(signature), "precondition: libdbus rejects '\(signature)'")
        expectBusError(.invalidArgs) { try test.value.validate() }
        expectBusError(.invalidArgs) { try signalMessage([test.value]) }
    }

    @Test("a message that builds successfully has a signature libdbus accepts")
    func builtMessagesHaveValidSignatures() {
        // 33 nested structs: libdbus appends them without complaint, but the message is
        // invalid, and a bus daemon disconnects a client that sends it.
        let value = nestedStructs(33, around: .int32(1))
        do throws(BusError) {
            let message = try signalMessage([value])
            Issue.record("built a message with 33 nested structs: \(message.signature)")
        } catch {
            #expect(error.name == .invalidArgs)
        }
        // 32 levels are fine, and the message survives libdbus's checks on receipt.
        do throws(BusError) {
            let message = try signalMessage([nestedStructs(32, around: .int32(1))])
            #expect(libdbusAcceptsSignature(message.signature), "built an invalid message: \(message.signature)")
            #expect(wireCopy(of: message).rejection == nil)
        } catch {
            Issue.record("32 nested structs were refused: \(error)")
        }
    }

    /// `n` dictionaries `a{sv}`, each holding the next in a variant, around `value`.
    static func nestedDictionaries(_ n: Int, around value: Value) -> Value {
        (0..<n).reduce(value) { inner, _ in .stringVariantDictionary(["k": inner]) }
    }

    /// Values at the nesting limit libdbus applies to a message body on receipt (64), and just
    /// past it. libdbus counts a dict entry as a level of its own (so each `a{sv}` holding a
    /// variant is 3 levels), and does not descend into arrays of fixed-size values.
    static let nestingLimit: [(Case, accepted: Bool)] = [
        (Case("21 nested a{sv}", nestedDictionaries(21, around: .int32(1))), true),
        (Case("22 nested a{sv}", nestedDictionaries(22, around: .int32(1))), false),
        (Case("63 variants around a non-empty as", nestedVariants(63, around: .strings(["x"]))), true),
        (Case("64 variants around a non-empty as", nestedVariants(64, around: .strings(["x"]))), false),
        (Case("64 variants around a non-empty ai", nestedVariants(64, around: .array(.int32, [.int32(1)]))), true),
        (Case("64 variants around an empty as", nestedVariants(64, around: .strings([]))), true),
        // The dictionary adds a variant of its own around each value.
        (
            Case(
                "32 structs around a{sv} holding 30 variants",
                nestedStructs(32, around: .stringVariantDictionary(["k": nestedVariants(29, around: .int32(1))]))), true
        ),
        (
            Case(
                "32 structs around a{sv} holding 31 variants",
                nestedStructs(32, around: .stringVariantDictionary(["k": nestedVariants(30, around: .int32(1))]))),
            false
        ),
    ]

    @Test("validate() accepts exactly the nesting libdbus accepts on receipt", arguments: nestingLimit)
    func nestingLimitAgreesWithLibdbus(_ test: Case, accepted: Bool) {
        let libdbusAccepts = wireCopy(of: unvalidatedSignalMessage([test.value])).rejection == nil
        #expect(libdbusAccepts == accepted, "precondition: what libdbus says on receipt")
        #expect(((try? test.value.validate()) != nil) == accepted)
        #expect(((try? signalMessage([test.value])) != nil) == accepted)
    }

    @Test("a body signature longer than 255 bytes throws instead of hanging in libdbus")
    func longBodySignature() throws {
        let longest = try signalMessage(Array(repeating: .int32(1), count: 255))
        #expect(longest.signature.utf8.count == 255)
        #expect(wireCopy(of: longest).rejection == nil)
        expectBusError(.invalidArgs) { try signalMessage(Array(repeating: .int32(1), count: 256)) }
        expectBusError(.invalidArgs) { try signalMessage(Array(repeating: .stringVariantDictionary([:]), count: 52)) }
        // Appending to a message counts what it already holds.
        let message = try signalMessage(Array(repeating: .byte(0), count: 251))
        expectBusError(.invalidArgs) { try message.append([.stringVariantDictionary([:])]) }
        try message.append([.int32(1), .int32(2)])
        #expect(message.signature.utf8.count == 253)
    }

    @Test("Signature(types:) cannot create an invalid signature")
    func signatureFromTypes() {
        expectBusError(.invalidArgs) { try Signature(types: [.structure([])]) }
        let made = try? Signature(types: [.int32, .dictionary(key: .string, value: .variant)])
        #expect(made?.rawValue == "ia{sv}")
    }

    // MARK: Crashes, checked in a child process

    @Test("Message.signal with an array of empty structs throws instead of aborting")
    func arrayOfEmptyStructsDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            do throws(BusError) {
                _ = try signalMessage([.array(.structure([]), [])])
                exit(2)  // built a message from an invalid type
            } catch {
                exit(error.name == .invalidArgs ? 0 : 3)
            }
        }
    }

    @Test("Message.signal with a signature value made by Signature(types:) throws instead of aborting")
    func invalidSignatureValueDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            do throws(BusError) {
                _ = try signalMessage([.signature(Signature(types: [.structure([])]))])
                exit(2)
            } catch {
                exit(error.name == .invalidArgs ? 0 : 3)
            }
        }
    }

    @Test("a well-typed value does not abort in a child process either (control for the exit tests)")
    func controlExitTest() async {
        await #expect(processExitsWith: .success) {
            do throws(BusError) {
                _ = try signalMessage([.array(.structure([.int32]), [])])
            } catch {
                exit(1)
            }
        }
    }
}
