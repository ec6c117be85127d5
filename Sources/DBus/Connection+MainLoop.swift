internal import CDBus
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Main-loop integration: libdbus watches and timeouts as dispatch sources on the main queue.
extension Connection {
    func scheduleDispatch() {
        guard !dispatchScheduled, !isClosed else { return }
        dispatchScheduled = true
        // Never dispatch from inside a libdbus callback (it may hold the connection lock).
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.dispatchAll() }
        }
    }

    func dispatchAll() {
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
    func addWatch(_ watch: OpaquePointer) -> Bool {
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
            let source: any DispatchSourceProtocol =
                condition == DBUS_WATCH_READABLE
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
    func toggleWatch(_ watch: OpaquePointer) {
        guard let sources = watches[watch] else {
            addWatch(watch)
            return
        }
        sources.setEnabled(dbus_watch_get_enabled(watch) != 0)
    }

    func handleWatch(_ watch: OpaquePointer, flags: UInt32) {
        guard watches[watch] != nil, !isClosed, dbus_watch_get_enabled(watch) != 0 else { return }
        dbus_watch_handle(watch, flags)
        scheduleDispatch()
    }

    func removeWatch(_ watch: OpaquePointer) {
        watches[watch]?.cancel()
        watches[watch] = nil
    }

    func addTimeout(_ timeout: OpaquePointer) {
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

    func removeTimeout(_ timeout: OpaquePointer) {
        timeouts[timeout]?.cancel()
        timeouts[timeout] = nil
    }
}

/// The dispatch sources of one libdbus watch (one per condition), resumed while libdbus has
/// the watch enabled. Rule: used on the main thread only.
final class WatchSources {
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
final class CallbackContext: @unchecked Sendable {
    weak var connection: Connection?
}

/// A libdbus handle passed into a main-actor closure. Rule: only used on the main thread,
/// where libdbus invoked the callback that produced it.
struct Handle: @unchecked Sendable {
    let pointer: OpaquePointer
}

func withConnection(_ data: UnsafeMutableRawPointer?, _ body: @MainActor (Connection) -> Void) {
    guard let data else { return }
    let context = Unmanaged<CallbackContext>.fromOpaque(data).takeUnretainedValue()
    MainActor.assumeIsolated {
        if let connection = context.connection { body(connection) }
    }
}

/// Closes a descriptor a dispatch source owned (`close` inside `Connection` means its own method).
func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

let addWatchThunk: DBusAddWatchFunction = { watch, data in
    guard let watch else { return 1 }
    let handle = Handle(pointer: watch)
    var added = true
    withConnection(data) { added = $0.addWatch(handle.pointer) }
    return added ? 1 : 0
}
let removeWatchThunk: DBusRemoveWatchFunction = { watch, data in
    if let watch {
        let handle = Handle(pointer: watch)
        withConnection(data) { $0.removeWatch(handle.pointer) }
    }
}
let toggleWatchThunk: DBusWatchToggledFunction = { watch, data in
    if let watch {
        let handle = Handle(pointer: watch)
        withConnection(data) { $0.toggleWatch(handle.pointer) }
    }
}
let addTimeoutThunk: DBusAddTimeoutFunction = { timeout, data in
    if let timeout {
        let handle = Handle(pointer: timeout)
        withConnection(data) { $0.addTimeout(handle.pointer) }
    }
    return 1
}
let removeTimeoutThunk: DBusRemoveTimeoutFunction = { timeout, data in
    if let timeout {
        let handle = Handle(pointer: timeout)
        withConnection(data) { $0.removeTimeout(handle.pointer) }
    }
}
let toggleTimeoutThunk: DBusTimeoutToggledFunction = { timeout, data in
    if let timeout {
        let handle = Handle(pointer: timeout)
        withConnection(data) { $0.addTimeout(handle.pointer) }
    }
}
let dispatchStatusThunk: DBusDispatchStatusFunction = { _, status, data in
    if status == DBUS_DISPATCH_DATA_REMAINS { withConnection(data) { $0.scheduleDispatch() } }
}
let wakeupThunk: @convention(c) (UnsafeMutableRawPointer?) -> Void = { data in
    withConnection(data) { $0.scheduleDispatch() }
}
let filterThunk: DBusHandleMessageFunction = { _, message, data in
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
final class PendingReply: @unchecked Sendable {
    private var handler: ((Result<Message, BusError>) -> Void)?
    init(_ handler: @escaping (Result<Message, BusError>) -> Void) { self.handler = handler }

    /// Hands the reply (or its absence) to the handler, once.
    func complete(_ pending: OpaquePointer) {
        guard let handler else { return }
        self.handler = nil
        if let reply = dbus_pending_call_steal_reply(pending) {
            handler(.success(Message(owning: reply)))
        } else {
            handler(.failure(BusError(.noReply, "no reply")))
        }
    }
}

let pendingNotifyThunk: DBusPendingCallNotifyFunction = { pending, data in
    guard let pending, let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue().complete(pending)
}
let pendingFreeThunk: DBusFreeFunction = { data in
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
