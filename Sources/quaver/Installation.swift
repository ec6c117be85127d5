import FoundationEssentials
import Glibc

/// Where an installed file of Quaver comes from: the Debian package, `scripts/install` for
/// one user, a build in a checkout, or somewhere else. Both installs can be on one machine;
/// the user's comes first everywhere (`~/.local/bin` before `/usr/bin` on `PATH`, its unit
/// before `/usr/lib/systemd/user`, its D-Bus file before `/usr/share/dbus-1/services`), and
/// `quaver doctor` names the origin of the running binary, the unit and the D-Bus file.
enum Installation: Equatable {
    /// A file the installed quaver package owns (in dpkg's list of its files).
    case package
    /// A file under `~/.local`, `$XDG_DATA_HOME` or `$XDG_CONFIG_HOME`: `scripts/install`'s,
    /// or the user's own unit.
    case user
    /// A binary in a SwiftPM build folder of a checkout.
    case build
    /// A file put in place some other way.
    case other

    /// Where the package puts the binary.
    static let packageBinary = "/usr/bin/quaver"

    /// The files of the installed quaver package, as dpkg lists them; empty when it is not
    /// installed, or where there is no dpkg.
    static func packageFiles() -> Set<String> {
        guard let output = ChildOutput.run("/usr/bin/env", ["dpkg-query", "--listfiles", "quaver"]) else { return [] }
        return Set(String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init))
    }

    /// The origin of the file at `path`, given the package's files.
    static func of(_ path: String, packageFiles: Set<String>) -> Installation {
        if packageFiles.contains(path) { return .package }
        let userFolders = [Paths.home.appendingPathComponent(".local"), Paths.data, Paths.config].map(\.path)
        if userFolders.contains(where: { path.hasPrefix($0 + "/") }) { return .user }
        if path.contains("/.build") { return .build }
        return .other
    }

    /// The origin in words, for the doctor's report.
    var name: String {
        switch self {
        case .package: "the quaver package"
        case .user: "user install"
        case .build: "a build in a checkout"
        case .other: "installed by hand"
        }
    }

    /// `path (origin)`, and the files it shadows with theirs: "… (user install; shadows
    /// /usr/lib/systemd/user/quaver.service of the quaver package)".
    static func describe(_ path: String, shadowing shadowed: [String], packageFiles: Set<String>) -> String {
        var text = "\(path) (\(of(path, packageFiles: packageFiles).name)"
        if !shadowed.isEmpty {
            let others = shadowed.map { "\($0) of \(of($0, packageFiles: packageFiles).name)" }
            text += "; shadows " + others.joined(separator: ", ")
        }
        return text + ")"
    }

    /// The files named `name` in `folders`, in the order the folders are searched: the
    /// first one is the one in use, the others are shadowed by it.
    static func candidates(_ name: String, in folders: [URL]) -> [String] {
        var seen: Set<String> = []
        return folders.map { $0.appendingPathComponent(name).path }.filter {
            FileManager.default.fileExists(atPath: $0) && seen.insert($0).inserted
        }
    }

    /// The program of the first `key=` line of a unit or D-Bus service file (`ExecStart`,
    /// `Exec`), without its arguments.
    static func program(of file: String, key: String) -> String? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(key + "=") }
        return line?.dropFirst(key.count + 1).split(separator: " ").first.map(String.init)
    }

    /// The executable process `pid` runs, as the kernel names it: "(deleted)" follows a path
    /// that was removed or replaced (an upgrade) since the process started.
    static func executable(ofProcess pid: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The doctor's "installation" check: which binary runs, which one a start would run, and
/// whether a user install shadows the package.
struct InstallationCheck {
    /// The outcome of the check.
    var outcome: DoctorReport.Outcome
    /// What was found.
    var detail: String
    /// How to fix a problem, when there is one.
    var fix: String?

    /// Checks the running process's binary (`runningPID` nil when no Quaver runs) against
    /// `start`, the program a start would run and what runs it ("the unit", "D-Bus
    /// activation"), given the package's files.
    init(runningPID: UInt32?, start: (program: String, by: String)?, packageFiles: Set<String>) {
        func named(_ path: String) -> String { "\(path) (\(Installation.of(path, packageFiles: packageFiles).name))" }
        var parts: [String] = []
        outcome = .ok
        let running = runningPID.flatMap(Installation.executable(ofProcess:))
        if let running, running.hasSuffix(" (deleted)") {
            outcome = .warning
            parts.append("the running Quaver's \(running.dropLast(10)) was removed or replaced since it started")
            fix = "restart it (systemctl --user restart quaver, or quit it and start it again)"
        } else if let running {
            parts.append("running \(named(running))")
            if let start, start.program != running {
                outcome = .warning
                parts.append("but \(start.by) starts \(named(start.program))")
                fix = "to run that one: systemctl --user restart quaver (or quit Quaver and start it again)"
            }
        } else if let start {
            parts.append("not running; \(start.by) starts \(named(start.program))")
        } else {
            parts.append("not running, and nothing installed starts it")
        }
        let userBinary = Paths.home.appendingPathComponent(".local/bin/quaver").path
        if packageFiles.contains(Installation.packageBinary) && FileManager.default.fileExists(atPath: userBinary) {
            parts.append(
                "the user install (\(userBinary)) comes before the quaver package's \(Installation.packageBinary): scripts/install --uninstall leaves the package's"
            )
        }
        detail = parts.joined(separator: "; ")
    }
}
