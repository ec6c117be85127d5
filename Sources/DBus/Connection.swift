internal import CDBus
import Dispatch
public import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connection to a message bus, driven by dispatch sources on the main queue.
///
/// Every libdbus watch becomes a `DispatchSourceRead`/`Write` and every libdbus timeout a
/// `DispatchSourceTimer`, all on the main queue, so the connection costs nothing while
/// nothing happens. All use is on the main actor.
@MainActor
public final class Connection {
    let raw: OpaquePointer
    let context: CallbackContext
    var watches: [OpaquePointer: WatchSources] = [:]
    var timeouts: [OpaquePointer: any DispatchSourceTimer] = [:]
    var dispatchScheduled = false
    var objects: [ObjectPath: ExportedObject] = [:]
    var signalHandlers: [SignalSubscription] = []
    var isClosed = false
    let logger: Logger

    /// Called once when the connection to the bus is lost.
    public var onDisconnect: (@MainActor () -> Void)?

    /// One of the two standard message buses.
    public enum Bus: Sendable {
        /// The bus of the user's login session, where desktop services such as media players live.
        case session
        /// The system-wide bus, where system services live.
        case system
    }

    /// Connects to the session or system bus (a private connection).
    /// The corresponding libdbus function is `dbus_bus_get_private`.
    public convenience init(bus: Bus, logger: Logger = Logger(label: "dbus")) throws(BusError) {
        let error = ErrorBox()
        guard let raw = dbus_bus_get_private(bus == .session ? DBUS_BUS_SESSION : DBUS_BUS_SYSTEM, &error.raw) else {
            throw error.take() ?? BusError(.failed, "could not connect to the \(bus) bus")
        }
        self.init(raw: raw, logger: logger)
    }

    /// Connects to the bus at `address` and registers with it (Hello).
    /// The corresponding libdbus functions are `dbus_connection_open_private` and `dbus_bus_register`.
    public convenience init(address: String, logger: Logger = Logger(label: "dbus")) throws(BusError) {
        let error = ErrorBox()
        guard let raw = dbus_connection_open_private(address, &error.raw) else {
            throw error.take() ?? BusError(.failed, "could not connect to \(address)")
        }
        guard dbus_bus_register(raw, &error.raw) != 0 else {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw error.take() ?? BusError(.failed, "could not register with the bus at \(address)")
        }
        self.init(raw: raw, logger: logger)
    }

    private init(raw: OpaquePointer, logger: Logger) {
        self.raw = raw
        self.logger = logger
        self.context = CallbackContext()
        context.connection = self
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let data = Unmanaged.passUnretained(context).toOpaque()
        dbus_connection_set_watch_functions(raw, addWatchThunk, removeWatchThunk, toggleWatchThunk, data, nil)
        dbus_connection_set_timeout_functions(raw, addTimeoutThunk, removeTimeoutThunk, toggleTimeoutThunk, data, nil)
        dbus_connection_set_dispatch_status_function(raw, dispatchStatusThunk, data, nil)
        dbus_connection_set_wakeup_main_function(raw, wakeupThunk, data, nil)
        dbus_connection_add_filter(raw, filterThunk, data, nil)
        scheduleDispatch()
    }

    isolated deinit {
        close()
        dbus_connection_unref(raw)
    }

    /// Closes the connection; later calls fail. Idempotent.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        dbus_connection_remove_filter(raw, filterThunk, Unmanaged.passUnretained(context).toOpaque())
        dbus_connection_close(raw)
        for sources in watches.values { sources.cancel() }
        for timer in timeouts.values { timer.cancel() }
        watches = [:]
        timeouts = [:]
    }

    /// This connection's unique name, such as `:1.42`.
    public var uniqueName: String { dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? "" }

    /// Whether the connection is open and connected to the bus: false after ``Connection/close()``
    /// or once the connection is lost.
    public var isConnected: Bool { !isClosed && dbus_connection_get_is_connected(raw) != 0 }

    // MARK: Names

    /// The bus's answer to ``Connection/requestName(_:allowReplacement:)``.
    public enum RequestNameReply: Sendable {
        /// The connection now owns the name.
        case primaryOwner
        /// Another connection owns the name and this one waits in its queue; `requestName` never
        /// asks to be queued, so it does not return this.
        case inQueue
        /// Another connection owns the name, and this one did not get it.
        case exists
        /// The connection already owned the name.
        case alreadyOwner
    }

    /// Asks the bus for a well-known name without queueing for it, blocking the calling
    /// thread until the bus answers: for programs that own their name before their main
    /// queue runs. A running program uses ``requestName(_:allowReplacement:answered:)``
    /// instead.
    /// The corresponding libdbus function is `dbus_bus_request_name`.
    public func requestName(_ name: String, allowReplacement: Bool = false) throws(BusError) -> RequestNameReply {
        let flags = try Self.requestFlags(name, allowReplacement: allowReplacement)
        let error = ErrorBox()
        let result = dbus_bus_request_name(raw, name, flags, &error.raw)
        if let failure = error.take() { throw failure }
        return Self.requestNameReply(UInt32(bitPattern: result))
    }

    /// Asks the bus for a well-known name without queueing for it, and calls `answered` on
    /// the main actor with the bus's answer: the main queue goes on meanwhile. No task is
    /// made, so a program that must not wake while idle stays asleep (on Linux, Swift's
    /// global executor starts a worker pool that wakes the process every second).
    /// The corresponding bus method is `org.freedesktop.DBus.RequestName`.
    public func requestName(
        _ name: String, allowReplacement: Bool = false,
        answered: @escaping @MainActor (Result<RequestNameReply, BusError>) -> Void
    ) {
        let message: Message
        do throws(BusError) {
            let flags = try Self.requestFlags(name, allowReplacement: allowReplacement)
            message = try Message.methodCall(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus", member: "RequestName", arguments: [.string(name), .uint32(flags)])
        } catch {
            return answered(.failure(error))
        }
        send(message, timeout: .seconds(25)) { result in
            answered(
                result.flatMap { reply -> Result<RequestNameReply, BusError> in
                    if let error = reply.error { return .failure(error) }
                    do throws(BusError) {
                        guard case .uint32(let code)? = try reply.readArguments().first else {
                            return .failure(BusError(.failed, "RequestName answered without a reply code"))
                        }
                        return .success(Self.requestNameReply(code))
                    } catch {
                        return .failure(error)
                    }
                })
        }
    }

    private static func requestFlags(_ name: String, allowReplacement: Bool) throws(BusError) -> UInt32 {
        guard NameValidation.isValidBusName(name), !name.hasPrefix(":") else {
            throw BusError(.invalidArgs, "invalid well-known bus name '\(name)'")
        }
        var flags = UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE)
        if allowReplacement { flags |= UInt32(DBUS_NAME_FLAG_ALLOW_REPLACEMENT) }
        return flags
    }

    private static func requestNameReply(_ code: UInt32) -> RequestNameReply {
        switch code {
        case UInt32(DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER): .primaryOwner
        case UInt32(DBUS_REQUEST_NAME_REPLY_IN_QUEUE): .inQueue
        case UInt32(DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER): .alreadyOwner
        default: .exists
        }
    }

    /// Gives a well-known name back to the bus, waiting at most `timeout` for the bus to
    /// confirm it. A process on its way out passes a short one: a bus that does not answer
    /// (stopped, swamped) must not hold up its exit, and the name goes with the connection
    /// anyway.
    /// The corresponding libdbus call is `ReleaseName` through
    /// `dbus_connection_send_with_reply_and_block`, which is what `dbus_bus_release_name`
    /// does with the default timeout of 25 s.
    public func releaseName(_ name: String, timeout: Duration = .seconds(25)) {
        guard isConnected, NameValidation.isValidBusName(name) else { return }
        do {
            _ = try callBlocking(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus",
                member: "ReleaseName", arguments: [.string(name)], timeout: timeout)
        } catch {
            logger.debug("releasing \(name) failed: \(error)")
        }
    }

    // MARK: Objects

    /// Exports `object` at its path; method calls to that path are dispatched to it from now on.
    /// Export objects before requesting a name, so clients never see a name without them.
    public func export(_ object: ExportedObject) {
        objects[object.path] = object
        object.connection = self
    }

    /// Withdraws the object exported at `path`, if any: calls to that path are no longer
    /// dispatched to it, and signals it emits are no longer sent on this connection.
    public func unexport(_ path: ObjectPath) {
        objects[path]?.connection = nil
        objects[path] = nil
    }

    // MARK: Sending

    /// Queues a message for sending; the write watch sends it without blocking.
    /// The corresponding libdbus function is `dbus_connection_send`.
    public func send(_ message: Message) {
        guard !isClosed else { return }
        if dbus_connection_send(raw, message.raw, nil) == 0 {
            logger.warning("could not queue a D-Bus message (out of memory)")
        }
    }

    /// Emits a signal.
    public func emitSignal(path: ObjectPath, interface: String, member: String, arguments: [Value]) {
        do {
            send(try Message.signal(path: path, interface: interface, member: member, arguments: arguments))
        } catch {
            logger.error("could not build signal \(interface).\(member): \(error)")
        }
    }

    /// Sends the queued messages now, blocking until they are written or `timeout` has
    /// passed: a bus that reads nothing (stopped) fills the socket, and a process flushing
    /// before it exits must still exit.
    /// The corresponding libdbus function is `dbus_connection_read_write`, called until
    /// `dbus_connection_has_messages_to_send` is false (`dbus_connection_flush` has no limit).
    public func flush(timeout: Duration = .milliseconds(500)) {
        guard isConnected else { return }
        let deadline = ContinuousClock.now + timeout
        while dbus_connection_has_messages_to_send(raw) != 0 {
            let left = deadline - .now
            guard left > .zero else {
                logger.debug("gave up flushing to the bus after \(timeout): it reads nothing")
                return
            }
            guard dbus_connection_read_write(raw, Connection.milliseconds(left)) != 0 else { return }
        }
    }

    /// Calls a method and waits (without blocking the main queue) for its reply.
    /// Throws the error reply as a `BusError`.
    /// The corresponding libdbus functions are `dbus_connection_send_with_reply` and
    /// `dbus_pending_call_set_notify`.
    public func call(_ message: Message, timeout: Duration = .seconds(25)) async throws(BusError) -> [Value] {
        try await reply(to: message, timeout: timeout).readArguments()
    }

    /// Calls a method and returns its reply whole, for more than its arguments: a client that
    /// reads a state and follows its changes orders the reply among the sender's signals by
    /// its ``Message/serial``, as a sender numbers what it sends in the order it sends it.
    /// Throws the error reply as a `BusError`.
    public func reply(to message: Message, timeout: Duration = .seconds(25)) async throws(BusError) -> Message {
        let reply = try await callReturningMessage(message, timeout: timeout)
        if let error = reply.error { throw error }
        return reply
    }

    /// Convenience for `call(Message.methodCall(...))`.
    public func call(
        destination: String, path: ObjectPath, interface: String, member: String,
        arguments: [Value] = [], timeout: Duration = .seconds(25)
    ) async throws(BusError) -> [Value] {
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        return try await call(message, timeout: timeout)
    }

    /// Calls a method and blocks the calling thread until the reply comes: for command-line
    /// tools before the main queue runs, and for a daemon's last calls as it exits (with a
    /// short timeout); never from a running daemon.
    public func callBlocking(
        destination: String, path: ObjectPath, interface: String, member: String,
        arguments: [Value] = [], timeout: Duration = .seconds(25)
    ) throws(BusError) -> [Value] {
        guard !isClosed else { throw BusError(.disconnected, "connection closed") }
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard
            let reply = dbus_connection_send_with_reply_and_block(
                raw, message.raw, Connection.milliseconds(timeout), &error)
        else {
            let name = error.name.map { String(cString: $0) } ?? BusError.Name.failed.rawValue
            let text = error.message.map { String(cString: $0) } ?? "no reply to \(member)"
            throw BusError(BusError.Name(name), text)
        }
        return try Message(owning: reply).readArguments()
    }

    func callReturningMessage(_ message: Message, timeout: Duration) async throws(BusError) -> Message {
        let result: Result<Message, BusError> = await withCheckedContinuation { continuation in
            send(message, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Sends `message` and calls `replied` on the main actor with its reply (an error reply
    /// too), or with why none came. No task and no thread waits meanwhile.
    func send(
        _ message: Message, timeout: Duration,
        replied: @escaping @MainActor (Result<Message, BusError>) -> Void
    ) {
        guard !isClosed else { return replied(.failure(BusError(.disconnected, "connection closed"))) }
        var pending: OpaquePointer?
        let milliseconds = Connection.milliseconds(timeout)
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, milliseconds) != 0, let pending else {
            return replied(
                .failure(BusError(.disconnected, "could not send \(message.member ?? "call"): not connected")))
        }
        let box = PendingReply { result in MainActor.assumeIsolated { replied(result) } }
        dbus_pending_call_set_notify(
            pending, pendingNotifyThunk, Unmanaged.passRetained(box).toOpaque(), pendingFreeThunk)
        // The reply may already have arrived and been processed before set_notify.
        if dbus_pending_call_get_completed(pending) != 0 { box.complete(pending) }
        dbus_pending_call_unref(pending)
    }

    /// `timeout` in whole milliseconds as libdbus takes it, computed without overflow: a
    /// partial millisecond counts as one, zero or negative durations become 1 ms (the call
    /// times out at once), and anything from `Int32.max` ms (about 24.8 days) up becomes
    /// `DBUS_TIMEOUT_INFINITE`, no timeout at all.
    static func milliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return 1 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let partial = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000  // 0...1000
        guard !overflow, whole < Int64(DBUS_TIMEOUT_INFINITE) - partial else { return DBUS_TIMEOUT_INFINITE }
        return Int32(whole + partial)
    }

    // MARK: Incoming messages

    func handle(_ message: Message) -> Bool {
        switch message.kind {
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
                logger.debug("disconnected from the bus")
                let handler = onDisconnect
                onDisconnect = nil
                close()
                handler?()
                return true
            }
            noteOwnerChange(message)
            for subscription in signalHandlers where subscription.matches(message) {
                subscription.handler(message)
            }
            return false
        case .methodCall:
            guard let pathString = message.path, let path = ObjectPath(pathString) else { return false }
            if let object = objects[path] {
                // The object sends the reply when its handler answers, now or later.
                object.handle(message, on: self)
                return true
            }
            // Parent nodes of exported objects, so tools can walk the tree from "/".
            guard message.interface == "org.freedesktop.DBus.Introspectable" || message.interface == nil,
                message.member == "Introspect"
            else { return false }
            let children = childNodes(of: path)
            guard !children.isEmpty else { return false }
            let reply = try? message.makeReturn([.string(Introspection.xml(interfaces: [], children: children))])
            if let reply, !message.noReplyExpected { send(reply) }
            return true
        default:
            return false
        }
    }

    func childNodes(of path: ObjectPath) -> [String] {
        var names = Set<String>()
        for exported in objects.keys where exported.isDescendant(of: path) {
            let rest = exported.rawValue.dropFirst(path.rawValue == "/" ? 1 : path.rawValue.count + 1)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }
}
