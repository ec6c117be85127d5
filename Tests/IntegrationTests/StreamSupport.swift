import ChildProcess
import DBus
import Foundation
import TestKit

/// `scripts/http-test-server` on 127.0.0.1, for one test: a file, an endless ICY stream with
/// changing titles, a stream that stalls, one that dies, one that never answers. `stop()` kills
/// it; without that it stops when its standard input closes (the test process goes), when its
/// parent goes, or after 5 minutes.
///
/// It lives long and is started while other tests start short-lived programs: started through
/// `ChildProcess`, it holds no descriptor of theirs, and its own pipes reach no other child.
final class HTTPTestServer {
    static let script = Tools.repository.appendingPathComponent("scripts/http-test-server")

    let port: Int
    private let process: ChildProcess
    private let requestLog: URL

    /// - Parameter folder: what `/file/<name>` serves.
    init(serving folder: URL) async throws {
        guard let python = Tools.find("python3") else { throw HarnessError("python3 is not installed") }
        requestLog = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-http-\(UUID().uuidString).log")
        process = try ChildProcess(
            python.path, [Self.script.path, "--folder", folder.path, "--lifetime", "300"],
            environment: ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 },
            input: .pipe, output: .pipe, error: .file(requestLog.path, append: false))
        // "PORT <n>" once it listens (after it has made its MP3 with GStreamer).
        let line = await process.firstLine()
        guard line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            process.killAndWait()
            throw HarnessError(
                "http-test-server printed \"\(line)\", not its port: \((try? String(contentsOf: requestLog, encoding: .utf8)) ?? "")"
            )
        }
        self.port = port
    }

    /// `http://127.0.0.1:<port>/<path>`.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// The URL of a file of the served folder.
    func url(file: URL) -> String {
        url(
            "file/"
                + (file.lastPathComponent.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
                    ?? file.lastPathComponent))
    }

    /// The paths requested so far, in order.
    var requests: [String] {
        let text = (try? String(contentsOf: requestLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { $0.hasPrefix("GET ") ? String($0.dropFirst(4)) : nil }
    }

    /// Kills the server (SIGKILL: no wait for a clean exit).
    func stop() {
        try? process.input?.close()
        process.killAndWait()
        try? FileManager.default.removeItem(at: requestLog)
    }

    deinit { stop() }

    /// What the endless stream calls its station (`icy-name`) and its genre (`icy-genre`).
    static let station = "Quaver Test Radio"
    static let genre = "Test Tones"

    /// The number n of an ICY title "Radio Artist n - Radio Song n", nil for anything else.
    static func titleNumber(_ title: String?) -> Int? {
        guard let title, title.hasPrefix("Radio Artist ") else { return nil }
        let parts = title.dropFirst("Radio Artist ".count).split(separator: " ", maxSplits: 1)
        guard let number = parts.first.flatMap({ Int($0) }), title == "Radio Artist \(number) - Radio Song \(number)"
        else { return nil }
        return number
    }
}

extension Session {
    /// The Metadata of every Player PropertiesChanged since signal `from` that carries one, in
    /// order.
    func metadataChanges(after from: Int = 0) -> [[String: Value]] {
        signals.dropFirst(from).compactMap { signal in
            guard signal.member == "PropertiesChanged", signal.changedInterface == MPRISNames.player else { return nil }
            return signal.changed["Metadata"]?.stringVariantDictionary
        }
    }

    /// The log lines containing every one of `needles`.
    func logLines(containing needles: String...) -> [Substring] {
        log().split(separator: "\n").filter { line in needles.allSatisfy { line.contains($0) } }
    }
}
