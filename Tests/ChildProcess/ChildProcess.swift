internal import CSpawn
public import Foundation
import Glibc

/// A program the tests start: the one way every test target starts one.
///
/// Why not Foundation's `Process`: on Linux it lists the descriptors to close in the child
/// before it spawns, and its own pipes and the socket by which it learns of the child's end
/// are not close-on-exec; a child another thread starts meanwhile inherits them. A long-lived
/// child (an HTTP server living 5 minutes) then kept a short one's end from being noticed,
/// and `waitUntilExit` on the main actor froze every test of the process for those minutes.
/// Its children also inherit the starting thread's blocked signals (SIGTERM among them).
///
/// Here every descriptor the tests open for a child is close-on-exec, the child closes all
/// but its standard three as it starts (glibc's closefrom action), its signals are unblocked
/// and at their defaults, and its end is learnt by a thread of its own blocked in `waitpid`:
/// waiting never blocks the main actor or Swift's cooperative threads.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// /dev/null.
        case null
        /// A file, created when missing; appended to, or truncated first.
        case file(String, append: Bool = true)
        /// A pipe to this process: `output`, `error` or `input`.
        case pipe
        /// One of this process's descriptors (it stays open here).
        case descriptor(Int32)
        /// For the error stream: wherever the output goes (`2>&1`).
        case output
    }

    public let pid: Int32
    public let executable: String
    /// The reading end of the child's standard output or error, with `.pipe`.
    public let output: FileHandle?
    public let error: FileHandle?
    /// The writing end of the child's standard input, with `.pipe`.
    public let input: FileHandle?

    private let lock = NSCondition()
    private var exitStatus: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []
    private var handlers: [@Sendable (Int32) -> Void] = []

    /// Starts `executable` (a path) with `arguments`; `environment` nil: this process's.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        input: Stream = .null, output: Stream = .null, error: Stream = .null
    ) throws {
        var parentEnds: [Int32: FileHandle] = [:]
        var childEnds: [Int32] = []
        defer { childEnds.forEach { close($0) } }
        func descriptor(_ stream: Stream, target: Int32) throws -> Int32 {
            switch stream {
            case .null, .output:
                return -1
            case .descriptor(let fd):
                return fd
            case .file(let path, let append):
                let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o644)
                guard fd >= 0 else {
                    throw ChildProcessError("cannot open \(path): \(String(cString: strerror(errno)))")
                }
                childEnds.append(fd)
                return fd
            case .pipe:
                var fds: [Int32] = [-1, -1]
                let result = cspawn_pipe(&fds)
                guard result == 0 else { throw ChildProcessError("pipe: \(String(cString: strerror(result)))") }
                let (childEnd, parentEnd) = target == 0 ? (fds[0], fds[1]) : (fds[1], fds[0])
                childEnds.append(childEnd)
                parentEnds[target] = FileHandle(fileDescriptor: parentEnd, closeOnDealloc: true)
                return childEnd
            }
        }
        var descriptors = try [input, output, error].enumerated().map {
            try descriptor($0.element, target: Int32($0.offset))
        }
        if case .output = error { descriptors[2] = descriptors[1] }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] =
            (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0)=\($1)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = cspawn(&pid, executable, argv, envp, descriptors[0], descriptors[1], descriptors[2])
        guard result == 0 else {
            throw ChildProcessError("cannot run \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.executable = executable
        self.input = parentEnds[0]
        self.output = parentEnds[1]
        self.error = parentEnds[2]
        let thread = Thread { [self] in awaitExit() }
        thread.name = "wait for \(pid)"
        thread.start()
    }

    /// Runs `/bin/sh -c script`.
    public convenience init(shell script: String, environment: [String: String]? = nil) throws {
        try self.init("/bin/sh", ["-c", script], environment: environment)
    }

    private func awaitExit() {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        // The shell's convention: the exit code, or 128 + the signal that ended it.
        let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        lock.lock()
        exitStatus = status
        let (waiting, handlers) = (waiters, self.handlers)
        waiters = []
        self.handlers = []
        lock.broadcast()
        lock.unlock()
        waiting.forEach { $0.resume(returning: status) }
        handlers.forEach { $0(status) }
    }

    /// The exit status (128 + N after signal N), or nil while it runs.
    public var status: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return exitStatus
    }

    public var isRunning: Bool { status == nil }

    /// Sends `signal` (nothing once the child has been reaped: its pid may be another's).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus == nil { Glibc.kill(pid, signal) }
    }

    /// Calls `handler` (on a thread of its own) when the child ends, or at once if it has.
    public func onExit(_ handler: @escaping @Sendable (Int32) -> Void) {
        lock.lock()
        if let exitStatus {
            lock.unlock()
            handler(exitStatus)
            return
        }
        handlers.append(handler)
        lock.unlock()
    }

    /// Waits for the end without blocking a thread.
    public func exit() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let exitStatus {
                lock.unlock()
                continuation.resume(returning: exitStatus)
                return
            }
            waiters.append(continuation)
            lock.unlock()
        }
    }

    /// Waits at most `timeout` for the end without blocking a thread: the status, or nil
    /// when the child still runs.
    public func exit(timeout: Duration) async -> Int32? {
        let once = ResumeOnce<Int32?>()
        return await withCheckedContinuation { continuation in
            once.continuation = continuation
            onExit { once.resume($0) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.secondsValue) { once.resume(nil) }
        }
    }

    /// Blocks for at most `timeout` until the end; the status, or nil when still running.
    /// For synchronous teardown only.
    @discardableResult
    public func wait(timeout: Duration) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: timeout.secondsValue)
        lock.lock()
        defer { lock.unlock() }
        while exitStatus == nil && lock.wait(until: deadline) {}
        return exitStatus
    }

    /// SIGKILL, then waits (briefly: nothing survives SIGKILL but a process in the kernel).
    public func killAndWait(_ timeout: Duration = .seconds(10)) {
        send(SIGKILL)
        wait(timeout: timeout)
    }

    /// Runs a program to its end and collects its output, without blocking a thread of the
    /// caller's. Output is read while it runs (a full pipe would stall it otherwise).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil
    ) async throws -> (status: Int32, output: String, error: String) {
        let child = try ChildProcess(executable, arguments, environment: environment, output: .pipe, error: .pipe)
        async let output = child.output!.readAll()
        async let error = child.error!.readAll()
        let status = await child.exit()
        return (status, String(decoding: await output, as: UTF8.self), String(decoding: await error, as: UTF8.self))
    }

    /// The first line of the child's standard output (without its newline), read on a
    /// thread of its own, not the caller's: "" when the output ends first.
    public func firstLine() async -> String {
        await Self.onThread { [self] in readFirstLine() }
    }

    /// Like `firstLine()`, blocking the caller: for a line that comes at once (a bus's address).
    public func readFirstLine() -> String {
        guard let output else { return "" }
        var line = Data()
        while true {
            let byte = output.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Hands `handler` each line of the child's standard output (`.pipe`), without its
    /// newline, stamped with the moment it was read, on a thread of its own until the output
    /// ends. With `copy`, every byte read is also written there (and `copy` closed at the end).
    public func readLines(
        copyingTo copy: FileHandle? = nil, _ handler: @escaping @Sendable (String, ContinuousClock.Instant) -> Void
    ) {
        guard let output else { return }
        Thread {
            var tail = Data()
            while true {
                let data = output.availableData
                let time = ContinuousClock.now
                guard !data.isEmpty else { break }
                copy?.write(data)
                tail.append(data)
                while let newline = tail.firstIndex(of: UInt8(ascii: "\n")) {
                    handler(String(decoding: tail[tail.startIndex..<newline], as: UTF8.self), time)
                    tail.removeSubrange(tail.startIndex...newline)
                }
            }
            try? copy?.close()
        }.start()
    }

    /// Runs blocking `work` on a thread of its own.
    public static func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }
}

extension FileHandle {
    /// Everything up to the end, read on a thread of its own.
    public func readAll() async -> Data {
        await ChildProcess.onThread { [self] in (try? self.readToEnd()) ?? Data() }
    }
}

/// A continuation resumed by whichever comes first (an exit or a deadline); later calls do
/// nothing.
private final class ResumeOnce<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    var continuation: CheckedContinuation<Value, Never>? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    private var stored: CheckedContinuation<Value, Never>?

    func resume(_ value: Value) {
        let taken = lock.withLock {
            defer { stored = nil }
            return stored
        }
        taken?.resume(returning: value)
    }
}

extension Duration {
    /// The length in seconds.
    fileprivate var secondsValue: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
