import DBus
import SeededRandom

// The batches the tests send: the coverage sweep, random calls of every class, the calls
// that must be refused for their values, and the batch that must change no state.

extension HostilePlanner {
    /// Every method with its declared signature several times, and with wrong ones; every
    /// writable property set to every hostile value of its type; every property read and
    /// every interface's GetAll; every hostile URI for every method taking one.
    func coverageCalls(_ random: inout HostileRandom, perMethod: Int = 12) -> [HostileCall] {
        var calls: [HostileCall] = []
        for (interface, method) in allMethods {
            for _ in 0..<perMethod {
                if let made = rightSignatureCall(interface, method, &random) { calls.append(made) }
            }
            if let missing = missingArgumentsCall(interface, method, &random) { calls.append(missing) }
            calls.append(extraArgumentsCall(interface, method, &random))
            calls.append(wrongTypesCall(interface, method, &random))
        }
        for (interface, property) in allProperties {
            let get: [Value] = [.string(interface.name), .string(property.name)]
            calls.append(
                call(
                    .propertyGet, interface: Self.propertiesInterface, member: "Get", get,
                    expect: propertiesExpectation(member: "Get", arguments: get)))
            guard property.writable else { continue }
            for value in values.all(of: property.type, &random) {
                let arguments = get + [.variant(value)]
                calls.append(
                    call(
                        .propertySet, interface: Self.propertiesInterface, member: "Set", arguments,
                        expect: propertiesExpectation(member: "Set", arguments: arguments)))
            }
        }
        for interface in interfaces {
            calls.append(
                call(
                    .propertyGet, interface: Self.propertiesInterface, member: "GetAll", [.string(interface.name)],
                    expect: propertiesExpectation(member: "GetAll", arguments: [.string(interface.name)])))
        }
        for target in uriMethods {
            for uri in values.uris + [
                HostileValues.mebibyte, "file:///" + HostileValues.mebibyte, HostileValues.percents,
            ] {
                calls.append(uriCall(target, uri: uri, &random))
            }
        }
        return calls
    }

    /// One random call of any category.
    func randomCall(_ random: inout HostileRandom) -> HostileCall {
        while true {
            let roll = random.int(0..<100)
            let (interface, method) = random.pick(allMethods)
            let made: HostileCall?
            switch roll {
            case 0..<25: made = rightSignatureCall(interface, method, &random)
            case 25..<40: made = propertiesCall(random.pick(["Get", "Set", "Set", "GetAll"]), &random)
            case 40..<46: made = missingArgumentsCall(interface, method, &random)
            case 46..<52: made = extraArgumentsCall(interface, method, &random)
            case 52..<62: made = wrongTypesCall(interface, method, &random)
            case 62..<66: made = unknownInterfaceCall(&random)
            case 66..<70: made = unknownMemberCall(&random)
            case 70..<75: made = noInterfaceCall(&random)
            case 75..<80: made = otherPathCall(&random)
            case 80..<82: made = deepVariantCall(&random)
            case 82..<90:
                made = uriMethods.isEmpty ? nil : uriCall(random.pick(uriMethods), uri: values.string(&random), &random)
            default: made = outOfRange.isEmpty ? nil : random.pick(outOfRange)
            }
            if let made { return made }
        }
    }

    func uriCall(
        _ target: (interface: HostileInterface, method: HostileMethod), uri: String, _ random: inout HostileRandom
    ) -> HostileCall {
        let arguments = zip(target.method.inTypes, target.method.inNames).map { type, name in
            name == "Uri" ? .string(uri) : values.value(of: type, &random)
        }
        return call(
            .uri, interface: target.interface.name, member: target.method.name, arguments,
            expect: expectation(interface: target.interface.name, member: target.method.name, arguments: arguments))
    }

    /// Calls the player must refuse for their values (all errors): out-of-range rates and
    /// volumes, bad loop statuses, paths that are not ids, unknown orderings, unsupported URIs.
    func outOfRangeCalls() -> [HostileCall] {
        var calls: [HostileCall] = []
        func set(_ property: String, _ value: Value) {
            guard
                let interface = objectInterfaces.first(where: {
                    $0.properties.contains { $0.name == property && $0.writable }
                })
            else { return }
            let arguments: [Value] = [.string(interface.name), .string(property), .variant(value)]
            calls.append(
                call(
                    .outOfRange, interface: Self.propertiesInterface, member: "Set", arguments,
                    expect: propertiesExpectation(member: "Set", arguments: arguments)))
        }
        for rate in [
            Double.nan, -.nan, .infinity, -.infinity, -1, -.greatestFiniteMagnitude, .greatestFiniteMagnitude,
            rates.upperBound * 2 + 1, rates.upperBound.nextUp, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 1e300,
        ]
        where rate.isNaN || !(rate == 0 || rates.contains(rate)) {
            set("Rate", .double(rate))
        }
        for volume in [Double.nan, -.nan, .signalingNaN, .infinity, -.infinity] { set("Volume", .double(volume)) }
        for status in [
            "", "none", "NONE", "Track ", "Loop", "Playlist\u{0}", HostileValues.mebibyte, HostileValues.percents,
            values.controlCharacters,
        ] {
            set("LoopStatus", .string(status))
        }
        func method(_ interface: String, _ member: String, _ arguments: [Value]) {
            guard let declared = self.interface(named: interface)?.methods.first(where: { $0.name == member }),
                declared.signature == arguments.map(\.type.signature).joined()
            else { return }
            calls.append(
                call(
                    .outOfRange, interface: interface, member: member, arguments,
                    expect: expectation(interface: interface, member: member, arguments: arguments)))
        }
        let badPaths = values.objectPaths.filter { !isID($0, under: values.trackPrefix) }
        for path in badPaths {
            method("org.mpris.MediaPlayer2.TrackList", "GoTo", [.objectPath(ObjectPath(path)!)])
            method("org.mpris.MediaPlayer2.TrackList", "RemoveTrack", [.objectPath(ObjectPath(path)!)])
        }
        for path in values.objectPaths where !isID(path, under: values.playlistPrefix) {
            method("org.mpris.MediaPlayer2.Playlists", "ActivatePlaylist", [.objectPath(ObjectPath(path)!)])
        }
        for order in ["", "alphabetical", "Nope", "creationdate", HostileValues.percents, HostileValues.mebibyte]
        where !orderings.contains(order) {
            method(
                "org.mpris.MediaPlayer2.Playlists", "GetPlaylists",
                [.uint32(0), .uint32(.max), .string(order), .boolean(true)])
        }
        for uri in values.unsupportedURIs + [HostileValues.mebibyte, HostileValues.percents] {
            method("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(uri)])
            method(
                "org.mpris.MediaPlayer2.TrackList", "AddTrack",
                [.string(uri), .objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!), .boolean(true)])
        }
        // Supported schemes, but the after-track is not an id.
        for uri in [
            "file:///nonexistent-quaver-hostile/a.flac", "http://127.0.0.1:1/a.flac",
            "file:///" + HostileValues.mebibyte,
        ] {
            method(
                "org.mpris.MediaPlayer2.TrackList", "AddTrack",
                [.string(uri), .objectPath(ObjectPath("/")!), .boolean(true)])
        }
        return calls
    }

    /// Every call expected to be refused, for the state check: wrong signatures of every
    /// method, wrong types and read-only Sets of every property, unknown names, other paths,
    /// out-of-range values and too-deep values.
    func rejectedBatch(_ random: inout HostileRandom) -> [HostileCall] {
        var calls: [HostileCall] = []
        for (interface, method) in allMethods where interface.name != Self.peerInterface {
            if let missing = missingArgumentsCall(interface, method, &random) { calls.append(missing) }
            if !method.inTypes.isEmpty {
                calls.append(
                    call(
                        .missingArguments, interface: interface.name, member: method.name, [],
                        expect: .error(HostileExpectation.invalidArgs)))
            }
            for _ in 0..<3 { calls.append(extraArgumentsCall(interface, method, &random)) }
            for _ in 0..<4 { calls.append(wrongTypesCall(interface, method, &random)) }
        }
        for (interface, property) in allProperties {
            // Properties.Set of this property to `value`, expecting one of `errors`.
            func set(_ kind: HostileCategory, _ value: Value, _ errors: String...) -> HostileCall {
                let arguments: [Value] = [.string(interface.name), .string(property.name), .variant(value)]
                let expected = HostileExpectation(successAllowed: false, errors: Set(errors))
                return call(kind, interface: Self.propertiesInterface, member: "Set", arguments, expect: expected)
            }
            func wrongType() -> Value {
                values.value(of: HostileValues.differentType(from: property.type, &random), &random, depth: 1)
            }
            if property.writable {
                for _ in 0..<4 { calls.append(set(.propertySetWrongType, wrongType(), HostileExpectation.invalidArgs)) }
                let wrapped = Value.variant(values.value(of: property.type, &random, depth: 1))
                calls.append(set(.propertySetWrongType, wrapped, HostileExpectation.invalidArgs))
            } else {
                let right = values.value(of: property.type, &random, depth: 1)
                calls.append(set(.readOnlySet, right, HostileExpectation.propertyReadOnly))
                calls.append(
                    set(.readOnlySet, wrongType(), HostileExpectation.propertyReadOnly, HostileExpectation.invalidArgs))
            }
        }
        for interface in objectInterfaces {
            for name in Self.unknownPropertyNames where !interface.properties.contains(where: { $0.name == name }) {
                calls.append(
                    call(
                        .unknownProperty, interface: Self.propertiesInterface, member: "Get",
                        [.string(interface.name), .string(name)],
                        expect: .error(HostileExpectation.unknownProperty)))
                calls.append(
                    call(
                        .unknownProperty, interface: Self.propertiesInterface, member: "Set",
                        [.string(interface.name), .string(name), .variant(.double(1))],
                        expect: .error(HostileExpectation.unknownProperty)))
            }
        }
        for name in Self.unknownInterfaceNames + ["", HostileValues.mebibyte] {
            calls.append(
                call(
                    .unknownProperty, interface: Self.propertiesInterface, member: "Get",
                    [.string(name), .string("Volume")], expect: .error(HostileExpectation.unknownInterface)))
            calls.append(
                call(
                    .unknownProperty, interface: Self.propertiesInterface, member: "Set",
                    [.string(name), .string("Volume"), .variant(.double(0))],
                    expect: .error(HostileExpectation.unknownInterface)))
            calls.append(
                call(
                    .unknownInterface, interface: Self.propertiesInterface, member: "GetAll", [.string(name)],
                    expect: .error(HostileExpectation.unknownInterface)))
        }
        for _ in 0..<40 { calls.append(unknownInterfaceCall(&random)) }
        for _ in 0..<40 { calls.append(unknownMemberCall(&random)) }
        for _ in 0..<40 {
            let other = otherPathCall(&random)
            if other.expectation.rejects { calls.append(other) }
        }
        for _ in 0..<30 { calls.append(deepVariantCall(&random)) }
        calls += outOfRange
        return calls
    }
}
