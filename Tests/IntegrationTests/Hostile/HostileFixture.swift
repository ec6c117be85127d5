import DBus
import Foundation
import TestKit
import Testing

/// One paused quaver on three short tracks with a playlists folder, a canary folder for
/// files that must never appear, and an open descriptor to send as `h`.
@MainActor
final class HostileFixture {
    let session: Session
    let folder: URL
    let canary: URL
    let pipelineTarget: URL
    let descriptor: Int32
    /// `/tmp/pwned` existed before the test (someone else's): it cannot be checked.
    let pwnedExisted = FileManager.default.fileExists(atPath: "/tmp/pwned")

    private init(session: Session) throws {
        self.session = session
        folder = session.bus.directory.appendingPathComponent("hostile", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        canary = folder.appendingPathComponent("pwned")
        pipelineTarget = folder.appendingPathComponent("x")
        descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// - Parameter systemSchemas: give the session's `XDG_DATA_DIRS` the system's compiled
    ///   GSettings schemas, as a desktop session has (the harness's bare data folder has
    ///   none, and GIO aborts the process when an http stream asks for the proxy settings).
    static func launch(systemSchemas: Bool = true) async throws -> HostileFixture {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let fixture = try HostileFixture(session: session)
        let compiled = "/usr/share/glib-2.0/schemas/gschemas.compiled"
        if systemSchemas, FileManager.default.fileExists(atPath: compiled) {
            let schemas = session.home.appendingPathComponent("system-share/glib-2.0/schemas", isDirectory: true)
            try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: schemas.appendingPathComponent("gschemas.compiled").path, withDestinationPath: compiled)
        }
        let playlists = fixture.folder.appendingPathComponent("playlists", isDirectory: true)
        try FileManager.default.createDirectory(at: playlists, withIntermediateDirectories: true)
        try Data((tracks.map(\.path).joined(separator: "\n") + "\n").utf8).write(
            to: playlists.appendingPathComponent("all.m3u"))
        try Data("\(tracks[1].path)\n".utf8).write(to: playlists.appendingPathComponent("one.m3u8"))
        try session.writeConfig("playlists-folder = \(playlists.path)\n")
        do {
            try await session.launch(["--paused"] + tracks.map(\.path))
            try await session.waitForStatus("Paused")
        } catch {
            fixture.stop()
            throw error
        }
        return fixture
    }

    func stop() {
        if descriptor >= 0 { close(descriptor) }
        if let status = session.daemonStatus, status != 0 || !quitAsked {
            print(
                "hostile bus: quaver exited with status \(status); its log ends:\n\(String(session.log().suffix(2500)))"
            )
        }
        session.stop()
    }
    private var quitAsked = false

    /// Quit answers, and the daemon exits with status 0 (no crash).
    func quitCleanly(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        quitAsked = true
        _ = try await session.call("Quit", interface: "org.mpris.MediaPlayer2")
        let status = try await session.waitForExit(timeout: .seconds(15))
        #expect(
            status == 0, "quaver exited with status \(status); log tail:\n\(String(session.log().suffix(3000)))",
            sourceLocation: sourceLocation)
    }

    // MARK: Declarations and state

    func introspect() async throws -> [HostileInterface] {
        let xml = try #require(
            try await session.call("Introspect", interface: HostilePlanner.introspectableInterface).first?.string)
        return try HostileIntrospectionParser.parse(xml).interfaces
    }

    func planner() async throws -> HostilePlanner {
        let interfaces = try await introspect()
        let metadata = try await session.metadata()
        let trackID = metadata["mpris:trackid"]?.objectPath?.rawValue ?? "/quaver/track/1"
        let trackPrefix = String(trackID[..<(trackID.lastIndex(of: "/") ?? trackID.endIndex)])
        var playlistPrefix = trackPrefix.replacingOccurrences(of: "/track", with: "/playlist")
        var orderings: [String] = []
        if interfaces.contains(where: { $0.name == "org.mpris.MediaPlayer2.Playlists" }) {
            orderings =
                try await session.get("Orderings", interface: "org.mpris.MediaPlayer2.Playlists").stringArray ?? []
            let reply = try await session.call(
                "GetPlaylists", interface: "org.mpris.MediaPlayer2.Playlists",
                [.uint32(0), .uint32(1), .string(orderings.first ?? "Alphabetical"), .boolean(false)])
            if case .array(_, let items)? = reply.first, case .structure(let fields)? = items.first,
                let id = fields.first?.objectPath?.rawValue
            {
                playlistPrefix = String(id[..<(id.lastIndex(of: "/") ?? id.endIndex)])
            }
        }
        let schemes =
            try await session.get("SupportedUriSchemes", interface: "org.mpris.MediaPlayer2").stringArray ?? []
        let minimum = try await session.get("MinimumRate").double ?? 1
        let maximum = try await session.get("MaximumRate").double ?? 1
        let values = HostileValues(
            canary: canary.path, descriptor: descriptor, trackPrefix: trackPrefix, playlistPrefix: playlistPrefix)
        return HostilePlanner(
            interfaces: interfaces, values: values, supportedSchemes: schemes, rates: minimum...maximum,
            orderings: orderings)
    }

    /// Every property of every interface, by "interface.property", Position left out.
    func state() async throws -> [String: Value] {
        var state: [String: Value] = [:]
        for interface in try await introspect() where !HostilePlanner.standardInterfaces.contains(interface.name) {
            let reply = try await session.call(
                "GetAll", interface: HostilePlanner.propertiesInterface, [.string(interface.name)])
            for (name, value) in reply.first?.stringVariantDictionary ?? [:] where name != "Position" {
                state["\(interface.name).\(name)"] = value
            }
        }
        return state
    }

    /// The state once it has stopped changing (tags and playlists are read in the background).
    func settledState() async throws -> [String: Value] {
        // Settled: two reads 250 ms apart that are the same.
        var previous: [String: Value]?
        let settled = try await Waiter.poll(timeout: .seconds(30), every: .milliseconds(250)) {
            let current = try await state()
            defer { previous = current }
            return current == previous
        }
        guard settled, let previous else { throw HarnessError("the daemon's state did not settle") }
        return previous
    }
}
