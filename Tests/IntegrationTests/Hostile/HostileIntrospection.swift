import DBus
import Foundation
import TestKit

#if canImport(FoundationXML)
    import FoundationXML
#endif

// The object's interfaces as the live introspection document declares them: what
// `HostilePlanner` builds its calls from, and what the health check compares against.

// MARK: - Declarations from introspection

struct HostileInterface {
    var name: String
    var methods: [HostileMethod] = []
    var properties: [HostileProperty] = []
}

struct HostileMethod {
    var name: String
    var inTypes: [DataType] = []
    var inNames: [String] = []
    var signature: String { inTypes.map(\.signature).joined() }
}

struct HostileProperty {
    var name: String
    var type: DataType
    var writable: Bool
}

/// Reads `<interface>`, `<method>`/`<arg direction="in">` and `<property>` out of an
/// introspection document with Foundation's XMLParser.
final class HostileIntrospectionParser: NSObject, XMLParserDelegate {
    private(set) var interfaces: [HostileInterface] = []
    private(set) var children: [String] = []
    private(set) var problems: [String] = []
    private var depth = 0
    private var currentInterface: HostileInterface?
    private var currentMethod: HostileMethod?

    static func parse(_ xml: String) throws -> (interfaces: [HostileInterface], children: [String]) {
        let delegate = HostileIntrospectionParser()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        guard parser.parse() else {
            throw HarnessError("introspection XML does not parse: \(parser.parserError.map { "\($0)" } ?? "?")")
        }
        guard delegate.problems.isEmpty else {
            throw HarnessError("introspection XML: \(delegate.problems.joined(separator: "; "))")
        }
        return (delegate.interfaces, delegate.children)
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes: [String: String] = [:]
    ) {
        depth += 1
        switch elementName {
        case "interface":
            currentInterface = HostileInterface(name: attributes["name"] ?? "")
        case "method":
            currentMethod = HostileMethod(name: attributes["name"] ?? "")
        case "arg" where currentMethod != nil:
            // Method arguments are "in" unless they say otherwise.
            guard (attributes["direction"] ?? "in") == "in" else { return }
            do {
                currentMethod?.inTypes.append(try DataType(parsing: attributes["type"] ?? ""))
                currentMethod?.inNames.append(attributes["name"] ?? "")
            } catch {
                problems.append("method \(currentMethod?.name ?? "?"): \(error)")
            }
        case "property":
            do {
                let type = try DataType(parsing: attributes["type"] ?? "")
                currentInterface?.properties.append(
                    HostileProperty(
                        name: attributes["name"] ?? "", type: type,
                        writable: (attributes["access"] ?? "").contains("write")))
            } catch {
                problems.append("property \(attributes["name"] ?? "?"): \(error)")
            }
        case "node" where depth == 2:
            if let name = attributes["name"] { children.append(name) }
        default:
            break
        }
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        depth -= 1
        switch elementName {
        case "interface":
            if let currentInterface { interfaces.append(currentInterface) }
            currentInterface = nil
        case "method":
            if let currentMethod { currentInterface?.methods.append(currentMethod) }
            currentMethod = nil
        default:
            break
        }
    }
}
