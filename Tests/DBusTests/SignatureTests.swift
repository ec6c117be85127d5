import CDBus
import DBus
import TestKit
import Testing

/// The Swift signature parser, checked on its own and against `dbus_signature_validate`.
@Suite("Signatures")
struct SignatureTests {
    static let valid = [
        "", "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "h", "v",
        "a{sv}", "(ia{s(ov)})", "aav", "as", "a(ii)", "a{ias}", "a{oa{sa{sv}}}", "(v)", "((i))",
        "ii", "sa{sv}as", "a{s(ia(ov))}", "a{yv}", "a{hv}", "aa{sv}", "v(((i)))a{t(sd)}",
        String(repeating: "i", count: 255),
        String(repeating: "a", count: 32) + "i",
        repeated(32, "(", "i", ")"),
        repeated(32, "a{s", "i", "}"),
    ]

    static let invalid = [
        "a", "{sv}", "a{vs}", "(", ")", "()", "a{sss}", "a{s}", "a{}", "z", "a{(i)s}", "a{ass}", "(i", "i)",
        "a{sv", "a{sv}}", "{", "}", "aa", "(a)", "a{sva}", "e", "r", "m", " ", "i i", "a{s v}", "\u{e4}",
        String(repeating: "i", count: 256),
        String(repeating: "a", count: 33) + "i",
        repeated(33, "(", "i", ")"),
        repeated(33, "a{s", "i", "}"),
    ]

    @Test("valid signatures parse and serialize back identically", arguments: valid)
    func parsesAndReserializes(_ text: String) throws {
        let signature = try Signature(text)
        #expect(signature.rawValue == text)
        #expect(signature.description == text)
        #expect(signature.types.map(\.signature).joined() == text)
        #expect(try Signature(types: signature.types) == signature)
    }

    @Test("invalid signatures throw InvalidArgs", arguments: invalid)
    func invalidThrows(_ text: String) {
        expectBusError(.invalidArgs, "'\(text)'") { try Signature(text) }
    }

    @Test(
        "DataType(parsing:) takes exactly one complete type",
        arguments: [
            ("a{sv}", DataType.dictionary(key: .string, value: .variant)),
            (
                "(ia{s(ov)})",
                .structure([.int32, .dictionary(key: .string, value: .structure([.objectPath, .variant]))])
            ),
            ("aav", .array(.array(.variant))),
            ("aa{sv}", .array(.dictionary(key: .string, value: .variant))),
            ("h", .unixFD),
            ("g", .signature),
        ])
    func singleType(_ text: String, _ expected: DataType) throws {
        let type = try DataType(parsing: text)
        #expect(type == expected)
        #expect(type.signature == text)
        #expect(type.description == text)
    }

    @Test(
        "DataType(parsing:) rejects zero, several or broken types", arguments: ["", "ii", "a{sv}s", "a", "()", "a{vs}"])
    func notASingleType(_ text: String) {
        expectBusError(.invalidArgs) { try DataType(parsing: text) }
    }

    @Test("only basic types are basic")
    func basicTypes() {
        let basic: [DataType] = [
            .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double,
            .string, .objectPath, .signature, .unixFD,
        ]
        #expect(basic.allSatisfy { $0.isBasic })
        let containers: [DataType] = [
            .variant, .array(.byte), .dictionary(key: .string, value: .variant), .structure([.int32]),
        ]
        #expect(!containers.contains { $0.isBasic })
    }

    // MARK: Cross-check with libdbus

    /// Signatures around the nesting limits, where libdbus counts structs and dict entries
    /// separately (32 each), and arrays only as a run of consecutive `a` codes (32), which
    /// starts again at every other type code.
    static let nestingEdges = [
        repeated(31, "(", "a{s(i)}", ")"),  // 32 structs, one dict entry
        repeated(32, "(", "a{si}", ")"),
        repeated(32, "(", "a{s(i)}", ")"),  // 33 structs
        repeated(16, "a{s(", "i", ")}"),
        repeated(17, "a{s(", "i", ")}"),  // 17 dict entries, 17 structs
        repeated(32, "a{s(", "i", ")}"),
        repeated(33, "a{s(", "i", ")}"),
        repeated(32, "a(", "i", ")"),
        repeated(33, "a(", "i", ")"),
        repeated(32, "(", "ai", ")"),
        repeated(32, "(", "a(i)", ")"),
        repeated(16, "aa{s", "i", "}"),
        repeated(17, "aa{s", "i", "}"),
        String(repeating: "a", count: 31) + "a{sv}",
        String(repeating: "a", count: 32) + "a{sv}",
        String(repeating: "a", count: 30) + "a{sai}",
        String(repeating: "a", count: 31) + "a{sai}",
    ]

    @Test("the Swift parser agrees with dbus_signature_validate", arguments: valid + invalid + nestingEdges)
    func agreesWithLibdbus(_ text: String) {
        let swiftAccepts = (try? Signature(text)) != nil
        #expect(swiftAccepts == libdbusAcceptsSignature(text), "'\(text)' (\(text.utf8.count) bytes)")
    }

    @Test(
        "Signature(types:) throws for types that make no valid signature",
        arguments: [
            [DataType.structure([])],
            [.array(.structure([]))],
            [.dictionary(key: .variant, value: .string)],
            [.int32, .dictionary(key: .structure([.int32]), value: .string)],
            [nestedArrayType(33)],
            Array(repeating: DataType.int32, count: 256),
        ])
    func signatureFromInvalidTypes(_ types: [DataType]) {
        expectBusError(.invalidArgs) { try Signature(types: types) }
    }

    @Test("the Swift parser never accepts a signature libdbus rejects (random strings)")
    func randomStringsAgreeWithLibdbus() {
        // A fixed-seed generator so failures reproduce.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let alphabet = Array("ybnqiuxtdsoghv(){}aaaa{}()z")
        var disagreements: [String] = []
        var acceptedCount = 0
        for _ in 0..<20_000 {
            let length = Int(next() % 12)
            let text = String((0..<length).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
            let swift = (try? Signature(text)) != nil
            if swift { acceptedCount += 1 }
            if swift != libdbusAcceptsSignature(text) { disagreements.append(text) }
        }
        #expect(disagreements.isEmpty, "disagree with libdbus: \(disagreements.prefix(20))")
        #expect(acceptedCount > 1000, "the generator should produce many valid signatures")
    }
}
