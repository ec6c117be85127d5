/// A named, typed argument of a method or signal.
public struct Argument: Sendable, Hashable {
    /// The argument's name, shown in introspection data.
    public var name: String
    /// The argument's D-Bus type.
    public var type: DataType
    /// Creates an argument with a name and a type.
    public init(_ name: String, _ type: DataType) {
        self.name = name
        self.type = type
    }
}

/// How a property announces changes (`org.freedesktop.DBus.Property.EmitsChangedSignal`).
public enum EmitsChangedSignal: String, Sendable {
    /// `PropertiesChanged` carries the new value whenever the property changes (the default).
    case `true`
    /// `PropertiesChanged` names the property as invalidated, without its new value.
    case invalidates
    /// The property can change without any signal announcing it.
    case `false`
    /// The property never changes while the object exists.
    case const
}

/// One method of an exported interface: its declaration and its handler.
public struct Method {
    /// The method's member name, such as `PlayPause`.
    public var name: String
    /// The arguments the method takes; a call with any other signature fails with InvalidArgs.
    public var inArguments: [Argument]
    /// The values the method returns, as introspection declares them.
    public var outArguments: [Argument]
    /// Called with arguments already checked against `inArguments`; returns the out values.
    /// Descriptors (`h`) among the arguments are closed after it returns: `dup` one to keep it.
    ///
    /// For a method declared with ``init(_:in:out:replying:)``, it runs ``replyingHandler``
    /// and returns its answer when the answer comes before the handler returns, or throws
    /// `org.freedesktop.DBus.Error.Failed` when it does not (and that later answer is dropped).
    public var handler: @MainActor ([Value]) throws(BusError) -> [Value]

    /// Called with arguments already checked against `inArguments` and the ``MethodReply``
    /// to answer through, now or later; nil for a method that answers by returning from
    /// ``handler``. When set, calls are answered through it, and ``handler`` is not used.
    /// Descriptors (`h`) among the arguments are closed after it returns, answered or not:
    /// `dup` one to keep it.
    public var replyingHandler: (@MainActor ([Value], MethodReply) -> Void)?

    /// Declares a method with its arguments, its return values and the handler that answers calls.
    public init(
        _ name: String, in inArguments: [Argument] = [], out outArguments: [Argument] = [],
        handler: @escaping @MainActor ([Value]) throws(BusError) -> [Value]
    ) {
        self.name = name
        self.inArguments = inArguments
        self.outArguments = outArguments
        self.handler = handler
    }

    /// Declares a method whose handler answers through a ``MethodReply``, at once or later
    /// (after work on another queue), while the main queue goes on with other calls. The
    /// reply is answered on the main actor; see ``MethodReply`` for a reply answered twice,
    /// or never.
    public init(
        _ name: String, in inArguments: [Argument] = [], out outArguments: [Argument] = [],
        replying handler: @escaping @MainActor ([Value], MethodReply) -> Void
    ) {
        self.name = name
        self.inArguments = inArguments
        self.outArguments = outArguments
        self.replyingHandler = handler
        self.handler = { arguments throws(BusError) in
            try Self.answerNow(name, arguments, handler)
        }
    }

    /// Runs a replying handler for a caller that needs the answer before it returns.
    @MainActor
    private static func answerNow(
        _ member: String, _ arguments: [Value], _ handler: @MainActor ([Value], MethodReply) -> Void
    ) throws(BusError) -> [Value] {
        let early = EarlyAnswer<Result<[Value], BusError>>()
        handler(arguments, MethodReply(member: member) { result, _ in early.take(result) })
        guard let answer = early.stopWaiting() else { throw .answersLater(member) }
        return try answer.get()
    }

    /// Answers one call through `reply`, by whichever handler the method has.
    @MainActor
    func answer(_ arguments: [Value], _ reply: MethodReply) {
        if let replyingHandler { return replyingHandler(arguments, reply) }
        do throws(BusError) {
            reply.succeed(try handler(arguments))
        } catch {
            reply.fail(error)
        }
    }

    var inSignature: String { inArguments.map(\.type.signature).joined() }
}

/// One property of an exported interface. Getters never fail: clients (GDBusProxy, Plasma)
/// lose every property when one getter fails `GetAll`.
public struct Property {
    /// The property's name, such as `PlaybackStatus`.
    public var name: String
    /// The property's D-Bus type; `Set` accepts only a value of exactly this type.
    public var type: DataType
    /// How changes to the property are announced, as introspection declares it.
    public var emitsChangedSignal: EmitsChangedSignal
    /// Returns the current value, which should be of type `type`; answers `Get` and `GetAll`.
    public var getter: @MainActor () -> Value
    /// nil for a read-only property. Receives a value already checked against `type`.
    public var setter: (@MainActor (Value) throws(BusError) -> Void)?

    /// Declares a property; passing `set` makes it writable, otherwise it is read-only.
    public init(
        _ name: String, _ type: DataType, emitsChangedSignal: EmitsChangedSignal = .true,
        get: @escaping @MainActor () -> Value,
        set: (@MainActor (Value) throws(BusError) -> Void)? = nil
    ) {
        self.name = name
        self.type = type
        self.emitsChangedSignal = emitsChangedSignal
        self.getter = get
        self.setter = set
    }

    var access: String { setter == nil ? "read" : "readwrite" }
}

/// The declaration of a signal an interface emits.
public struct SignalDeclaration: Sendable {
    /// The signal's member name, such as `Seeked`.
    public var name: String
    /// The signal's arguments, as introspection declares them.
    public var arguments: [Argument]
    /// Declares a signal with its name and arguments.
    public init(_ name: String, _ arguments: [Argument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface: the one declaration that drives both dispatch and introspection.
public struct Interface {
    /// The interface name, such as `org.mpris.MediaPlayer2.Player`.
    public var name: String
    /// The methods callers can invoke on the interface.
    public var methods: [Method]
    /// The properties, read and written through `org.freedesktop.DBus.Properties`.
    public var properties: [Property]
    /// The signals the interface declares; emit them with
    /// ``ExportedObject/emit(interface:member:arguments:)``.
    public var signals: [SignalDeclaration]

    /// Declares an interface; traps when `name` is not a valid interface name.
    public init(_ name: String, methods: [Method] = [], properties: [Property] = [], signals: [SignalDeclaration] = [])
    {
        precondition(NameValidation.isValidInterfaceName(name), "invalid interface name \(name)")
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    func method(named name: String) -> Method? { methods.first { $0.name == name } }
    func property(named name: String) -> Property? { properties.first { $0.name == name } }
}

/// An object exported at one path with a set of interfaces, plus the standard
/// `Properties`, `Introspectable` and `Peer` interfaces, which it implements itself.
@MainActor
public final class ExportedObject {
    /// The path the object is exported at.
    public let path: ObjectPath
    /// The object's own interfaces, without the standard ones; change them with
    /// ``ExportedObject/replaceInterfaces(_:)``.
    public private(set) var interfaces: [Interface]
    weak var connection: Connection?

    /// Receives every signal this object emits. Defaults to sending on the connection the
    /// object is exported on; tests may replace it to record signals without a bus.
    public var signalSink: (@MainActor (_ interface: String, _ member: String, _ arguments: [Value]) -> Void)?

    /// Creates an object for `path` with the given interfaces; it answers calls once
    /// passed to ``Connection/export(_:)``.
    public init(path: ObjectPath, interfaces: [Interface]) {
        self.path = path
        self.interfaces = interfaces
    }

    /// Replaces the interface declarations (for example when an optional property appears).
    public func replaceInterfaces(_ interfaces: [Interface]) {
        self.interfaces = interfaces
    }

    /// The name of the standard `org.freedesktop.DBus.Properties` interface.
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// The name of the standard `org.freedesktop.DBus.Introspectable` interface.
    public static let introspectableInterface = "org.freedesktop.DBus.Introspectable"
    /// The name of the standard `org.freedesktop.DBus.Peer` interface.
    public static let peerInterface = "org.freedesktop.DBus.Peer"

    /// The object's interface named `name`, or nil when it has none (the standard
    /// interfaces are not among them).
    public func interface(named name: String) -> Interface? { interfaces.first { $0.name == name } }

    /// Emits a signal from this object.
    public func emit(interface: String, member: String, arguments: [Value]) {
        if let signalSink {
            signalSink(interface, member, arguments)
        } else {
            connection?.emitSignal(path: path, interface: interface, member: member, arguments: arguments)
        }
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for one interface.
    public func emitPropertiesChanged(interface: String, changed: [String: Value], invalidated: [String] = []) {
        guard !changed.isEmpty || !invalidated.isEmpty else { return }
        emit(
            interface: Self.propertiesInterface, member: "PropertiesChanged",
            arguments: [.string(interface), .stringVariantDictionary(changed), .strings(invalidated)])
    }

    /// The introspection document for this object, generated from its interface declarations.
    public func introspectionXML(includingStandardInterfaces: Bool = true) -> String {
        Introspection.xml(
            interfaces: (includingStandardInterfaces ? Introspection.standardInterfaces : []) + interfaces,
            children: connection?.childNodes(of: path) ?? [])
    }

    // MARK: Dispatch

    /// Dispatches one method call by interface and member and returns its reply values or error.
    /// A method whose handler answers later (see ``MethodReply``) returns
    /// `org.freedesktop.DBus.Error.Failed` here, and its later answer is dropped: call
    /// ``dispatch(interface:member:arguments:answered:)`` to wait for it.
    public func dispatch(interface: String?, member: String, arguments: [Value]) -> Result<[Value], BusError> {
        let early = EarlyAnswer<Result<[Value], BusError>>()
        dispatch(interface: interface, member: member, arguments: arguments) { early.take($0) }
        return early.stopWaiting() ?? .failure(.answersLater(member))
    }

    /// Dispatches one method call by interface and member, and calls `answered` on the main
    /// actor with its reply values or error: before this returns, or later for a method
    /// whose handler answers through a ``MethodReply`` later. `answered` is called once.
    public func dispatch(
        interface: String?, member: String, arguments: [Value],
        answered: @escaping @MainActor (Result<[Value], BusError>) -> Void
    ) {
        dispatch(interface: interface, member: member, arguments: arguments) { result, _ in answered(result) }
    }

    private func dispatch(
        interface: String?, member: String, arguments: [Value],
        delivered: @escaping @MainActor (Result<[Value], BusError>, _ abandoned: Bool) -> Void
    ) {
        let reply = MethodReply(member: member, deliver: delivered)
        do throws(BusError) {
            switch try route(interface: interface, member: member, arguments: arguments) {
            case .answered(let values): reply.succeed(values)
            case .method(let method): method.answer(arguments, reply)
            }
        } catch {
            reply.fail(error)
        }
    }

    /// Answers `message` on `connection`, now or when its handler answers.
    func handle(_ message: Message, on connection: Connection) {
        let arguments: [Value]
        do throws(BusError) {
            arguments = try message.readArguments()
        } catch {
            if !message.noReplyExpected, let reply = message.makeError(error) { connection.send(reply) }
            return
        }
        let member = message.member ?? ""
        dispatch(interface: message.interface, member: member, arguments: arguments) {
            [weak connection] result, abandoned in
            guard let connection else { return }
            if abandoned { connection.logger.error("the handler of \(member) never answered; answered an error") }
            guard !message.noReplyExpected, let reply = Self.reply(to: message, result, on: connection)
            else { return }
            connection.send(reply)
        }
        // Reading gave each descriptor (`h`) in the call a new descriptor of ours; any
        // caller can send them, to any member. Close them once the handler returns (a
        // handler that keeps one dups it), or each such call leaks them for good.
        Value.closeDescriptors(in: arguments)
    }

    private static func reply(
        to message: Message, _ result: Result<[Value], BusError>, on connection: Connection
    ) -> Message? {
        switch result {
        case .success(let values):
            do {
                return try message.makeReturn(values)
            } catch {
                // A reply too large for the bus goes back as that error: sent, it would make
                // the bus drop this whole connection.
                if error.name == .limitsExceeded { return message.makeError(error) }
                connection.logger.error("bad reply to \(message.member ?? "?"): \(error)")
                return message.makeError(BusError(.failed, "internal error building the reply"))
            }
        case .failure(let error):
            return message.makeError(error)
        }
    }

    /// Where a call goes: answered by the object itself (the standard interfaces), or by a method.
    private enum Route {
        case answered([Value])
        case method(Method)
    }

    private func route(interface name: String?, member: String, arguments: [Value]) throws(BusError) -> Route {
        let signature = arguments.map(\.type.signature).joined()
        switch name {
        case Self.propertiesInterface?:
            return .answered(try handleProperties(member: member, arguments: arguments, signature: signature))
        case Self.introspectableInterface?:
            guard member == "Introspect" else { throw unknownMethod(name, member, signature) }
            try expect(signature, "", member)
            return .answered([.string(introspectionXML())])
        case Self.peerInterface?:
            switch member {
            case "Ping":
                try expect(signature, "", member)
                return .answered([])
            case "GetMachineId":
                try expect(signature, "", member)
                return .answered([.string(Introspection.machineID)])
            default: throw unknownMethod(name, member, signature)
            }
        case nil:
            // No interface given: the first interface that has the member (D-Bus allows this).
            if member == "Introspect" && signature.isEmpty { return .answered([.string(introspectionXML())]) }
            guard let method = interfaces.lazy.compactMap({ $0.method(named: member) }).first else {
                throw unknownMethod(nil, member, signature)
            }
            try expect(signature, method.inSignature, member)
            return .method(method)
        case let name?:
            guard let interface = interface(named: name) else {
                throw BusError(.unknownInterface, "object \(path) has no interface \(name)")
            }
            guard let method = interface.method(named: member) else { throw unknownMethod(name, member, signature) }
            try expect(signature, method.inSignature, member)
            return .method(method)
        }
    }

    private func unknownMethod(_ interface: String?, _ member: String, _ signature: String) -> BusError {
        BusError(
            .unknownMethod,
            "no method \(interface.map { $0 + "." } ?? "")\(member) with signature '\(signature)' on \(path)")
    }

    private func expect(_ actual: String, _ expected: String, _ member: String) throws(BusError) {
        guard actual == expected else {
            throw BusError(.invalidArgs, "\(member) takes signature '\(expected)', got '\(actual)'")
        }
    }

    private func handleProperties(member: String, arguments: [Value], signature: String) throws(BusError) -> [Value] {
        switch member {
        case "Get":
            try expect(signature, "ss", member)
            let property = try findProperty(arguments[0].string!, arguments[1].string!)
            return [.variant(property.getter())]
        case "GetAll":
            try expect(signature, "s", member)
            let name = arguments[0].string!
            guard let interface = interface(named: name) else {
                if [Self.propertiesInterface, Self.introspectableInterface, Self.peerInterface].contains(name) {
                    return [.stringVariantDictionary([:])]
                }
                throw BusError(.unknownInterface, "object \(path) has no interface \(name)")
            }
            var all: [String: Value] = [:]
            for property in interface.properties { all[property.name] = property.getter() }
            return [.stringVariantDictionary(all)]
        case "Set":
            try expect(signature, "ssv", member)
            let property = try findProperty(arguments[0].string!, arguments[1].string!)
            guard let setter = property.setter else {
                throw BusError(.propertyReadOnly, "property \(property.name) is read-only")
            }
            // The D-Bus argument is a `v`: take off exactly that variant. What it holds may
            // itself be a variant, for a property of type `v`.
            guard case .variant(let value) = arguments[2] else {
                throw BusError(.invalidArgs, "Set takes the value as a variant")
            }
            guard value.type == property.type else {
                throw BusError(
                    .invalidArgs, "property \(property.name) has type '\(property.type)', got '\(value.type)'")
            }
            try setter(value)
            return []
        default:
            throw unknownMethod(Self.propertiesInterface, member, signature)
        }
    }

    private func findProperty(_ interfaceName: String, _ name: String) throws(BusError) -> Property {
        guard let interface = interface(named: interfaceName) else {
            throw BusError(.unknownInterface, "object \(path) has no interface \(interfaceName)")
        }
        guard let property = interface.property(named: name) else {
            throw BusError(.unknownProperty, "interface \(interfaceName) has no property \(name)")
        }
        return property
    }
}
