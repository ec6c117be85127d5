import DBus
import TestKit
import Testing

/// In-process dispatch: no bus, only `ExportedObject.dispatch` and its signal sink.
@MainActor
@Suite("Exported object dispatch")
struct ExportedObjectTests {
    nonisolated static let interfaceName = "org.example.Music"
    nonisolated static let properties = "org.freedesktop.DBus.Properties"

    /// State the test object's handlers read and write.
    final class State {
        var volume = 0.5
        var calls: [[Value]] = []
        var signals: [(interface: String, member: String, arguments: [Value])] = []
    }

    let state = State()
    let object: ExportedObject

    init() {
        let state = self.state
        let interface = Interface(
            Self.interfaceName,
            methods: [
                Method("Add", in: [Argument("a", .int32), Argument("b", .int32)], out: [Argument("sum", .int64)]) {
                    args throws(BusError) in
                    state.calls.append(args)
                    guard case .int32(let a) = args[0], case .int32(let b) = args[1] else {
                        throw BusError(.failed, "handler got unchecked arguments")
                    }
                    return [.int64(Int64(a) + Int64(b))]
                },
                Method("Fail") { _ throws(BusError) -> [Value] in
                    throw BusError(BusError.Name("org.example.Error.Nope"), "nope")
                },
                Method(
                    "Describe", in: [Argument("options", .dictionary(key: .string, value: .variant))],
                    out: [Argument("text", .string), Argument("count", .uint32)]
                ) { args throws(BusError) in
                    let count = args[0].stringVariantDictionary?.count ?? 0
                    return [.string("ok"), .uint32(UInt32(count))]
                },
            ],
            properties: [
                Property("Identity", .string, emitsChangedSignal: .const, get: { .string("Quaver") }),
                Property("Position", .int64, emitsChangedSignal: .false, get: { .int64(42) }),
                Property(
                    "Volume", .double, get: { .double(state.volume) },
                    set: { value throws(BusError) in
                        guard let volume = value.double else { throw BusError(.failed, "setter got unchecked value") }
                        state.volume = volume
                    }),
            ],
            signals: [
                SignalDeclaration("Seeked", [Argument("position", .int64)]),
                SignalDeclaration("Reset"),
            ])
        object = ExportedObject(path: ObjectPath("/org/example/Music")!, interfaces: [interface])
        object.signalSink = { interface, member, arguments in
            state.signals.append((interface, member, arguments))
        }
    }

    func call(_ interface: String?, _ member: String, _ arguments: [Value] = []) -> Result<[Value], BusError> {
        object.dispatch(interface: interface, member: member, arguments: arguments)
    }

    // MARK: Methods

    @Test("a correct call returns the handler's values")
    func correctCall() throws {
        #expect(success(call(Self.interfaceName, "Add", [.int32(.max), .int32(1)])) == [.int64(Int64(Int32.max) + 1)])
        #expect(state.calls == [[.int32(.max), .int32(1)]])
        let reply = success(
            call(Self.interfaceName, "Describe", [.stringVariantDictionary(["a": .int32(1), "b": .string("x")])]))
        #expect(reply == [.string("ok"), .uint32(2)])
    }

    @Test("a call without an interface finds the method by name")
    func callWithoutInterface() {
        #expect(success(call(nil, "Add", [.int32(2), .int32(3)])) == [.int64(5)])
        expectFailure(call(nil, "Missing"), .unknownMethod)
    }

    @Test(
        "a wrong argument signature gives InvalidArgs and never reaches the handler",
        arguments: [
            [Value](), [.int32(1)], [.int32(1), .int64(2)], [.int32(1), .int32(2), .int32(3)],
            [.string("1"), .string("2")],
            [.variant(.int32(1)), .variant(.int32(2))],
        ])
    func wrongSignature(_ arguments: [Value]) {
        expectFailure(call(Self.interfaceName, "Add", arguments), .invalidArgs)
        #expect(state.calls.isEmpty)
    }

    @Test("an error thrown by a handler comes back unchanged")
    func handlerError() {
        let result = call(Self.interfaceName, "Fail")
        #expect(throws: BusError(BusError.Name("org.example.Error.Nope"), "nope")) { try result.get() }
    }

    @Test("an unknown member gives UnknownMethod")
    func unknownMember() {
        expectFailure(call(Self.interfaceName, "Subtract", [.int32(1), .int32(2)]), .unknownMethod)
        expectFailure(call(Self.interfaceName, "Volume"), .unknownMethod)  // a property is not a method
        expectFailure(call(ExportedObject.introspectableInterface, "Inspect"), .unknownMethod)
        expectFailure(call(ExportedObject.peerInterface, "Pong"), .unknownMethod)
        expectFailure(call(Self.properties, "Delete", [.string(Self.interfaceName)]), .unknownMethod)
    }

    @Test("an unknown interface gives UnknownInterface")
    func unknownInterface() {
        expectFailure(call("org.example.Other", "Add", [.int32(1), .int32(2)]), .unknownInterface)
    }

    // MARK: Properties

    @Test("Get returns the property in a variant")
    func get() {
        #expect(
            success(call(Self.properties, "Get", [.string(Self.interfaceName), .string("Identity")])) == [
                .variant(.string("Quaver"))
            ])
        #expect(
            success(call(Self.properties, "Get", [.string(Self.interfaceName), .string("Volume")])) == [
                .variant(.double(0.5))
            ])
    }

    @Test("Get of a missing property gives UnknownProperty; of a missing interface, UnknownInterface")
    func getMissing() {
        expectFailure(
            call(Self.properties, "Get", [.string(Self.interfaceName), .string("Missing")]), .unknownProperty)
        expectFailure(
            call(Self.properties, "Get", [.string("org.example.Other"), .string("Volume")]), .unknownInterface)
    }

    @Test(
        "Properties methods check their signatures",
        arguments: [
            ("Get", [Value.string(interfaceName)]),
            ("Get", [.string(interfaceName), .int32(1)]),
            ("GetAll", []),
            ("GetAll", [.string(interfaceName), .string("x")]),
            ("Set", [.string(interfaceName), .string("Volume"), .double(1)]),  // not wrapped in a variant
            ("Set", [.string(interfaceName), .string("Volume")]),
        ])
    func propertiesSignatures(_ member: String, _ arguments: [Value]) {
        expectFailure(call(Self.properties, member, arguments), .invalidArgs)
        #expect(state.volume == 0.5)
    }

    @Test("GetAll returns every property of the interface")
    func getAll() throws {
        #expect(Self.properties == ExportedObject.propertiesInterface)
        let reply = try #require(success(call(Self.properties, "GetAll", [.string(Self.interfaceName)])))
        #expect(reply.count == 1)
        #expect(reply.first?.type == .dictionary(key: .string, value: .variant))
        #expect(
            reply.first?.stringVariantDictionary == [
                "Identity": .string("Quaver"), "Position": .int64(42), "Volume": .double(0.5),
            ])
    }

    @Test("GetAll of a standard interface is empty; of an unknown interface, UnknownInterface")
    func getAllOtherInterfaces() {
        #expect(
            success(call(Self.properties, "GetAll", [.string(ExportedObject.peerInterface)])) == [
                .stringVariantDictionary([:])
            ])
        expectFailure(call(Self.properties, "GetAll", [.string("org.example.Other")]), .unknownInterface)
    }

    @Test("Set changes a read-write property")
    func set() {
        #expect(
            success(
                call(Self.properties, "Set", [.string(Self.interfaceName), .string("Volume"), .variant(.double(0.25))]))
                == [])
        #expect(state.volume == 0.25)
        #expect(
            success(call(Self.properties, "Get", [.string(Self.interfaceName), .string("Volume")])) == [
                .variant(.double(0.25))
            ])
    }

    @Test("Set of a read-only property gives PropertyReadOnly")
    func setReadOnly() {
        expectFailure(
            call(Self.properties, "Set", [.string(Self.interfaceName), .string("Identity"), .variant(.string("X"))]),
            .propertyReadOnly)
        #expect(
            success(call(Self.properties, "Get", [.string(Self.interfaceName), .string("Identity")])) == [
                .variant(.string("Quaver"))
            ])
    }

    @Test("Set of a missing property gives UnknownProperty")
    func setMissing() {
        expectFailure(
            call(Self.properties, "Set", [.string(Self.interfaceName), .string("Missing"), .variant(.int32(1))]),
            .unknownProperty)
        expectFailure(
            call(Self.properties, "Set", [.string("org.example.Other"), .string("Volume"), .variant(.double(1))]),
            .unknownInterface)
    }

    @Test(
        "Set with the wrong variant type gives InvalidArgs and leaves the value unchanged",
        arguments: [
            Value.int32(1), .string("loud"), .int64(1), .array(.double, [.double(1)]), .structure([.double(1)]),
        ])
    func setWrongType(_ value: Value) {
        expectFailure(
            call(Self.properties, "Set", [.string(Self.interfaceName), .string("Volume"), .variant(value)]),
            .invalidArgs)
        #expect(state.volume == 0.5)
    }

    @Test("Set with a variant of a variant is not a double")
    func setNestedVariant() {
        // The value of Set is `v`; a `v` holding `v` holding `d` carries a variant, not a double.
        expectFailure(
            call(
                Self.properties, "Set",
                [.string(Self.interfaceName), .string("Volume"), .variant(.variant(.double(1)))]), .invalidArgs)
        #expect(state.volume == 0.5)
    }

    @Test("a property of type v can be set")
    func setVariantProperty() {
        var stored: Value = .variant(.int32(0))
        let object = ExportedObject(
            path: .root,
            interfaces: [
                Interface(
                    "org.example.Any",
                    properties: [
                        Property("Anything", .variant, get: { stored }, set: { stored = $0 })
                    ])
            ])
        let result = object.dispatch(
            interface: ExportedObject.propertiesInterface, member: "Set",
            arguments: [.string("org.example.Any"), .string("Anything"), .variant(.variant(.string("x")))])
        _ = success(result)
        #expect(stored == .variant(.string("x")))
    }

    // MARK: Standard interfaces

    @Test("Peer.Ping returns nothing; GetMachineId a 32-character id")
    func peer() throws {
        #expect(success(call(ExportedObject.peerInterface, "Ping")) == [])
        expectFailure(call(ExportedObject.peerInterface, "Ping", [.int32(1)]), .invalidArgs)
        let id = try #require(success(call(ExportedObject.peerInterface, "GetMachineId"))?.first?.string)
        #expect(id.count == 32)
    }

    @Test("Introspect describes every method, argument, signal and property")
    func introspect() throws {
        let reply = try #require(success(call(ExportedObject.introspectableInterface, "Introspect")))
        let xml = try #require(reply.first?.string)
        #expect(reply.count == 1)
        #expect(success(call(nil, "Introspect")) == reply, "Introspect without an interface gives the same XML")
        expectFailure(call(ExportedObject.introspectableInterface, "Introspect", [.string("x")]), .invalidArgs)

        let expectedFragments = [
            "<!DOCTYPE node PUBLIC",
            "<interface name=\"org.example.Music\">",
            "<method name=\"Add\">",
            "<arg name=\"a\" type=\"i\" direction=\"in\"/>",
            "<arg name=\"b\" type=\"i\" direction=\"in\"/>",
            "<arg name=\"sum\" type=\"x\" direction=\"out\"/>",
            "<method name=\"Fail\"/>",
            "<method name=\"Describe\">",
            "<arg name=\"options\" type=\"a{sv}\" direction=\"in\"/>",
            "<arg name=\"text\" type=\"s\" direction=\"out\"/>",
            "<arg name=\"count\" type=\"u\" direction=\"out\"/>",
            "<signal name=\"Seeked\">",
            "<arg name=\"position\" type=\"x\"/>",
            "<signal name=\"Reset\"/>",
            "<property name=\"Identity\" type=\"s\" access=\"read\">",
            "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"const\"/>",
            "<property name=\"Position\" type=\"x\" access=\"read\">",
            "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/>",
            "<property name=\"Volume\" type=\"d\" access=\"readwrite\"/>",
            "<interface name=\"org.freedesktop.DBus.Properties\">",
            "<signal name=\"PropertiesChanged\">",
            "<interface name=\"org.freedesktop.DBus.Introspectable\">",
            "<interface name=\"org.freedesktop.DBus.Peer\">",
            "</node>",
        ]
        for fragment in expectedFragments {
            #expect(xml.contains(fragment), "missing \(fragment)")
        }
        // Each annotation belongs to its own property element.
        let position = try #require(xml.range(of: "<property name=\"Position\""))
        let after = xml[position.upperBound...]
        let close = try #require(after.range(of: "</property>"))
        #expect(after[..<close.lowerBound].contains("value=\"false\""))
        #expect(!object.introspectionXML(includingStandardInterfaces: false).contains("org.freedesktop.DBus.Peer"))
    }

    @Test("introspection escapes XML metacharacters")
    func introspectionEscapes() {
        let object = ExportedObject(
            path: .root,
            interfaces: [
                Interface(
                    "org.example.X",
                    methods: [
                        Method("M", in: [Argument("a<b>&\"c\"", .string)]) { _ in [] }
                    ])
            ])
        #expect(object.introspectionXML().contains("name=\"a&lt;b&gt;&amp;&quot;c&quot;\""))
    }

    @Test("replaceInterfaces changes what dispatch sees")
    func replaceInterfaces() {
        object.replaceInterfaces([Interface("org.example.Other", methods: [Method("Hello") { _ in [.string("hi")] }])])
        expectFailure(call(Self.interfaceName, "Add", [.int32(1), .int32(2)]), .unknownInterface)
        #expect(success(call("org.example.Other", "Hello")) == [.string("hi")])
        #expect(object.interface(named: "org.example.Other") != nil)
    }

    // MARK: Signals

    @Test("emitPropertiesChanged delivers the interface, the a{sv} map and an empty invalidated list")
    func propertiesChanged() throws {
        object.emitPropertiesChanged(
            interface: Self.interfaceName, changed: ["Volume": .double(0.75), "Position": .int64(1)])
        let signal = try #require(state.signals.first)
        #expect(state.signals.count == 1)
        #expect(signal.interface == ExportedObject.propertiesInterface)
        #expect(signal.member == "PropertiesChanged")
        #expect(
            signal.arguments == [
                .string(Self.interfaceName),
                .dictionary(
                    key: .string, value: .variant,
                    [
                        .init(.string("Position"), .variant(.int64(1))),
                        .init(.string("Volume"), .variant(.double(0.75))),
                    ]),
                .array(.string, []),
            ])
        // The arguments make a valid message with the declared signature.
        #expect(try signalMessage(signal.arguments).signature == "sa{sv}as")
    }

    @Test("emitPropertiesChanged with only invalidated names")
    func propertiesInvalidated() throws {
        object.emitPropertiesChanged(interface: Self.interfaceName, changed: [:], invalidated: ["Position"])
        #expect(
            state.signals.map(\.arguments) == [
                [
                    .string(Self.interfaceName), .dictionary(key: .string, value: .variant, []), .strings(["Position"]),
                ]
            ])
    }

    @Test("emitPropertiesChanged emits nothing when nothing changed")
    func propertiesUnchanged() {
        object.emitPropertiesChanged(interface: Self.interfaceName, changed: [:], invalidated: [])
        #expect(state.signals.isEmpty)
    }

    @Test("emit goes to the signal sink")
    func emit() {
        object.emit(interface: Self.interfaceName, member: "Seeked", arguments: [.int64(7)])
        #expect(state.signals.count == 1)
        #expect(state.signals.first?.member == "Seeked")
        #expect(state.signals.first?.arguments == [.int64(7)])
    }
}
