import DBus
import Foundation
import Testing

// What must hold after any hostile input, whatever the daemon answered: it still runs,
// answers with its declared types, executed nothing it was handed, and logged nothing
// critical, forged or oversized.

extension HostileFixture {
    /// Still running; GetAll of every interface answers every declared property with its
    /// exact type; the declarations are as they were; nothing was executed; no critical log.
    func expectHealthy(_ planner: HostilePlanner, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(
            session.daemonStatus == nil,
            "quaver exited (status \(session.daemonStatus ?? 0)); log tail:\n\(String(session.log().suffix(3000)))",
            sourceLocation: sourceLocation)
        try #require(session.daemonStatus == nil, sourceLocation: sourceLocation)
        let now = try await introspect()
        #expect(
            now.map(\.name) == planner.interfaces.map(\.name), "the interfaces changed", sourceLocation: sourceLocation)
        for interface in now {
            let reply = try await session.call(
                "GetAll", interface: HostilePlanner.propertiesInterface, [.string(interface.name)])
            guard case .dictionary(.string, .variant, _)? = reply.first, let all = reply.first?.stringVariantDictionary
            else {
                Issue.record(
                    "GetAll(\(interface.name)) answered \(reply.map { HostileFormat.describe($0) })",
                    sourceLocation: sourceLocation)
                continue
            }
            let declared = Dictionary(uniqueKeysWithValues: interface.properties.map { ($0.name, $0.type.signature) })
            #expect(
                all.mapValues(\.type.signature) == declared, "GetAll(\(interface.name)) types",
                sourceLocation: sourceLocation)
            for property in interface.properties {
                let value = try await session.call(
                    "Get", interface: HostilePlanner.propertiesInterface,
                    [.string(interface.name), .string(property.name)])
                guard case .variant(let inner)? = value.first else {
                    Issue.record(
                        "Get(\(interface.name).\(property.name)) answered \(value)", sourceLocation: sourceLocation)
                    continue
                }
                #expect(
                    inner.type.signature == property.type.signature,
                    "Get(\(interface.name).\(property.name)) has type \(inner.type)", sourceLocation: sourceLocation)
            }
        }
        expectNothingExecuted(sourceLocation: sourceLocation)
        let lines = (session.previousLogs + session.log()).split(whereSeparator: { $0 == "\n" || $0 == "\r" })
        // GStreamer 1.22's playbin2, taken down while a stream's decoder is being plugged
        // (OpenUri, Next and Stop thousands of times at full speed), sometimes fails to stop
        // that element's streaming thread and says so; the pipeline recovers at the next state
        // change. A known limit of playbin2 (docs/known-limits.md), not of this daemon's
        // input handling, which is what this test is about: counted, not failed on.
        let known = lines.filter { $0.contains("GStreamer-CRITICAL") && $0.contains("Failed to deactivate pad") }
        let bad = lines.filter { line in
            let lower = line.lowercased()
            // Hostile strings carry a forged "critical" line; checked on its own below.
            return (lower.contains("critical") && !lower.contains("forged log line") && !known.contains(line))
                || lower.contains("fatal error") || lower.contains("segmentation fault")
        }
        if !known.isEmpty {
            print(
                "hostile bus: GStreamer's known playbin2 critical seen \(known.count) time(s): \(known.first.map { String($0.prefix(200)) } ?? "")"
            )
        }
        #expect(
            bad.isEmpty, "the log has critical lines: \(bad.prefix(5).map { String($0.prefix(300)) })",
            sourceLocation: sourceLocation)
        if let first = bad.first, let at = lines.firstIndex(where: { $0 == first }) {
            print(
                "hostile bus: the log before the first critical line:\n"
                    + lines[max(0, at - 40)...at].map { String($0.prefix(300)) }.joined(separator: "\n"))
        }
        // A client's string must not start a log line of its own (log forging).
        let forged = lines.filter { $0.hasPrefix("quaver[critical]: forged log line") }
        #expect(
            forged.count == 0,
            "\(forged.count) log lines forged by strings sent over D-Bus (line breaks in logged client input), e.g. \(forged.first.map { String($0.prefix(200)) } ?? "")",
            sourceLocation: sourceLocation)
        // Nor flood it: what a client sends is logged in a bounded length.
        let longest = lines.map(\.utf8.count).max() ?? 0
        #expect(
            longest <= 16 << 10, "a log line of \(longest) bytes (client input logged whole)",
            sourceLocation: sourceLocation)
    }

    func expectNothingExecuted(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            !FileManager.default.fileExists(atPath: canary.path), "\(canary.path) exists",
            sourceLocation: sourceLocation)
        #expect(
            !FileManager.default.fileExists(atPath: pipelineTarget.path), "\(pipelineTarget.path) exists",
            sourceLocation: sourceLocation)
        if !pwnedExisted {
            #expect(
                !FileManager.default.fileExists(atPath: "/tmp/pwned"), "/tmp/pwned exists",
                sourceLocation: sourceLocation)
        }
    }
}
