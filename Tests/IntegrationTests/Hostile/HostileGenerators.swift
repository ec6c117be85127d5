import DBus
import SeededRandom

// One hostile call of each class (right signature, missing, extra or wrongly typed
// arguments, property calls, unknown names, other paths, deep nesting), each with what it
// may answer.

extension HostilePlanner {
    func call(
        _ category: HostileCategory, interface: String?, member: String, _ arguments: [Value],
        path: String = objectPath, expect: HostileExpectation
    ) -> HostileCall {
        HostileCall(
            category: category, path: path, interface: interface, member: member, arguments: arguments,
            expectation: expect)
    }

    /// A property-interface call: Get, GetAll or Set, aimed at real names most of the time.
    func propertiesCall(_ member: String, _ random: inout HostileRandom) -> HostileCall {
        let target = random.chance(0.8) ? random.pick(objectInterfaces) : nil
        let interfaceName =
            target?.name ?? (random.chance(0.5) ? random.pick(Self.unknownInterfaceNames) : values.string(&random))
        var arguments: [Value] = [.string(interfaceName)]
        var category = HostileCategory.propertyGet
        if member != "GetAll" {
            let property = target.flatMap {
                $0.properties.isEmpty || random.chance(0.1) ? nil : random.pick($0.properties)
            }
            arguments.append(
                .string(
                    property?.name
                        ?? (random.chance(0.5) ? random.pick(Self.unknownPropertyNames) : values.string(&random))))
            if property == nil { category = .unknownProperty }
            if member == "Set" {
                let type =
                    property.map { random.chance(0.7) ? $0.type : HostileValues.differentType(from: $0.type, &random) }
                    ?? HostileValues.randomType(&random)
                arguments.append(.variant(values.value(of: type, &random, depth: 1)))
                if let property {
                    category =
                        !property.writable ? .readOnlySet : type == property.type ? .propertySet : .propertySetWrongType
                }
            }
        } else if target == nil {
            category = .unknownInterface
        }
        return call(
            category, interface: Self.propertiesInterface, member: member, arguments,
            expect: propertiesExpectation(member: member, arguments: arguments))
    }

    /// A declared method with values of its declared types.
    func rightSignatureCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom)
        -> HostileCall?
    {
        if interface.name == Self.propertiesInterface { return propertiesCall(method.name, &random) }
        let arguments = method.inTypes.map { values.value(of: $0, &random) }
        guard !Self.endsTheDaemon(interface: interface.name, member: method.name, arguments: arguments) else {
            return nil
        }
        let category: HostileCategory = method.inNames.contains("Uri") ? .uri : .rightSignature
        return call(
            category, interface: interface.name, member: method.name, arguments,
            expect: expectation(interface: interface.name, member: method.name, arguments: arguments))
    }

    func missingArgumentsCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom)
        -> HostileCall?
    {
        guard !method.inTypes.isEmpty else { return nil }
        var arguments = method.inTypes.map { values.value(of: $0, &random) }
        let drop = random.int(1..<(arguments.count + 1))
        for _ in 0..<drop { arguments.remove(at: random.int(0..<arguments.count)) }
        return call(
            .missingArguments, interface: interface.name, member: method.name, arguments,
            expect: wrongSignatureExpectation(interface: interface.name))
    }

    func extraArgumentsCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom)
        -> HostileCall
    {
        var arguments = method.inTypes.map { values.value(of: $0, &random) }
        for _ in 0..<random.int(1..<4) {
            arguments.append(values.value(of: HostileValues.randomType(&random), &random, depth: 1))
        }
        return call(
            .extraArguments, interface: interface.name, member: method.name, arguments,
            expect: wrongSignatureExpectation(interface: interface.name))
    }

    func wrongTypesCall(_ interface: HostileInterface, _ method: HostileMethod, _ random: inout HostileRandom)
        -> HostileCall
    {
        guard !method.inTypes.isEmpty else { return extraArgumentsCall(interface, method, &random) }
        let replaced = random.int(0..<method.inTypes.count)
        let arguments = method.inTypes.enumerated().map { index, type in
            index == replaced || random.chance(0.3)
                ? values.value(of: HostileValues.differentType(from: type, &random), &random, depth: 1)
                : values.value(of: type, &random)
        }
        return call(
            .wrongTypes, interface: interface.name, member: method.name, arguments,
            expect: wrongSignatureExpectation(interface: interface.name))
    }

    func unknownInterfaceCall(_ random: inout HostileRandom) -> HostileCall {
        let member = random.chance(0.7) ? random.pick(allMethods).method.name : random.pick(Self.unknownMemberNames)
        let arguments = (0..<random.int(0..<3)).map { _ in
            values.value(of: HostileValues.randomType(&random), &random, depth: 1)
        }
        return call(
            .unknownInterface, interface: random.pick(Self.unknownInterfaceNames), member: member, arguments,
            expect: .error(HostileExpectation.unknownInterface))
    }

    func unknownMemberCall(_ random: inout HostileRandom) -> HostileCall {
        let interface = random.pick(interfaces)
        let declared = Set(interface.methods.map(\.name))
        let member = random.pick(Self.unknownMemberNames.filter { !declared.contains($0) })
        let arguments = (0..<random.int(0..<3)).map { _ in
            values.value(of: HostileValues.randomType(&random), &random, depth: 1)
        }
        return call(
            .unknownMember, interface: interface.name, member: member, arguments,
            expect: .error(HostileExpectation.unknownMethod))
    }

    /// No interface field: the object picks the first interface with the member.
    func noInterfaceCall(_ random: inout HostileRandom) -> HostileCall? {
        let arguments: [Value]
        let member: String
        if random.chance(0.8) {
            let (_, method) = random.pick(allMethods)
            member = method.name
            arguments =
                random.chance(0.6)
                ? method.inTypes.map { values.value(of: $0, &random) }
                : (0..<random.int(0..<3)).map { _ in
                    values.value(of: HostileValues.randomType(&random), &random, depth: 1)
                }
        } else {
            member = random.pick(Self.unknownMemberNames)
            arguments = []
        }
        guard !Self.endsTheDaemon(interface: nil, member: member, arguments: arguments) else { return nil }
        var expectation = HostileExpectation.acted
        expectation.errors.formUnion([HostileExpectation.unknownMethod, HostileExpectation.notSupported])
        return call(.noInterface, interface: nil, member: member, arguments, expect: expectation)
    }

    func otherPathCall(_ random: inout HostileRandom) -> HostileCall {
        let path = random.pick(otherPaths)
        let (interface, method) = random.pick(allMethods)
        let useInterface = random.chance(0.9)
        let arguments =
            random.chance(0.7)
            ? method.inTypes.map { values.value(of: $0, &random) }
            : (0..<random.int(0..<3)).map { _ in values.value(of: HostileValues.randomType(&random), &random, depth: 1)
            }
        let expectation: HostileExpectation
        if useInterface && interface.name == Self.peerInterface {
            expectation = .success  // libdbus answers Peer on every path
        } else if method.name == "Introspect" && (interface.name == Self.introspectableInterface || !useInterface) {
            // libdbus (or, for the ancestors, our connection) answers with a node that lists
            // the children and declares nothing, whatever the arguments.
            expectation = HostileExpectation(
                successAllowed: true, errors: [HostileExpectation.unknownMethod], reply: .introspectionWithoutInterfaces
            )
        } else {
            expectation = .error(HostileExpectation.unknownMethod, HostileExpectation.unknownObject)
        }
        return call(
            .otherPath, interface: useInterface ? interface.name : nil, member: method.name, arguments, path: path,
            expect: expectation)
    }

    /// Values nested as deep as a message may go, and one level deeper (refused before
    /// sending: the bus would drop a connection that sent it).
    static let deepValues: [(value: Value, tooDeep: Bool)] = {
        func array(_ n: Int) -> Value {
            var value = Value.array(.int32, [.int32(1)])
            for _ in 1..<n { value = .array(value.type, [value]) }
            return value
        }
        func structure(_ n: Int) -> Value {
            var value = Value.int32(1)
            for _ in 0..<n { value = .structure([value]) }
            return value
        }
        let dictionary = Value.dictionary(key: .string, value: .variant, [.init(.string("k"), .variant(.string("v")))])
        return [
            (HostileValues.nestedVariant(depth: 64, around: .string("deep")), false),
            (HostileValues.nestedVariant(depth: 65, around: .string("too deep")), true),
            (HostileValues.nestedVariant(depth: 64, around: .double(.nan)), false),
            (HostileValues.nestedVariant(depth: 33, around: array(32)), false),
            (HostileValues.nestedVariant(depth: 34, around: array(32)), true),
            (HostileValues.nestedVariant(depth: 32, around: structure(32)), false),
            (HostileValues.nestedVariant(depth: 33, around: structure(32)), true),
            (HostileValues.nestedVariant(depth: 61, around: dictionary), false),
            (HostileValues.nestedVariant(depth: 62, around: dictionary), true),
            (HostileValues.nestedVariant(depth: 1, around: array(32)), false),
        ]
    }()

    /// A deep value where a method or Set expects something else.
    func deepVariantCall(_ random: inout HostileRandom) -> HostileCall {
        let (value, tooDeep) = random.pick(Self.deepValues)
        let choice = random.int(0..<3)
        let readOnly = allProperties.first { !$0.property.writable }
        let writable = allProperties.first { $0.property.writable && $0.property.type != .variant }
        var result: HostileCall
        if choice == 0, let writable {
            result = call(
                .deepVariant, interface: Self.propertiesInterface, member: "Set",
                [.string(writable.interface.name), .string(writable.property.name), value],
                expect: .error(HostileExpectation.invalidArgs))
        } else if choice == 1, let readOnly {
            result = call(
                .deepVariant, interface: Self.propertiesInterface, member: "Set",
                [.string(readOnly.interface.name), .string(readOnly.property.name), value],
                expect: .error(HostileExpectation.propertyReadOnly, HostileExpectation.invalidArgs))
        } else {
            let (interface, method) = random.pick(
                allMethods.filter { !$0.method.inTypes.contains(.variant) && $0.interface.name != Self.peerInterface })
            result = call(
                .deepVariant, interface: interface.name, member: method.name, [value],
                expect: .error(HostileExpectation.invalidArgs))
        }
        if tooDeep { result.expectation = .refusedBeforeSending }
        return result
    }
}
