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
    private let context: CallbackContext
    private var watches: [OpaquePointer: WatchSources] = [:]
    private var timeouts: [OpaquePointer: any DispatchSourceTimer] = [:]
    private var dispatchScheduled = false
    private var objects: [ObjectPath: ExportedObject] = [:]
    private var signalHandlers: [SignalSubscription] = []
    private var isClosed = false
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

    /// Asks the bus for a well-known name without queueing for it.
    /// The corresponding libdbus function is `dbus_bus_request_name`.
    public func requestName(_ name: String, allowReplacement: Bool = false) throws(BusError) -> RequestNameReply {
        guard NameValidation.isValidBusName(name), !name.hasPrefix(":") else {
            throw BusError(.invalidArgs, "invalid well-known bus name '\(name)'")
        }
        var flags = UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE)
        if allowReplacement { flags |= UInt32(DBUS_NAME_FLAG_ALLOW_REPLACEMENT) }
        let error = ErrorBox()
        let result = dbus_bus_request_name(raw, name, flags, &error.raw)
        if let failure = error.take() { throw failure }
        switch result {
        case Int32(DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER): return .primaryOwner
        case Int32(DBUS_REQUEST_NAME_REPLY_IN_QUEUE): return .inQueue
        case Int32(DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER): return .alreadyOwner
        default: return .exists
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
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!, interface: "org.freedesktop.DBus",
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
        let reply = try await callReturningMessage(message, timeout: timeout)
        if let error = reply.error { throw error }
        return try reply.readArguments()
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
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message.raw, Connection.milliseconds(timeout), &error) else {
            let name = error.name.map { String(cString: $0) } ?? BusError.Name.failed.rawValue
            let text = error.message.map { String(cString: $0) } ?? "no reply to \(member)"
            throw BusError(BusError.Name(name), text)
        }
        return try Message(owning: reply).readArguments()
    }

    func callReturningMessage(_ message: Message, timeout: Duration) async throws(BusError) -> Message {
        guard !isClosed else { throw BusError(.disconnected, "connection closed") }
        var pending: OpaquePointer?
        let milliseconds = Connection.milliseconds(timeout)
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, milliseconds) != 0, let pending else {
            throw BusError(.disconnected, "could not send \(message.member ?? "call"): not connected")
        }
        let result: Result<Message, BusError> = await withCheckedContinuation { continuation in
            let box = PendingReply(continuation)
            dbus_pending_call_set_notify(
                pending, pendingNotifyThunk, Unmanaged.passRetained(box).toOpaque(), pendingFreeThunk)
            // The reply may already have arrived and been processed before set_notify.
            if dbus_pending_call_get_completed(pending) != 0 { box.complete(pending) }
        }
        dbus_pending_call_unref(pending)
        return try result.get()
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

    // MARK: Signals

    /// A registration of a signal handler; pass it to `removeSignalHandler` to stop.
    public final class SignalSubscription {
        let sender: String?
        let interface: String?
        let member: String?
        let path: String?
        let rule: String
        let handler: @MainActor (Message) -> Void
        /// For a well-known sender name: the match rule for its NameOwnerChanged signals.
        var ownerRule: String?
        /// For a well-known sender name: the unique name owning it (nil while nobody does).
        var senderOwner: String?

        init(
            sender: String?, interface: String?, member: String?, path: String?, rule: String,
            handler: @escaping @MainActor (Message) -> Void
        ) {
            self.sender = sender
            self.interface = interface
            self.member = member
            self.path = path
            self.rule = rule
            self.handler = handler
        }

        /// Whether the sender name needs tracking: the bus stamps every message with the
        /// unique name of its sender, never a well-known name (except its own).
        static func tracksOwner(of sender: String) -> Bool {
            !sender.hasPrefix(":") && sender != Connection.busName
        }

        /// Whether `message` is one this subscription asked for. Every field is checked here
        /// as well as by the bus, because the bus delivers a signal that matches any of this
        /// connection's rules (and a peer may send a signal straight to us).
        func matches(_ message: Message) -> Bool {
            (interface == nil || interface == message.interface)
                && (member == nil || member == message.member)
                && (path == nil || path == message.path)
                && accepts(sender: message.sender)
        }

        /// Whether a message from `messageSender` (always a unique name, or the bus's own
        /// name) comes from this subscription's sender or the current owner of that name.
        private func accepts(sender messageSender: String?) -> Bool {
            guard let sender else { return true }
            guard let messageSender else { return false }
            return messageSender == sender || messageSender == senderOwner
        }
    }

    /// The bus daemon's own name and object path.
    nonisolated static let busName = "org.freedesktop.DBus"
    nonisolated static let busPath = ObjectPath("/org/freedesktop/DBus")!

    /// Subscribes to signals matching the given fields (nil matches anything), adding a
    /// match rule on the bus. The corresponding libdbus function is `dbus_bus_add_match`.
    ///
    /// `sender` may be a unique name or a well-known name. For a well-known name the
    /// subscription follows its owner (`GetNameOwner`, then `NameOwnerChanged`), and takes
    /// signals only from whichever connection owns the name at the time; none while nobody does.
    /// Throws InvalidArgs for a name that is not valid.
    @discardableResult
    public func onSignal(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: ObjectPath? = nil,
        _ handler: @escaping @MainActor (Message) -> Void
    ) throws(BusError) -> SignalSubscription {
        // Valid names also cannot break out of the quotes of the match rule.
        if let sender, !NameValidation.isValidBusName(sender) {
            throw BusError(.invalidArgs, "invalid bus name '\(sender)'")
        }
        if let interface, !NameValidation.isValidInterfaceName(interface) {
            throw BusError(.invalidArgs, "invalid interface name '\(interface)'")
        }
        if let member, !NameValidation.isValidMemberName(member) {
            throw BusError(.invalidArgs, "invalid member name '\(member)'")
        }
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let path { parts.append("path='\(path.rawValue)'") }
        let subscription = SignalSubscription(
            sender: sender, interface: interface, member: member, path: path?.rawValue,
            rule: parts.joined(separator: ","), handler: handler)
        try addMatch(subscription.rule)
        if let sender, SignalSubscription.tracksOwner(of: sender) {
            do throws(BusError) {
                // The rule first, so that no change of owner after GetNameOwner is missed.
                let ownerRule = "type='signal',sender='\(Connection.busName)',path='\(Connection.busPath)',"
                    + "interface='\(Connection.busName)',member='NameOwnerChanged',arg0='\(sender)'"
                try addMatch(ownerRule)
                subscription.ownerRule = ownerRule
                subscription.senderOwner = try currentOwner(of: sender)
            } catch {
                removeMatches(of: subscription)
                throw error
            }
        }
        signalHandlers.append(subscription)
        return subscription
    }

    /// Stops delivering signals to `subscription`'s handler and removes its match rules from the bus.
    public func removeSignalHandler(_ subscription: SignalSubscription) {
        signalHandlers.removeAll { $0 === subscription }
        removeMatches(of: subscription)
    }

    /// Adds a match rule, waiting for the bus to confirm it.
    private func addMatch(_ rule: String) throws(BusError) {
        guard isConnected else { throw BusError(.disconnected, "connection closed") }
        let error = ErrorBox()
        dbus_bus_add_match(raw, rule, &error.raw)
        if let failure = error.take() { throw failure }
    }

    private func removeMatches(of subscription: SignalSubscription) {
        guard isConnected else { return }
        dbus_bus_remove_match(raw, subscription.rule, nil)
        if let ownerRule = subscription.ownerRule { dbus_bus_remove_match(raw, ownerRule, nil) }
    }

    /// The unique name that owns `name` now, or nil when nobody does. Blocks for the reply,
    /// as `dbus_bus_add_match` does.
    private func currentOwner(of name: String) throws(BusError) -> String? {
        let message = try Message.methodCall(
            destination: Connection.busName, path: Connection.busPath, interface: Connection.busName,
            member: "GetNameOwner", arguments: [.string(name)])
        let error = ErrorBox()
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message.raw, -1, &error.raw) else {
            let failure = error.take() ?? BusError(.failed, "GetNameOwner gave no reply")
            if failure.name == .nameHasNoOwner { return nil }
            throw failure
        }
        return try Message(owning: reply).readArguments().first?.string
    }

    /// Follows the owners of the well-known names that subscriptions name as sender.
    private func noteOwnerChange(_ message: Message) {
        guard message.sender == Connection.busName, message.path == Connection.busPath.rawValue,
            message.interface == Connection.busName, message.member == "NameOwnerChanged",
            signalHandlers.contains(where: { $0.ownerRule != nil })
        else { return }
        // Arguments: the name, its old owner, its new owner ("" for none).
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, let newOwner = arguments[2].string else { return }
        for subscription in signalHandlers where subscription.ownerRule != nil && subscription.sender == name {
            subscription.senderOwner = newOwner.isEmpty ? nil : newOwner
        }
    }

    // MARK: Incoming messages

    fileprivate func handle(_ message: Message) -> Bool {
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
            let reply: Message?
            if let object = objects[path] {
                reply = object.handle(message)
            } else if message.interface == "org.freedesktop.DBus.Introspectable" || message.interface == nil,
                message.member == "Introspect"
            {
                // Parent nodes of exported objects, so tools can walk the tree from "/".
                let children = childNodes(of: path)
                guard !children.isEmpty else { return false }
                reply = try? message.makeReturn([.string(Introspection.xml(interfaces: [], children: children))])
            } else {
                return false
            }
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

    // MARK: Main-loop integration

    func scheduleDispatch() {
        guard !dispatchScheduled, !isClosed else { return }
        dispatchScheduled = true
        // Never dispatch from inside a libdbus callback (it may hold the connection lock).
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.dispatchAll() }
        }
    }

    private func dispatchAll() {
        dispatchScheduled = false
        guard !isClosed else { return }
        var rounds = 0
        while dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {
            rounds += 1
            if isClosed { return }
            if rounds >= 64 {  // stay fair to other main-queue work; come back for the rest
                scheduleDispatch()
                return
            }
        }
    }

    /// Starts a dispatch source for each condition of a new watch.
    ///
    /// Every source gets its own `dup()` of the watch's descriptor, closed by the source's
    /// cancel handler. libdispatch unregisters a cancelled source later, on its own queue;
    /// by then libdbus may have closed its descriptor and the kernel given the same number
    /// to a new socket, whose fresh source would then never fire. A duplicate that only the
    /// source owns cannot be reused before libdispatch is done with it.
    /// Returns false when the descriptor cannot be duplicated (libdbus treats that as out of memory).
    @discardableResult
    fileprivate func addWatch(_ watch: OpaquePointer) -> Bool {
        removeWatch(watch)
        guard !isClosed else { return true }
        let fd = dbus_watch_get_unix_fd(watch)
        guard fd >= 0 else { return false }
        let flags = dbus_watch_get_flags(watch)
        var sources: [any DispatchSourceProtocol] = []
        for condition in [DBUS_WATCH_READABLE, DBUS_WATCH_WRITABLE] where flags & condition.rawValue != 0 {
            let descriptor = dup(fd)
            guard descriptor >= 0 else {
                logger.error("could not duplicate the D-Bus socket descriptor (errno \(errno))")
                WatchSources(sources).cancel()
                return false
            }
            let source: any DispatchSourceProtocol = condition == DBUS_WATCH_READABLE
                ? DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: .main)
                : DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: .main)
            let conditionFlags = condition.rawValue
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated { self?.handleWatch(watch, flags: conditionFlags) }
            }
            source.setCancelHandler { closeDescriptor(descriptor) }
            source.resume()
            sources.append(source)
        }
        let watchSources = WatchSources(sources)
        watches[watch] = watchSources
        watchSources.setEnabled(dbus_watch_get_enabled(watch) != 0)
        return true
    }

    /// libdbus turns a watch off and on as its queues fill and drain (the write watch for
    /// every message sent): its sources are suspended and resumed, not made anew each time.
    fileprivate func toggleWatch(_ watch: OpaquePointer) {
        guard let sources = watches[watch] else {
            addWatch(watch)
            return
        }
        sources.setEnabled(dbus_watch_get_enabled(watch) != 0)
    }

    private func handleWatch(_ watch: OpaquePointer, flags: UInt32) {
        guard watches[watch] != nil, !isClosed, dbus_watch_get_enabled(watch) != 0 else { return }
        dbus_watch_handle(watch, flags)
        scheduleDispatch()
    }

    fileprivate func removeWatch(_ watch: OpaquePointer) {
        watches[watch]?.cancel()
        watches[watch] = nil
    }

    fileprivate func addTimeout(_ timeout: OpaquePointer) {
        timeouts[timeout]?.cancel()
        timeouts[timeout] = nil
        guard dbus_timeout_get_enabled(timeout) != 0, !isClosed else { return }
        let interval = DispatchTimeInterval.milliseconds(Int(dbus_timeout_get_interval(timeout)))
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self, self.timeouts[timeout] != nil else { return }
                dbus_timeout_handle(timeout)
                self.scheduleDispatch()
            }
        }
        timer.resume()
        timeouts[timeout] = timer
    }

    fileprivate func removeTimeout(_ timeout: OpaquePointer) {
        timeouts[timeout]?.cancel()
        timeouts[timeout] = nil
    }
}

/// The dispatch sources of one libdbus watch (one per condition), resumed while libdbus has
/// the watch enabled. Rule: used on the main thread only.
private final class WatchSources {
    private let sources: [any DispatchSourceProtocol]
    private var suspended = false

    init(_ sources: [any DispatchSourceProtocol]) { self.sources = sources }

    func setEnabled(_ enabled: Bool) {
        guard enabled == suspended else { return }
        suspended = !enabled
        sources.forEach { enabled ? $0.resume() : $0.suspend() }
    }

    /// Cancels the sources; a suspended one is resumed so that its cancel handler runs (and
    /// so that it is not released suspended, which libdispatch forbids).
    func cancel() {
        sources.forEach { $0.cancel() }
        setEnabled(true)
    }
}

/// The context handed to libdbus callbacks: a weak reference to the connection.
/// Rule: libdbus calls these callbacks on the thread that called into it, which is always
/// the main thread here.
private final class CallbackContext: @unchecked Sendable {
    weak var connection: Connection?
}

/// A libdbus handle passed into a main-actor closure. Rule: only used on the main thread,
/// where libdbus invoked the callback that produced it.
private struct Handle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private func withConnection(_ data: UnsafeMutableRawPointer?, _ body: @MainActor (Connection) -> Void) {
    guard let data else { return }
    let context = Unmanaged<CallbackContext>.fromOpaque(data).takeUnretainedValue()
    MainActor.assumeIsolated {
        if let connection = context.connection { body(connection) }
    }
}

/// Closes a descriptor a dispatch source owned (`close` inside `Connection` means its own method).
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

private let addWatchThunk: DBusAddWatchFunction = { watch, data in
    guard let watch else { return 1 }
    let handle = Handle(pointer: watch)
    var added = true
    withConnection(data) { added = $0.addWatch(handle.pointer) }
    return added ? 1 : 0
}
private let removeWatchThunk: DBusRemoveWatchFunction = { watch, data in
    if let watch { let handle = Handle(pointer: watch); withConnection(data) { $0.removeWatch(handle.pointer) } }
}
private let toggleWatchThunk: DBusWatchToggledFunction = { watch, data in
    if let watch { let handle = Handle(pointer: watch); withConnection(data) { $0.toggleWatch(handle.pointer) } }
}
private let addTimeoutThunk: DBusAddTimeoutFunction = { timeout, data in
    if let timeout { let handle = Handle(pointer: timeout); withConnection(data) { $0.addTimeout(handle.pointer) } }
    return 1
}
private let removeTimeoutThunk: DBusRemoveTimeoutFunction = { timeout, data in
    if let timeout { let handle = Handle(pointer: timeout); withConnection(data) { $0.removeTimeout(handle.pointer) } }
}
private let toggleTimeoutThunk: DBusTimeoutToggledFunction = { timeout, data in
    if let timeout { let handle = Handle(pointer: timeout); withConnection(data) { $0.addTimeout(handle.pointer) } }
}
private let dispatchStatusThunk: DBusDispatchStatusFunction = { _, status, data in
    if status == DBUS_DISPATCH_DATA_REMAINS { withConnection(data) { $0.scheduleDispatch() } }
}
private let wakeupThunk: @convention(c) (UnsafeMutableRawPointer?) -> Void = { data in
    withConnection(data) { $0.scheduleDispatch() }
}
private let filterThunk: DBusHandleMessageFunction = { _, message, data in
    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let context = Unmanaged<CallbackContext>.fromOpaque(data).takeUnretainedValue()
    dbus_message_ref(message)
    let owned = Message(owning: message)
    let handled = MainActor.assumeIsolated { () -> Bool in
        guard let connection = context.connection else { return false }
        return connection.handle(owned)
    }
    return handled ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}

/// Carries a continuation to the pending-call notify callback. Resumed exactly once.
private final class PendingReply: @unchecked Sendable {
    private var continuation: CheckedContinuation<Result<Message, BusError>, Never>?
    init(_ continuation: CheckedContinuation<Result<Message, BusError>, Never>) { self.continuation = continuation }

    func complete(_ pending: OpaquePointer) {
        guard let continuation else { return }
        self.continuation = nil
        if let reply = dbus_pending_call_steal_reply(pending) {
            continuation.resume(returning: .success(Message(owning: reply)))
        } else {
            continuation.resume(returning: .failure(BusError(.noReply, "no reply")))
        }
    }
}

private let pendingNotifyThunk: DBusPendingCallNotifyFunction = { pending, data in
    guard let pending, let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue().complete(pending)
}
private let pendingFreeThunk: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).release()
}

/// Owns one libdbus `DBusError`: initialised here, freed in `deinit`.
final class ErrorBox {
    var raw = CDBus.DBusError()
    init() { dbus_error_init(&raw) }
    deinit { dbus_error_free(&raw) }

    /// The error set by the last call, if any, cleared for reuse.
    func take() -> BusError? {
        guard dbus_error_is_set(&raw) != 0 else { return nil }
        let name = raw.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let message = raw.message.map { String(cString: $0) } ?? ""
        dbus_error_free(&raw)
        dbus_error_init(&raw)
        return BusError(BusError.Name(name), message)
    }
}
