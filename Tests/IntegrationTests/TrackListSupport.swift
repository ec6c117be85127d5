import DBus
import Dispatch
import Foundation
import TestKit
import Testing

/// Records, in arrival order, every signal of the TrackList and Playlists interfaces and
/// every PropertiesChanged of those two interfaces (so that `TrackAdded` and the
/// `Tracks` invalidation that follows it are in one stream). Create it right after the
/// `Session`, before `launch`, so that nothing is missed.
@MainActor
final class TrackListSignals {
    private(set) var events: [Session.RecordedSignal] = []
    private let waiter: Waiter
    private let log: () -> String

    init(_ session: Session) throws {
        waiter = session.waiter
        log = { [weak session] in session?.log() ?? "" }
        let path = ObjectPath("/org/mpris/MediaPlayer2")!
        for interface in [MPRISNames.trackList, MPRISNames.playlists] {
            try session.client.onSignal(interface: interface, path: path) { [weak self] message in
                self?.record(message)
            }
        }
        try session.client.onSignal(
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", path: path
        ) { [weak self] message in
            let interface = message.arguments.first?.string
            guard interface == MPRISNames.trackList || interface == MPRISNames.playlists else { return }
            self?.record(message)
        }
    }

    private func record(_ message: Message) {
        events.append(RecordedSignal(message))
        waiter.poke()
    }

    var count: Int { events.count }

    /// Waits for a recorded event satisfying `match` at index `from` or later.
    @discardableResult
    func wait(
        after from: Int, timeout: Duration = .seconds(30), _ what: String,
        where match: @escaping (Session.RecordedSignal) -> Bool
    ) async throws -> Session.RecordedSignal {
        let found = await waiter.wait(timeout: timeout) { [unowned self] in
            events.dropFirst(from).contains(where: match)
        }
        guard found, let event = events.dropFirst(from).first(where: match) else {
            throw HarnessError(
                "no \(what) within \(timeout); track list signals since #\(from): \(events.dropFirst(from).map(\.description))\nlog:\n\(log())"
            )
        }
        return event
    }

    /// Waits until `check` holds for the events recorded so far.
    func wait(
        timeout: Duration = .seconds(30), _ what: String, until check: @escaping ([Session.RecordedSignal]) -> Bool
    ) async throws {
        let done = await waiter.wait(timeout: timeout) { [unowned self] in check(events) }
        guard done else {
            throw HarnessError(
                "\(what) did not happen within \(timeout); track list signals: \(events.map(\.description))\nlog:\n\(log())"
            )
        }
    }

    /// `Tracks` invalidated since `from`.
    func tracksInvalidated(after from: Int) -> Bool {
        events.dropFirst(from).contains { $0.isTracksInvalidation }
    }

    func members(after from: Int) -> [String] {
        events.dropFirst(from).filter { $0.member != "PropertiesChanged" }.map(\.member)
    }

    /// The edits of the window announced since `from`: TrackAdded, TrackRemoved,
    /// TrackListReplaced (not TrackMetadataChanged, which tags read late may cause).
    func edits(after from: Int) -> [String] {
        members(after: from).filter { ["TrackAdded", "TrackRemoved", "TrackListReplaced"].contains($0) }
    }

    /// A client's copy of `Tracks` built from every event recorded so far.
    func replayed() -> [ObjectPath] {
        var model: [ObjectPath] = []
        for event in events { _ = Self.apply(event, to: &model) }
        return model
    }

    /// Waits until the signals announced a window of `count` entries (the queue given at
    /// start-up is loaded in the background).
    func waitForWindow(of count: Int, timeout: Duration = .seconds(30)) async throws {
        try await wait(timeout: timeout, "a window of \(count) announced") { [unowned self] _ in
            replayed().count == count
        }
    }

    /// Applies `TrackListReplaced`, `TrackAdded` and `TrackRemoved` to a client's copy of
    /// `Tracks`, as a client following the spec would. Returns a problem found on the way
    /// (an `after` id the copy does not have, an id added twice), or nil.
    static func apply(_ event: Session.RecordedSignal, to model: inout [ObjectPath]) -> String? {
        switch event.member {
        case "TrackListReplaced":
            model = event.arguments.first?.objectPaths ?? []
        case "TrackAdded":
            guard let id = event.arguments.first?.stringVariantDictionary?["mpris:trackid"]?.objectPath,
                let after = event.arguments.dropFirst().first?.objectPath
            else { return "malformed \(event)" }
            if model.contains(id) { return "\(id) added while already in the copy: \(event)" }
            if after == MPRISNames.noTrack {
                model.insert(id, at: 0)
            } else if let index = model.firstIndex(of: after) {
                model.insert(id, at: index + 1)
            } else {
                return "TrackAdded after \(after), which the copy does not have: \(event)"
            }
        case "TrackRemoved":
            guard let id = event.arguments.first?.objectPath else { return "malformed \(event)" }
            guard model.contains(id) else { return "TrackRemoved(\(id)), which the copy does not have" }
            model.removeAll { $0 == id }
        default:
            break
        }
        return nil
    }
}

extension Session.RecordedSignal {
    /// For PropertiesChanged: the invalidated names.
    var invalidated: [String] { arguments.count > 2 ? arguments[2].stringArray ?? [] : [] }

    var isTracksInvalidation: Bool {
        member == "PropertiesChanged" && changedInterface == MPRISNames.trackList && invalidated.contains("Tracks")
    }
}

/// Holds the exit status of a spawned process, for the main actor.
@MainActor
final class ExitBox {
    var status: Int32?
}

extension Session {
    // MARK: TrackList calls

    func trackListTracks() async throws -> [ObjectPath] {
        try await get("Tracks", interface: MPRISNames.trackList).objectPaths
    }

    func tracksMetadata(_ ids: [ObjectPath]) async throws -> [[String: Value]] {
        let reply = try await call(
            "GetTracksMetadata", interface: MPRISNames.trackList, [.array(.objectPath, ids.map(Value.objectPath))])
        guard case .array(_, let maps)? = reply.first else { throw HarnessError("GetTracksMetadata answered \(reply)") }
        return maps.map { $0.stringVariantDictionary ?? [:] }
    }

    /// Whether the tags of every track in `ids` are read (each has its length).
    func tagsRead(_ ids: [ObjectPath]) async throws -> Bool {
        try await !tracksMetadata(ids).contains(where: { $0["mpris:length"] == nil })
    }

    /// The `xesam:url` of each id, in order (ids not queued are left out by the daemon).
    func trackURLs(_ ids: [ObjectPath]) async throws -> [String] {
        try await tracksMetadata(ids).map { $0["xesam:url"]?.string ?? "?" }
    }

    func addTrack(_ uri: String, after: ObjectPath, setAsCurrent: Bool) async throws {
        _ = try await call(
            "AddTrack", interface: MPRISNames.trackList, [.string(uri), .objectPath(after), .boolean(setAsCurrent)])
    }

    func removeTrack(_ id: ObjectPath) async throws {
        _ = try await call("RemoveTrack", interface: MPRISNames.trackList, [.objectPath(id)])
    }

    func goTo(_ id: ObjectPath) async throws {
        _ = try await call("GoTo", interface: MPRISNames.trackList, [.objectPath(id)])
    }

    func currentTrackID() async throws -> ObjectPath? {
        try await metadata()["mpris:trackid"]?.objectPath
    }

    /// Waits for a Player PropertiesChanged whose Metadata has `mpris:trackid` == `id`.
    @discardableResult
    func waitForCurrent(_ id: ObjectPath, after from: Int, timeout: Duration = .seconds(30)) async throws
        -> RecordedSignal
    {
        try await waitForPlayerChange(after: from, timeout: timeout, "Metadata of \(id)") {
            $0["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath == id
        }
    }

    /// Waits for a Player PropertiesChanged with a Metadata other than `id`'s; returns the new id.
    func waitForTrackChange(from id: ObjectPath?, after from: Int, timeout: Duration = .seconds(30)) async throws
        -> ObjectPath
    {
        let signal = try await waitForPlayerChange(
            after: from, timeout: timeout, "Metadata of a track other than \(id?.rawValue ?? "none")"
        ) {
            guard let new = $0["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath else { return false }
            return new != id
        }
        return try #require(signal.changed["Metadata"]?.stringVariantDictionary?["mpris:trackid"]?.objectPath)
    }

    /// Whether any Player PropertiesChanged since `from` carried a Metadata.
    func metadataChanged(after from: Int) -> Bool {
        signals.dropFirst(from).contains {
            $0.member == "PropertiesChanged" && $0.changedInterface == MPRISNames.player
                && $0.changed["Metadata"] != nil
        }
    }

    /// The PlaybackStatus values signalled since `from`.
    func statusesSignalled(after from: Int) -> [String] {
        signals.dropFirst(from).compactMap {
            $0.changedInterface == MPRISNames.player ? $0.changed["PlaybackStatus"]?.string : nil
        }
    }

    /// The same track id prefix the daemon uses (`/<name>/track`), learnt from a real id.
    static func trackIDPrefix(of id: ObjectPath) -> String {
        String(id.rawValue[..<(id.rawValue.lastIndex(of: "/") ?? id.rawValue.endIndex)])
    }

    // MARK: Other processes

    /// Runs `quaver --audio-sink … --name <name> ARGS` on this bus and waits for it to exit.
    func runQuaver(_ arguments: [String], timeout: Duration = .seconds(15)) async throws -> (
        status: Int32, output: String, elapsed: Duration
    ) {
        let log = bus.directory.appendingPathComponent("run-\(UUID().uuidString).log")
        let started = ContinuousClock.now
        let box = ExitBox()
        let process = try spawn(arguments, log: log)
        process.onExit { [weak self] status in
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    box.status = status
                    self?.waiter.poke()
                }
            }
        }
        let exited = await waiter.wait(timeout: timeout) { box.status != nil }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard exited, let status = box.status else {
            throw HarnessError("quaver \(arguments) did not exit within \(timeout); it printed:\n\(output)")
        }
        return (status, output, ContinuousClock.now - started)
    }
}

/// Expects `body` to fail with the D-Bus error `name`; `what`, when given, names the call in
/// failure messages (its first 300 characters: a hostile argument may be megabytes long).
@MainActor
func expectMPRISError(
    _ name: String, _ what: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let call = what.map { "\($0.prefix(300)): " } ?? ""
    do {
        try await body()
        Issue.record("\(call)expected \(name), got a reply", sourceLocation: sourceLocation)
    } catch let error as BusError {
        #expect(error.name.rawValue == name, "\(call)\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(call)expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}
