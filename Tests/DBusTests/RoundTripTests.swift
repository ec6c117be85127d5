import CDBus
import TestKit
import Testing

@testable import DBus

/// Every D-Bus type written into a real libdbus message and read back.
@Suite("Value round trips through libdbus")
struct RoundTripTests {
    typealias Case = ValueCase

    static let sv = DataType.dictionary(key: .string, value: .variant)

    static let basics: [Case] = [
        Case("byte 0", .byte(0)), Case("byte 255", .byte(255)),
        Case("boolean true", .boolean(true)), Case("boolean false", .boolean(false)),
        Case("int16 min", .int16(.min)), Case("int16 max", .int16(.max)),
        Case("uint16 max", .uint16(.max)),
        Case("int32 min", .int32(.min)), Case("int32 -1", .int32(-1)), Case("int32 max", .int32(.max)),
        Case("uint32 max", .uint32(.max)),
        Case("int64 min", .int64(.min)), Case("int64 max", .int64(.max)), Case("int64 -2", .int64(-2)),
        Case("uint64 max", .uint64(.max)), Case("uint64 0", .uint64(0)),
        Case("double pi", .double(.pi)), Case("double -1e300", .double(-1e300)),
        Case("double +inf", .double(.infinity)), Case("double -inf", .double(-.infinity)),
        Case("double least nonzero", .double(.leastNonzeroMagnitude)),
        Case("string empty", .string("")), Case("string ascii", .string("hello")),
        Case("string unicode", .string("Grüße, 日本語, Ελληνικά")),
        Case("string emoji", .string("🎵👩‍👩‍👧‍👦🇫🇷")),
        Case(
            "string noncharacters",
            .string(String(String.UnicodeScalarView([Unicode.Scalar(0xFFFF)!, Unicode.Scalar(0xFDD0)!])))),
        Case("object path root", .objectPath(.root)),
        Case("object path", .objectPath(ObjectPath("/org/mpris/MediaPlayer2")!)),
        Case("signature empty", .signature(try! Signature(""))),
        Case("signature a{sv}", .signature(try! Signature("a{sv}"))),
        Case("signature nested", .signature(try! Signature("(ia{s(ov)})aavh"))),
    ]

    static let containers: [Case] = [
        Case("empty ay", .array(.byte, [])),
        Case("empty as", .array(.string, [])),
        Case("empty ad", .array(.double, [])),
        Case("empty a(is)", .array(.structure([.int32, .string]), [])),
        Case("empty av", .array(.variant, [])),
        Case("empty aas", .array(.array(.string), [])),
        Case("empty aa{sv}", .array(sv, [])),
        Case("ay", .array(.byte, [.byte(0), .byte(1), .byte(255)])),
        Case("ab", .array(.boolean, [.boolean(true), .boolean(false)])),
        Case("ax", .array(.int64, [.int64(.min), .int64(0), .int64(.max)])),
        Case("as", .strings(["a", "", "ü"])),
        Case("ao", .array(.objectPath, [.objectPath(.root), .objectPath(ObjectPath("/a/b")!)])),
        Case(
            "aai",
            .array(
                .array(.int32),
                [
                    .array(.int32, [.int32(1), .int32(2)]), .array(.int32, []), .array(.int32, [.int32(3)]),
                ])),
        Case("aaas", .array(.array(.array(.string)), [.array(.array(.string), [.strings(["x"]), .strings([])])])),
        Case("av mixed", .array(.variant, [.variant(.int32(1)), .variant(.string("s")), .variant(.boolean(false))])),
        Case("empty a{sv}", .dictionary(key: .string, value: .variant, [])),
        Case("empty a{ias}", .dictionary(key: .int32, value: .array(.string), [])),
        Case("empty a{oa{sv}}", .dictionary(key: .objectPath, value: sv, [])),
        Case(
            "a{sv}",
            .stringVariantDictionary([
                "title": .string("Song"), "length": .int64(123_456), "rating": .double(0.5),
                "artists": .strings(["A", "B"]),
            ])),
        Case(
            "a{ias}",
            .dictionary(
                key: .int32, value: .array(.string),
                [
                    .init(.int32(-1), .strings([])), .init(.int32(7), .strings(["x", "y"])),
                ])),
        Case("a{yb}", .dictionary(key: .byte, value: .boolean, [.init(.byte(1), .boolean(true))])),
        Case(
            "a{ta{sv}}",
            .dictionary(
                key: .uint64, value: sv,
                [
                    .init(.uint64(.max), .stringVariantDictionary(["k": .uint32(1)]))
                ])),
        Case("aa{sv}", .array(sv, [.stringVariantDictionary(["a": .byte(1)]), .stringVariantDictionary([:])])),
        Case("(i)", .structure([.int32(1)])),
        Case(
            "(ybnqiuxtdsog)",
            .structure([
                .byte(1), .boolean(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7),
                .double(8.5), .string("nine"), .objectPath(ObjectPath("/ten")!), .signature(try! Signature("a{sv}")),
            ])),
        Case(
            "nested structs",
            .structure([.int32(1), .structure([.string("a"), .structure([.boolean(true)])]), .double(2)])),
        Case(
            "a(sa(ii))",
            .array(
                .structure([.string, .array(.structure([.int32, .int32]))]),
                [
                    .structure([
                        .string("p"), .array(.structure([.int32, .int32]), [.structure([.int32(1), .int32(2)])]),
                    ])
                ])),
        Case("variant int", .variant(.int32(42))),
        Case("variant of variant of variant", .variant(.variant(.variant(.string("deep"))))),
        Case("variants 10 deep", nestedVariants(10, around: .uint16(9))),
        Case("variant struct", .variant(.structure([.string("s"), .variant(.int64(-1))]))),
        Case("variant dict", .variant(.stringVariantDictionary(["x": .variant(.array(.int32, []))]))),
        Case("variant empty array", .variant(.array(.array(.byte), []))),
    ]

    @Test("basic values", arguments: basics)
    func basic(_ test: Case) throws {
        #expect(try roundTrip([test.value]) == [test.value])
    }

    @Test("containers", arguments: containers)
    func container(_ test: Case) throws {
        #expect(try roundTrip([test.value]) == [test.value])
    }

    @Test("values survive serialization and libdbus's full validation on receipt", arguments: basics + containers)
    func wire(_ test: Case) throws {
        let (copy, rejection) = wireCopy(of: try signalMessage([test.value]))
        #expect(rejection == nil)
        #expect(copy?.arguments == [test.value])
        #expect(try copy?.readArguments() == [test.value])
    }

    @Test("the message signature is the concatenation of the argument types")
    func messageSignature() throws {
        let arguments = (Self.basics + Self.containers).map(\.value).prefix(40)
        let message = try signalMessage(Array(arguments))
        #expect(message.signature == arguments.map(\.type.signature).joined())
        #expect(message.arguments == Array(arguments))
        #expect(message.kind == .signal)
        #expect(message.path == testPath.rawValue)
        #expect(message.interface == testInterface)
        #expect(message.member == "Probe")
    }

    @Test("no arguments gives an empty signature and no values")
    func noArguments() throws {
        let message = try signalMessage([])
        #expect(message.signature == "")
        #expect(message.arguments.isEmpty)
    }

    @Test("method calls carry their arguments and header fields")
    func methodCall() throws {
        let arguments: [Value] = [.string("x"), .stringVariantDictionary(["a": .int32(1)])]
        let message = try Message.methodCall(
            destination: "org.example.Service", path: testPath, interface: testInterface, member: "Do",
            arguments: arguments)
        #expect(message.kind == .methodCall)
        #expect(message.destination == "org.example.Service")
        #expect(message.member == "Do")
        #expect(message.signature == "sa{sv}")
        #expect(message.arguments == arguments)
    }

    @Test("negative zero keeps its sign")
    func negativeZero() throws {
        let values = try roundTrip([.double(-0.0)])
        let d = try #require(values.first?.double)
        #expect(d == 0)
        #expect(d.sign == .minus)
    }

    @Test("NaN comes back as NaN")
    func notANumber() throws {
        let values = try roundTrip([.double(.nan), .double(-.nan)])
        #expect(values.count == 2)
        #expect(values.allSatisfy { $0.double?.isNaN == true })
    }

    @Test("a 1 MiB string")
    func largeString() throws {
        let big = String(repeating: "0123456789abcdéf", count: 1 << 16)  // 17 bytes × 65536
        #expect(big.utf8.count > 1 << 20)
        let values = try roundTrip([.string(big)])
        #expect(values.first?.string?.utf8.count == big.utf8.count)
        #expect(values == [.string(big)])
    }

    @Test("an embedded NUL comes back as U+FFFD, nothing truncated")
    func embeddedNUL() throws {
        let values = try roundTrip([
            .string("a\0b"), .string("\0"), .strings(["x\0", "\0\0y"]),
            .stringVariantDictionary(["k\0": .string("v\0w")]),
        ])
        #expect(
            values == [
                .string("a\u{FFFD}b"), .string("\u{FFFD}"), .strings(["x\u{FFFD}", "\u{FFFD}\u{FFFD}y"]),
                .stringVariantDictionary(["k\u{FFFD}": .string("v\u{FFFD}w")]),
            ])
    }

    @Test("several arguments keep their order")
    func manyArguments() throws {
        let arguments: [Value] = (0..<200).map { $0.isMultiple(of: 2) ? .int32(Int32($0)) : .string("\($0)") }
        #expect(try roundTrip(arguments) == arguments)
    }

    @Test("variants nested 64 deep are accepted by libdbus on receipt")
    func deepestVariant() throws {
        let value = nestedVariants(64, around: .int32(1))
        let (copy, rejection) = wireCopy(of: try signalMessage([value]))
        #expect(rejection == nil)
        #expect(copy?.arguments == [value])
    }

    /// Types near libdbus's nesting limits, which it accepts in signatures and on receipt
    /// (the Swift parser once rejected them, and reading stopped at the first one).
    static let deepButValid: [Case] = {
        let dictOfInts = DataType.dictionary(key: .string, value: .array(.int32))
        let arraysOfDicts = (0..<16).reduce(DataType.int32) { inner, _ in
            .array(.dictionary(key: .string, value: inner))
        }
        let dictsOfStructs = (0..<16).reduce(DataType.int32) { inner, _ in
            .dictionary(key: .string, value: .structure([inner]))
        }
        return [
            Case("aaa…a{sai}, 32 arrays then a dict of arrays", .array(nestedArrayType(30, of: dictOfInts), [])),
            Case("aa{s repeated 17 times", .array(.dictionary(key: .string, value: arraysOfDicts), [])),
            Case("a{s( repeated 17 times", .dictionary(key: .string, value: .structure([dictsOfStructs]), [])),
        ]
    }()

    @Test("every argument of a message libdbus accepts is read back", arguments: deepButValid)
    func deepButValidTypes(_ test: Case) throws {
        let message = try signalMessage([test.value, .int32(7)])
        #expect(libdbusAcceptsSignature(message.signature), "precondition: '\(message.signature)' is valid for libdbus")
        #expect(wireCopy(of: message).rejection == nil, "precondition: libdbus accepts the message on receipt")
        #expect(try message.readArguments() == [test.value, .int32(7)])
        #expect(message.arguments == [test.value, .int32(7)])
    }

    @Test("the convenience accessors read what the constructors build")
    func accessors() {
        let dict = Value.stringVariantDictionary(["b": .int32(2), "a": .string("x")])
        #expect(dict.stringVariantDictionary == ["a": .string("x"), "b": .int32(2)])
        #expect(dict.type == .dictionary(key: .string, value: .variant))
        if case .dictionary(_, _, let entries) = dict {
            #expect(entries.map(\.key) == [.string("a"), .string("b")], "keys sorted")
        }
        #expect(Value.strings(["p", "q"]).stringArray == ["p", "q"])
        #expect(nestedVariants(3, around: .int64(5)).unwrapped == .int64(5))
        #expect(Value.int32(1).string == nil)
        #expect(Value.structure([.int32(1), .array(.string, [])]).type == .structure([.int32, .array(.string)]))
    }
}
