import CDBus
import DBus
import Foundation
import TestKit
import Testing

/// Object paths and dotted names, checked against the D-Bus specification and
/// cross-checked against libdbus's own validators (which abort the process when a
/// name they reject is passed to a message constructor).
@Suite("Name validation")
struct NameValidationTests {
    static let long = String(repeating: "a", count: 250)

    // MARK: Object paths

    static let validPaths = ["/", "/a", "/a/b_c/D9", "/org/mpris/MediaPlayer2", "/_", "/0/1", "/" + long]
    static let invalidPaths = ["", "a", "/a/", "//", "/a//b", "/a-b", "/a.b", "/ä", " /a", "/a b", "a/b", "/a/b/"]

    @Test("valid object paths", arguments: validPaths)
    func validPath(_ path: String) throws {
        #expect(ObjectPath(path)?.rawValue == path)
        #expect(try ObjectPath(validating: path).description == path)
        #expect(dbus_validate_path(path, nil) != 0, "libdbus agrees")
    }

    @Test("invalid object paths", arguments: invalidPaths)
    func invalidPath(_ path: String) {
        #expect(ObjectPath(path) == nil)
        expectBusError(.invalidArgs) { try ObjectPath(validating: path) }
        #expect(dbus_validate_path(path, nil) == 0, "libdbus agrees")
    }

    @Test("a path with an embedded NUL is invalid")
    func pathWithNUL() {
        #expect(ObjectPath("/a\0b") == nil)
    }

    @Test("appending and ancestry")
    func pathOperations() {
        let root = ObjectPath.root
        let a = root.appending("a")
        #expect(a?.rawValue == "/a")
        #expect(a?.appending("b_1")?.rawValue == "/a/b_1")
        #expect(root.appending("x-y") == nil)
        #expect(a?.appending("") == nil)
        let ab = ObjectPath("/a/b")!
        #expect(ab.isDescendant(of: root))
        #expect(ab.isDescendant(of: ObjectPath("/a")!))
        #expect(!ab.isDescendant(of: ab))
        #expect(!ObjectPath("/ab")!.isDescendant(of: ObjectPath("/a")!))
        #expect(!root.isDescendant(of: root))
        #expect(ObjectPath("/a")! < ObjectPath("/b")!)
    }

    @Test("appending only accepts a single, non-empty element")
    func appendingRejectsSeveralElements() {
        // The documentation says the element must consist of [A-Za-z0-9_] only.
        #expect(ObjectPath.root.appending("a/b") == nil)
        #expect(ObjectPath("/x")!.appending("a/b/c") == nil)
        #expect(ObjectPath.root.appending("") == nil)
        #expect(ObjectPath.root.appending("/") == nil)
        #expect(ObjectPath("/x")!.appending("a.b") == nil)
    }

    // MARK: Interface names

    static let validInterfaces = [
        "org.example.Interface", "a.b", "_a._b", "org.mpris.MediaPlayer2.Player", "A1.b2.C_3",
        "org." + String(repeating: "x", count: 251),  // exactly 255 bytes
    ]
    static let invalidInterfaces = [
        "", "org", "org.", ".org", "org..example", "org.1example", "1org.example", "org.ex-ample",
        "org.ex ample", "org.exämple", ":1.42", "org/example",
        "org." + String(repeating: "x", count: 252),  // 256 bytes
    ]

    @Test("valid interface names", arguments: validInterfaces)
    func validInterface(_ name: String) {
        #expect(NameValidation.isValidInterfaceName(name))
        #expect(NameValidation.isValidErrorName(name))
        #expect(dbus_validate_interface(name, nil) != 0, "libdbus agrees")
        #expect(dbus_validate_error_name(name, nil) != 0, "libdbus agrees")
    }

    @Test("invalid interface names", arguments: invalidInterfaces)
    func invalidInterface(_ name: String) {
        #expect(!NameValidation.isValidInterfaceName(name))
        #expect(!NameValidation.isValidErrorName(name))
        #expect(dbus_validate_interface(name, nil) == 0, "libdbus agrees")
    }

    // MARK: Member names

    static let validMembers = ["Play", "_private", "x1", "GetAll", "a", String(repeating: "M", count: 255)]
    static let invalidMembers = ["", "1x", "a.b", "a-b", "ä", "a b", "Get:All", String(repeating: "M", count: 256)]

    @Test("valid member names", arguments: validMembers)
    func validMember(_ name: String) {
        #expect(NameValidation.isValidMemberName(name))
        #expect(dbus_validate_member(name, nil) != 0, "libdbus agrees")
    }

    @Test("invalid member names", arguments: invalidMembers)
    func invalidMember(_ name: String) {
        #expect(!NameValidation.isValidMemberName(name))
        #expect(dbus_validate_member(name, nil) == 0, "libdbus agrees")
    }

    // MARK: Bus names

    static let validBusNames = [
        ":1.42", ":1.0", ":1.42.7", ":abc.def", ":1.a-b",
        "org.mpris.MediaPlayer2.quaver", "org.example-app.Service", "a.b", "_a.b_", "org.example.a-1",
        "com.example." + String(repeating: "x", count: 243),  // exactly 255 bytes
    ]
    static let invalidBusNames = [
        "", ":", "org", "quaver", "org.", ".org", "org..x", "org.1example", "1org.example", "org.example.9",
        ":1.", ":.1", ":1..2", "org.ex ample", "org.exämple", "org/example", "org.example:x",
        "com.example." + String(repeating: "x", count: 244),  // 256 bytes
    ]

    @Test("valid bus names", arguments: validBusNames)
    func validBusName(_ name: String) {
        #expect(NameValidation.isValidBusName(name))
        #expect(dbus_validate_bus_name(name, nil) != 0, "libdbus agrees")
    }

    @Test("invalid bus names", arguments: invalidBusNames)
    func invalidBusName(_ name: String) {
        #expect(!NameValidation.isValidBusName(name))
    }

    @Test("hyphens are allowed in bus names but not in interface names")
    func hyphens() {
        #expect(NameValidation.isValidBusName("org.example-app.Player"))
        #expect(!NameValidation.isValidInterfaceName("org.example-app.Player"))
    }

    @Test("leading digits are allowed only in unique-name elements")
    func leadingDigits() {
        #expect(NameValidation.isValidBusName(":1.42"))
        #expect(!NameValidation.isValidBusName("org.1example"))
        #expect(!NameValidation.isValidBusName("1.42"))
    }

    @Test(
        "every bus name the Swift validator accepts is accepted by libdbus",
        arguments: validBusNames + invalidBusNames)
    func busNamesAreSoundForLibdbus(_ name: String) {
        // libdbus is looser than the specification for unique names (it takes ":1"), so
        // only one direction must hold: the Swift side never passes a name libdbus rejects.
        if NameValidation.isValidBusName(name) {
            #expect(dbus_validate_bus_name(name, nil) != 0, "'\(name)' (\(name.utf8.count) bytes)")
        }
    }

    @Test("a unique name longer than 255 bytes is rejected")
    func longUniqueName() {
        let name = ":1." + String(repeating: "2", count: 253)  // 256 bytes
        #expect(name.utf8.count == 256)
        #expect(dbus_validate_bus_name(name, nil) == 0, "libdbus rejects it")
        #expect(!NameValidation.isValidBusName(name))
        #expect(NameValidation.isValidBusName(String(name.dropLast())), "255 bytes is still fine")
    }

    @Test("a method call to an over-long unique name throws instead of aborting in libdbus")
    func longUniqueNameDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            do throws(BusError) {
                _ = try Message.methodCall(
                    destination: ":1." + String(repeating: "2", count: 253), path: .root, interface: nil,
                    member: "Ping")
                exit(2)  // built a message with an invalid destination
            } catch {
                exit(error.name == .invalidArgs ? 0 : 3)
            }
        }
    }

    // MARK: Error names

    @Test("error names follow the interface rules; invalid ones become Failed")
    func errorNames() {
        #expect(BusError.Name("org.example.Error.Boom").rawValue == "org.example.Error.Boom")
        #expect(BusError.Name("not-an-error").rawValue == "org.freedesktop.DBus.Error.Failed")
        #expect(BusError.Name("").rawValue == BusError.Name.failed.rawValue)
        #expect(BusError.Name("org.example.9") == .failed)
        #expect(BusError.Name(rawValue: BusError.Name.invalidArgs.rawValue) == .invalidArgs)
        let standard: [BusError.Name] = [
            .failed, .noMemory, .unknownMethod, .unknownObject, .unknownInterface, .unknownProperty,
            .propertyReadOnly, .invalidArgs, .notSupported, .noReply, .timeout, .disconnected,
            .serviceUnknown, .nameHasNoOwner,
        ]
        #expect(Set(standard).count == standard.count, "every standard name is distinct")
        for name in standard {
            #expect(name.rawValue.hasPrefix("org.freedesktop.DBus.Error."))
            #expect(dbus_validate_error_name(name.rawValue, nil) != 0)
        }
        let error = BusError(.invalidArgs, "bad")
        #expect(error.description == "org.freedesktop.DBus.Error.InvalidArgs: bad")
    }
}
