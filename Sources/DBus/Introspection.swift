#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Generates introspection XML from interface declarations.
enum Introspection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    /// Declarations of the standard interfaces every exported object implements
    /// (used for introspection only; `ExportedObject` dispatches them itself).
    @MainActor static let standardInterfaces: [Interface] = {
        let noop: @MainActor ([Value]) throws(BusError) -> [Value] = { _ in [] }
        return [
            Interface(
                ExportedObject.introspectableInterface,
                methods: [Method("Introspect", out: [Argument("xml_data", .string)], handler: noop)]),
            Interface(
                ExportedObject.peerInterface,
                methods: [
                    Method("Ping", handler: noop),
                    Method("GetMachineId", out: [Argument("machine_uuid", .string)], handler: noop),
                ]),
            Interface(
                ExportedObject.propertiesInterface,
                methods: [
                    Method(
                        "Get", in: [Argument("interface_name", .string), Argument("property_name", .string)],
                        out: [Argument("value", .variant)], handler: noop),
                    Method(
                        "GetAll", in: [Argument("interface_name", .string)],
                        out: [Argument("properties", .dictionary(key: .string, value: .variant))], handler: noop),
                    Method(
                        "Set",
                        in: [
                            Argument("interface_name", .string), Argument("property_name", .string),
                            Argument("value", .variant),
                        ], handler: noop),
                ],
                signals: [
                    SignalDeclaration(
                        "PropertiesChanged",
                        [
                            Argument("interface_name", .string),
                            Argument("changed_properties", .dictionary(key: .string, value: .variant)),
                            Argument("invalidated_properties", .array(.string)),
                        ])
                ]),
        ]
    }()

    @MainActor static func xml(interfaces: [Interface], children: [String]) -> String {
        var out = doctype + "\n<node>\n"
        for interface in interfaces { out += interfaceXML(interface) }
        for child in children { out += "  <node name=\"\(escape(child))\"/>\n" }
        out += "</node>\n"
        return out
    }

    @MainActor static func interfaceXML(_ interface: Interface) -> String {
        var out = "  <interface name=\"\(escape(interface.name))\">\n"
        for method in interface.methods {
            let args = method.inArguments.map { ($0, "in") } + method.outArguments.map { ($0, "out") }
            if args.isEmpty {
                out += "    <method name=\"\(escape(method.name))\"/>\n"
            } else {
                out += "    <method name=\"\(escape(method.name))\">\n"
                for (arg, direction) in args {
                    out +=
                        "      <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.type.signature))\" direction=\"\(direction)\"/>\n"
                }
                out += "    </method>\n"
            }
        }
        for signal in interface.signals {
            if signal.arguments.isEmpty {
                out += "    <signal name=\"\(escape(signal.name))\"/>\n"
            } else {
                out += "    <signal name=\"\(escape(signal.name))\">\n"
                for arg in signal.arguments {
                    out += "      <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.type.signature))\"/>\n"
                }
                out += "    </signal>\n"
            }
        }
        for property in interface.properties {
            let open =
                "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.type.signature))\" access=\"\(property.access)\""
            if property.emitsChangedSignal == .true {
                out += open + "/>\n"
            } else {
                out += open + ">\n"
                out +=
                    "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(property.emitsChangedSignal.rawValue)\"/>\n"
                out += "    </property>\n"
            }
        }
        out += "  </interface>\n"
        return out
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    /// The machine id for `Peer.GetMachineId` (libdbus answers Peer itself on a real bus;
    /// this serves in-process dispatch). Read with the C library: the module links no
    /// Foundation, so that adopters' programs map none of it.
    static var machineID: String {
        for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let text = smallTextFile(path) {
                let trimmed = text.trimmingWhitespace()
                if !trimmed.isEmpty { return trimmed }
            }
        }
        return String(repeating: "0", count: 32)
    }

    /// The first 4 KiB of a file as UTF-8, or nil when it cannot be read or is not UTF-8.
    /// A machine id is 33 bytes.
    static func smallTextFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            count += got
        }
        // transcode reports invalid UTF-8 on every platform; String(validating:) would need macOS 15.
        let text = bytes[..<count]
        guard !transcode(text.makeIterator(), from: UTF8.self, to: UTF8.self, stoppingOnError: true, into: { _ in })
        else { return nil }
        return String(decoding: text, as: UTF8.self)
    }
}

extension String {
    /// The string without leading and trailing white space and line breaks, as Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`: general category Z*, U+0009 to
    /// U+000D and U+0085.
    func trimmingWhitespace() -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.properties.generalCategory {
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: true
            default: ("\t"..."\r").contains(scalar) || scalar == "\u{85}"
            }
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}
