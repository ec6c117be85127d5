import DBus
import Foundation
import TestKit
import Testing

/// Install, D-Bus activation, the user unit and `quaver doctor`.
@Suite("desktop integration")
@MainActor
struct DesktopIntegrationTests {
    static let repository = DaemonTests.repository

    /// Runs `scripts/install` (or `--uninstall`) for the session's home, with the built binary.
    @discardableResult
    static func install(_ session: Session, prefix: URL? = nil, uninstall: Bool = false) async throws -> String {
        var environment = session.environment
        environment["PREFIX"] = (prefix ?? session.home.appendingPathComponent(".local")).path
        environment["QUAVER_BINARY"] = Tools.quaver.path
        let result = try await Tools.run(
            URL(fileURLWithPath: "/bin/bash"),
            [repository.appendingPathComponent("scripts/install").path] + (uninstall ? ["--uninstall"] : []),
            environment: environment)
        guard result.status == 0 else {
            throw HarnessError("scripts/install failed (\(result.status)): \(result.error)")
        }
        return result.output
    }

    static let installedFiles = [
        "bin/quaver", "share/systemd/user/quaver.service",
        "share/dbus-1/services/org.mpris.MediaPlayer2.quaver.service", "share/applications/quaver.desktop",
        "share/icons/hicolor/scalable/apps/quaver.svg", "share/bash-completion/completions/quaver",
        "share/zsh/site-functions/_quaver", "share/fish/vendor_completions.d/quaver.fish",
        "share/man/man1/quaver.1", "share/doc/quaver/quaver.conf.example", "lib/quaver/snapcast-control",
    ]

    @Test("install puts every file under the prefix with the real paths filled in; uninstall removes them")
    func installAndUninstall() async throws {
        let session = try await Session()
        defer { session.stop() }
        let prefix = session.home.appendingPathComponent(".local")
        try await Self.install(session)
        for file in Self.installedFiles {
            let path = prefix.appendingPathComponent(file).path
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
            #expect((size ?? 0) > 0, "\(file) is missing or empty")
        }
        let bin = prefix.appendingPathComponent("bin/quaver").path
        #expect(FileManager.default.isExecutableFile(atPath: bin))
        let unit = try String(
            contentsOf: prefix.appendingPathComponent("share/systemd/user/quaver.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=\(bin) --paused"))
        #expect(unit.contains("Type=dbus") && unit.contains("BusName=org.mpris.MediaPlayer2.quaver"))
        #expect(!unit.contains("@BINDIR@"))
        let control = prefix.appendingPathComponent("lib/quaver/snapcast-control").path
        #expect(FileManager.default.isExecutableFile(atPath: control))
        #expect(try String(contentsOfFile: control, encoding: .utf8).contains("exec \(bin) snapcast-control \"$@\""))
        let activation = try String(
            contentsOf: prefix.appendingPathComponent("share/dbus-1/services/org.mpris.MediaPlayer2.quaver.service"),
            encoding: .utf8)
        #expect(activation.contains("Exec=\(bin) --paused") && activation.contains("SystemdService=quaver.service"))
        let desktop = try String(
            contentsOf: prefix.appendingPathComponent("share/applications/quaver.desktop"), encoding: .utf8)
        #expect(
            desktop.contains("Exec=\(bin) --instance quit") && desktop.contains("NoDisplay=true")
                && desktop.contains("Icon=quaver"))
        let version = try await Tools.run(URL(fileURLWithPath: bin), ["--version"], environment: session.environment)
        // The installed binary is the one built here: the same version, read from one place.
        let built = try await Tools.run(Tools.quaver, ["--version"], environment: session.environment)
        #expect(!built.output.isEmpty && version.output == built.output, "\(version.output) \(built.output)")

        try await Self.install(session, uninstall: true)
        for file in Self.installedFiles {
            #expect(
                !FileManager.default.fileExists(atPath: prefix.appendingPathComponent(file).path),
                "\(file) is left behind")
        }
    }

    @Test("the installed unit passes systemd-analyze verify with an exposure of 3.0 or lower")
    func unitIsVerifiedAndHardened() async throws {
        let session = try await Session()
        defer { session.stop() }
        try await Self.install(session)
        let unit = session.home.appendingPathComponent(".local/share/systemd/user/quaver.service").path
        guard let analyze = Tools.find("systemd-analyze") else {
            throw HarnessError("systemd-analyze is not installed")
        }
        var environment = session.environment
        let runtime = session.home.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(
            at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment["XDG_RUNTIME_DIR"] = runtime.path
        // Not in a greeter's session nor for other system users: the package enables it for all.
        let written = try String(contentsOfFile: unit, encoding: .utf8)
        #expect(written.split(separator: "\n").contains("ConditionUser=!@system"), "\(written)")
        let verify = try await Tools.run(analyze, ["verify", "--user", "--man=no", unit], environment: environment)
        #expect(verify.status == 0, "\(verify.output)\(verify.error)")
        #expect(!(verify.output + verify.error).contains("quaver.service:"), "\(verify.output)\(verify.error)")
        let security = try await Tools.run(
            analyze, ["security", "--user", "--offline=true", "--no-pager", unit], environment: environment)
        let text = security.output + security.error
        let line = try #require(text.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(text)")
        let score = line.split(separator: " ").compactMap { Double($0) }.first ?? 99
        #expect(score <= 3.0, "\(line)")
    }

    @Test("a call to org.mpris.MediaPlayer2.quaver starts it through D-Bus activation")
    func activation() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session(activation: true)
        defer { session.stop() }
        try await Self.install(session)
        try session.writeConfig(
            "audio-sink = fakesink sync=true\nmusic-folder = \(tracks[0].deletingLastPathComponent().path)\n")
        let activatable = try await session.client.call(
            destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
            interface: "org.freedesktop.DBus",
            member: "ListActivatableNames")
        #expect(activatable.first?.stringArray?.contains(session.busName) == true)
        #expect(session.owners[session.busName] == nil)

        // What media-key daemons and scripts do: call the name. (playerctl lists running
        // players only, so it cannot be the one that starts Quaver.)
        _ = try await session.call("Play")
        try await session.waitForStatus("Playing")
        #expect(try await session.playerctl("status") == "Playing")
        #expect(try await session.playerctl("metadata", "title") == "Track 1")
    }

    // MARK: - doctor

    func doctor(_ session: Session, environment: [String: String]? = nil) async throws -> (status: Int32, text: String)
    {
        let result = try await Tools.run(
            Tools.quaver, ["doctor", "--name", session.name], environment: environment ?? session.environment)
        return (result.status, result.output + result.error)
    }

    func line(_ text: String, _ title: String) -> String {
        text.split(separator: "\n").first { $0.contains(" \(title) ") }.map(String.init) ?? "(no \(title) line)"
    }

    @Test("doctor is a subcommand of the parser: quaver --help lists it, its --help and its errors are the parser's")
    func doctorIsASubcommand() async throws {
        let session = try await Session()
        defer { session.stop() }
        let root = try await Tools.run(Tools.quaver, ["--help"], environment: session.environment)
        #expect(root.status == 0, "\(root.error)")
        let subcommands = root.output.components(separatedBy: "SUBCOMMANDS:").dropFirst().first ?? ""
        #expect(subcommands.contains("\n  doctor ") && subcommands.contains("\n  play (default) "), "\(root.output)")

        let help = try await Tools.run(Tools.quaver, ["doctor", "--help"], environment: session.environment)
        #expect(help.status == 0, "\(help.error)")
        #expect(help.output.contains("USAGE: quaver doctor [--name <name>]"), "\(help.output)")
        #expect(help.output.contains("--name <name>"), "\(help.output)")
        #expect(help.output.contains("Bus name suffix of the player to check."), "\(help.output)")
        #expect(!help.output.contains("Quaver doctor\n"), "the checks ran: \(help.output)")

        // An option of the player is not one of doctor's: a usage error, status 64 (EX_USAGE).
        let wrong = try await Tools.run(Tools.quaver, ["doctor", "--paused"], environment: session.environment)
        #expect(wrong.status == 64, "\(wrong.status): \(wrong.error)")
        #expect(wrong.error.contains("Unknown option '--paused'"), "\(wrong.error)")
    }

    @Test("doctor on a healthy setup: every check ok or a warning, exit 0")
    func doctorHealthy() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session(activation: true)
        defer { session.stop() }
        try await Self.install(session)
        try await session.launch(tracks.map(\.path))
        try await session.waitForStatus("Playing")
        let (status, text) = try await doctor(session)
        #expect(status == 0, "\(text)")
        for title in [
            "session bus", "player on the bus", "MPRIS properties", "Can* flags", "desktop entry", "D-Bus activation",
            "configuration",
        ] {
            #expect(line(text, title).hasPrefix("  ok "), "\(title): \(text)")
        }
        #expect(line(text, "Can* flags").contains("Playing, \"Track 1\""))
        #expect(!text.contains("  failed "))
    }

    @Test("doctor without a session bus fails that check and exits 1")
    func doctorNoBus() async throws {
        let session = try await Session()
        defer { session.stop() }
        var environment = session.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(session.home.path)/no-bus-here"
        let (status, text) = try await doctor(session, environment: environment)
        #expect(status == 1)
        #expect(line(text, "session bus").hasPrefix("  failed "), "\(text)")
        #expect(text.contains("fix: "))
    }

    @Test("doctor with Quaver neither running nor activatable, and no desktop file")
    func doctorNotRunning() async throws {
        let session = try await Session()
        defer { session.stop() }
        let (status, text) = try await doctor(session)
        #expect(status == 1)
        #expect(line(text, "player on the bus").hasPrefix("  failed "), "\(text)")
        #expect(
            line(text, "desktop entry").hasPrefix("  warning ") && line(text, "desktop entry").contains("KDE Plasma"),
            "\(text)")
        #expect(line(text, "D-Bus activation").hasPrefix("  warning "), "\(text)")
    }

    @Test("doctor finds an activation file whose program is gone, and an invalid configuration")
    func doctorBrokenInstall() async throws {
        let session = try await Session(activation: true)
        defer { session.stop() }
        try await Self.install(session)
        try FileManager.default.removeItem(at: session.home.appendingPathComponent(".local/bin/quaver"))
        try session.writeConfig("volume = loud\n")
        let (status, text) = try await doctor(session)
        #expect(status == 1)
        #expect(
            line(text, "D-Bus activation").hasPrefix("  failed ") && text.contains("not an executable file"), "\(text)")
        #expect(
            line(text, "configuration").hasPrefix("  failed ") && text.contains("quaver.conf:1: \"volume\""), "\(text)")
        #expect(line(text, "player on the bus").hasPrefix("  warning "), "activatable, though broken: \(text)")
    }

    @Test("doctor shows the last problems Quaver logged")
    func doctorRecentProblems() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        defer { session.stop() }
        let missing = session.home.appendingPathComponent("gone.flac").path
        try await session.launch([missing, tracks[0].path])
        try await session.waitForStatus("Playing")
        let (_, text) = try await doctor(session)
        #expect(line(text, "recent problems").hasPrefix("  warning "), "\(text)")
        #expect(text.contains("skipping \(missing)"), "\(text)")
        // Each line starts with its time in UTC, as ISO 8601.
        let logged = try String(contentsOf: session.stateFolder.appendingPathComponent("problems.log"), encoding: .utf8)
        let stamped = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ warning: skipping /#
        #expect(logged.split(separator: "\n").contains { $0.firstMatch(of: stamped) != nil }, "\(logged)")
    }
}
