import AudioCheck
import ChildProcess
import Foundation
import Glibc
import TestKit

/// A real snapserver on loopback, with ports of its own and a pipe source named Quaver, and
/// the snapclients that play it into files: what a user's rooms are, with no sound card.
@MainActor
final class SnapcastRig {
    let folder: TemporaryFolder
    /// snapserver's pipe source: Quaver's output.
    let pipe: URL
    let streamPort: Int
    let controlPort: Int
    private(set) var server: ChildProcess?
    private var clients: [ChildProcess] = []
    /// The format the source declares.
    static let format = "48000:16:2"

    /// The port of snapserver's TCP source, when the stream is one rather than the pipe.
    private(set) var sourcePort: Int?
    /// What Quaver's `--output` names: the pipe, or the TCP source.
    var output: String { sourcePort.map { "snapcast:tcp://127.0.0.1:\($0)" } ?? "snapcast:\(pipe.path)" }

    /// The control script snapserver runs for the stream (nil: none), and the environment
    /// snapserver runs in: the session's, so that the script reaches its bus.
    private var controlScript: URL?
    private var environment: [String: String]?

    init() throws {
        folder = try TemporaryFolder("snapcast")
        pipe = folder.path("fifo")
        streamPort = try Self.freePort()
        controlPort = try Self.freePort()
    }

    /// A rig whose stream is snapserver's TCP source rather than its pipe.
    convenience init(tcp: Bool) throws {
        try self.init()
        if tcp { sourcePort = try Self.freePort() }
    }

    /// A rig whose stream has Quaver's control script, driving the Quaver of `session`.
    convenience init(controlling session: Session) throws {
        try self.init()
        // As the package's /usr/lib/quaver/snapcast-control: snapserver 0.26 runs a path alone.
        let script = try folder.write(
            "snapcast-control",
            "#!/bin/sh\nexec \(Tools.quaver.path) snapcast-control --name \(session.name) \"$@\"\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        controlScript = script
        environment = session.environment
    }

    /// Starts snapserver (again, after ``stopServer()``), which makes the pipe, and waits
    /// until its stream port accepts clients.
    func startServer() async throws {
        guard let snapserver = Tools.find("snapserver") else { throw HarnessError("snapserver is not installed") }
        let source =
            (sourcePort.map { "tcp://127.0.0.1:\($0)?mode=server&" } ?? "pipe://\(pipe.path)?")
            + "name=Quaver&sampleformat=\(Self.format)&codec=pcm"
            + (controlScript.map { "&controlscript=\($0.path)" } ?? "")
        let arguments = [
            "-c", "/dev/null", "--server.datadir=\(folder.path("state").path)",
            "--stream.port=\(streamPort)", "--stream.bind_to_address=127.0.0.1",
            "--tcp.port=\(controlPort)", "--tcp.bind_to_address=127.0.0.1", "--http.enabled=false",
            "--logging.sink=stderr", "--stream.source=\(source)",
        ]
        let log = folder.path("server.log")
        server = try ChildProcess(
            snapserver.path, arguments, environment: environment, output: .file(log.path, append: true), error: .output)
        let deadline = ContinuousClock.now + .seconds(15)
        while !(Self.accepts(port: streamPort)
            && (sourcePort.map(Self.accepts(port:)) ?? FileManager.default.fileExists(atPath: pipe.path)))
        {
            guard ContinuousClock.now < deadline, server?.isRunning == true else {
                throw HarnessError("snapserver did not start: \(serverLog())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Ends snapserver at once, as a crash would.
    func stopServer() {
        server?.killAndWait()
        server = nil
    }

    /// Starts a snapclient, `id`, that writes what it plays to a file, and returns the file.
    @discardableResult
    func startClient(_ id: String) throws -> URL {
        guard let snapclient = Tools.find("snapclient") else { throw HarnessError("snapclient is not installed") }
        let output = folder.path("\(id).raw")
        let arguments = [
            "--host", "127.0.0.1", "--port", "\(streamPort)", "--hostID", id, "--player",
            "file:filename=\(output.path)", "--logsink", "stderr",
        ]
        let process = try ChildProcess(
            snapclient.path, arguments, output: .file(folder.path("\(id).log").path), error: .output)
        clients.append(process)
        return output
    }

    func serverLog() -> String { (try? String(contentsOf: folder.path("server.log"), encoding: .utf8)) ?? "" }

    func stop() {
        for client in clients { client.killAndWait() }
        clients = []
        stopServer()
        folder.remove()
    }

    /// A port no one listens on now, from the kernel.
    nonisolated static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw HarnessError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something listens on `port` of 127.0.0.1.
    nonisolated static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// What a snapclient wrote: 16-bit stereo at 48 kHz, read as its first channel.
struct RoomRecording {
    static let rate = 48000
    let samples: [Int16]

    init(_ file: URL) throws {
        let data = try Data(contentsOf: file)
        samples = data.withUnsafeBytes { raw in
            stride(from: 0, to: raw.count - 3, by: 4).map {
                Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0, as: Int16.self))
            }
        }
    }

    /// The stretch that is not silent: from the first to the last loud 5 ms window.
    var heard: Range<Int>? {
        let window = Self.rate / 200
        let loud = stride(from: 0, to: samples.count - window, by: window).filter { isLoud($0..<($0 + window)) }
        guard let first = loud.first, let last = loud.last else { return nil }
        return first..<(last + window)
    }

    /// The silent 5 ms windows inside ``heard``: gaps a listener hears.
    var gaps: Int {
        guard let heard else { return 0 }
        let window = Self.rate / 200
        return stride(from: heard.lowerBound, to: heard.upperBound - window, by: window).count(where: {
            !isLoud($0..<($0 + window))
        })
    }

    /// The tones heard, 100 ms at a time, rounded to the nearest 10 Hz (0: no steady tone,
    /// as at a joint), in order.
    var tones: [Int] {
        guard let heard else { return [] }
        let window = Self.rate / 10
        return stride(from: heard.lowerBound, to: heard.upperBound - window, by: window).map { start in
            let pitch = Tone.frequency(of: samples[start..<(start + window)], sampleRate: Self.rate) ?? 0
            return Int((pitch / 10).rounded()) * 10
        }
    }

    /// The runs of one tone longer than 0.3 s, in order: the tracks as a listener tells them apart.
    var tracks: [(tone: Int, seconds: Double)] {
        var runs: [(tone: Int, count: Int)] = []
        for tone in tones {
            if let last = runs.last, last.tone == tone {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((tone, 1))
            }
        }
        return runs.filter { $0.tone != 0 && $0.count > 3 }.map { ($0.tone, Double($0.count) / 10) }
    }

    private func isLoud(_ range: Range<Int>) -> Bool {
        Level.rms(samples[range]) > -40  // the tones are at -15 dBFS
    }
}

extension Session {
    /// Starts quaver rendering into `output` (`snapcast:PATH`) rather than a sink.
    func launch(_ arguments: [String], output: String) async throws {
        try await launch(command: launcher + [Tools.quaver.path, "--output", output, "--name", name] + arguments)
    }
}

/// A client of snapserver's JSON-RPC control port, as Snapweb and Home Assistant are: one
/// request at a time, its answer found among the notifications by its id.
final class SnapcastRPC: @unchecked Sendable {
    private let fd: Int32
    private var buffer = Data()
    private var nextID = 1
    private let lock = NSLock()

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw HarnessError("cannot connect to snapserver's control port \(port): \(errno)")
        }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends `method` with `params` and waits up to `timeout` for its answer (the whole
    /// response object).
    func call(_ method: String, _ params: [String: Any]? = nil, timeout: Duration = .seconds(10)) async throws
        -> [String: Any]
    {
        let id = lock.withLock {
            defer { nextID += 1 }
            return nextID
        }
        var request: [String: Any] = ["id": id, "jsonrpc": "2.0", "method": method]
        if let params { request["params"] = params }
        var line = try JSONSerialization.data(withJSONObject: request)
        line.append(0x0A)
        let (answer, failure) = await ChildProcess.onThread { [self, line] () -> (Data?, String?) in
            exchange(line, id: id, timeout: timeout)
        }
        if let failure { throw HarnessError("\(method): \(failure)") }
        guard let answer, let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any] else {
            throw HarnessError("no answer to \(method) in \(timeout)")
        }
        return object
    }

    /// Sends `line` and reads until the answer with `id` (its line), or why none came.
    private func exchange(_ line: Data, id: Int, timeout: Duration) -> (Data?, String?) {
        lock.withLock {
            let written = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written == line.count else { return (nil, "send failed: \(errno)") }
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let text = Data(buffer[buffer.startIndex..<newline])
                    buffer.removeSubrange(buffer.startIndex...newline)
                    guard let object = try? JSONSerialization.jsonObject(with: text) as? [String: Any],
                        object["id"] as? Int == id
                    else { continue }
                    return (text, nil)
                }
                var chunk = [UInt8](repeating: 0, count: 65536)
                let count = recv(fd, &chunk, chunk.count, 0)
                if count > 0 { buffer.append(contentsOf: chunk[0..<count]) }
                if count == 0 { return (nil, "snapserver closed the control connection") }
            }
            return (nil, nil)
        }
    }

    /// The stream `id`'s properties in `Server.GetStatus`.
    func properties(of stream: String = "Quaver") async throws -> [String: Any] {
        let status = try await call("Server.GetStatus")
        let server = (status["result"] as? [String: Any])?["server"] as? [String: Any]
        let streams = server?["streams"] as? [[String: Any]] ?? []
        guard let found = streams.first(where: { $0["id"] as? String == stream }) else {
            throw HarnessError("no stream \(stream) in \(status)")
        }
        return found["properties"] as? [String: Any] ?? [:]
    }
}
