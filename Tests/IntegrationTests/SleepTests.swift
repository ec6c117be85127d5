import ChildProcess
import DBus
import Foundation
import TestKit
import Testing

/// logind on a private "system" bus: python-dbusmock's logind template, which hands out real
/// inhibitor descriptors and forgets an inhibitor when its descriptor is closed.
@MainActor
final class MockLogind {
    let bus: PrivateBus
    let client: Connection
    private var mock: ChildProcess?

    init() async throws {
        // dbusmock is a Debian package (python3-dbusmock): the system's Python has it.
        let python =
            FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
            ? URL(fileURLWithPath: "/usr/bin/python3") : Tools.find("python3")
        guard let python else { throw HarnessError("python3 is needed (scripts/setup installs it)") }
        bus = try await PrivateBus()
        let mock = try ChildProcess(
            shell:
                "DBUS_SYSTEM_BUS_ADDRESS=\(quoted(bus.address)) exec \(quoted(python.path)) -m dbusmock --system --template logind > /dev/null 2>&1"
        )
        self.mock = mock
        let client = try Connection(address: bus.address)
        self.client = client
        // Ready once it owns its name (nothing to wait on but the bus: a short poll, bounded).
        // Python with dbus-python and GLib takes seconds to start on a loaded machine.
        let owned = try await Waiter.poll(timeout: .seconds(60), every: .milliseconds(50)) {
            guard mock.isRunning else { return true }
            return try await client.call(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus",
                member: "NameHasOwner", arguments: [.string("org.freedesktop.login1")]
            ).first?.boolean == true
        }
        guard owned, mock.isRunning else {
            let exited = !mock.isRunning
            stop()
            throw HarnessError(
                exited
                    ? "python3 -m dbusmock --template logind exited at start (scripts/setup installs python3-dbusmock)"
                    : "python3 -m dbusmock --template logind did not own org.freedesktop.login1 within 60 s")
        }
    }

    var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": bus.address] }

    private static let path = ObjectPath("/org/freedesktop/login1")!

    /// The inhibitors logind holds: (what, who, why, mode).
    func inhibitors() async throws -> [[String]] {
        let reply = try await client.call(
            destination: "org.freedesktop.login1", path: Self.path, interface: "org.freedesktop.login1.Manager",
            member: "ListInhibitors")
        guard case .array(_, let items)? = reply.first else { return [] }
        return items.compactMap { item in
            guard case .structure(let fields) = item else { return nil }
            return fields.prefix(4).compactMap(\.string)
        }
    }

    /// Whether Quaver holds a sleep delay inhibitor.
    func quaverInhibits() async throws -> Bool {
        try await inhibitors().contains { $0.count == 4 && $0[0] == "sleep" && $0[1] == "Quaver" && $0[3] == "delay" }
    }

    /// Waits (a short poll, bounded) until `quaverInhibits()` is `held`.
    func waitForInhibitor(held: Bool, timeout: Duration = .seconds(20)) async throws -> Bool {
        try await Waiter.poll(timeout: timeout, every: .milliseconds(50)) { try await quaverInhibits() == held }
    }

    func prepareForSleep(_ sleeping: Bool) async throws {
        _ = try await client.call(
            destination: "org.freedesktop.login1", path: Self.path, interface: "org.freedesktop.DBus.Mock",
            member: "EmitSignal",
            arguments: [
                .string("org.freedesktop.login1.Manager"), .string("PrepareForSleep"), .string("b"),
                .array(.variant, [.variant(.boolean(sleeping))]),
            ])
    }

    func stop() {
        mock?.killAndWait()
        mock = nil
        client.close()
        bus.stop()
    }
}

/// Before system sleep Quaver pauses under a delay inhibitor, and it does not play on wake.
@Suite("system sleep")
@MainActor
struct SleepTests {
    /// A mock logind, and quaver playing a 30 s track with `arguments` until it shows
    /// `status` and holds its sleep inhibitor.
    private func launchedWithLogind(_ arguments: [String], status: String) async throws -> (MockLogind, Session) {
        let logind = try await MockLogind()
        let tracks = try await TestMedia.tracks(count: 1, seconds: 30)
        let session = try await Session()
        session.extraEnvironment = logind.environment
        do {
            try await session.launch([tracks[0].path] + arguments)
            try await session.waitForStatus(status)
            #expect(try await logind.waitForInhibitor(held: true), "Quaver takes a sleep delay inhibitor")
        } catch {
            session.stop()
            logind.stop()
            throw error
        }
        return (logind, session)
    }

    @Test(
        "PrepareForSleep pauses under a delay inhibitor, released once paused; on wake it stays paused and inhibits again"
    )
    func pausesBeforeSleep() async throws {
        let (logind, session) = try await launchedWithLogind([], status: "Playing")
        defer {
            session.stop()
            logind.stop()
        }

        let before = session.signals.count
        try await logind.prepareForSleep(true)
        try await session.waitForStatus("Paused", after: before, timeout: .seconds(10))
        #expect(try await logind.waitForInhibitor(held: false), "the inhibitor is released once paused")
        #expect(session.log().contains("the system is going to sleep; pausing"))

        let asleep = session.signals.count
        try await logind.prepareForSleep(false)
        #expect(try await logind.waitForInhibitor(held: true), "inhibits again after waking")
        #expect(try await session.get("PlaybackStatus").string == "Paused", "does not play on wake")
        #expect(!session.signals.dropFirst(asleep).contains { $0.changed["PlaybackStatus"] != nil })
    }

    @Test("sleeping while paused changes nothing and lets the system sleep at once")
    func sleepWhilePaused() async throws {
        let (logind, session) = try await launchedWithLogind(["--paused"], status: "Paused")
        defer {
            session.stop()
            logind.stop()
        }
        let before = session.signals.count
        try await logind.prepareForSleep(true)
        #expect(try await logind.waitForInhibitor(held: false))
        #expect(!session.signals.dropFirst(before).contains { $0.changed["PlaybackStatus"] != nil })
    }

    @Test("without a system bus Quaver plays as before")
    func noSystemBus() async throws {
        let tracks = try await TestMedia.tracks(count: 1, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        session.extraEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/quaver-no-system-bus"]
        try await session.launch([tracks[0].path, "--log-level", "debug"])
        try await session.waitForStatus("Playing")
        #expect(session.log().contains("no system bus"))
    }
}
