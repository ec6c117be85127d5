import Glibc

/// A value behind a POSIX mutex: the little state shared with GStreamer's streaming threads
/// and the tag readers' queues. Not Synchronization's `Mutex`, which on Linux locks with raw
/// futex calls that ThreadSanitizer cannot see (it reported every access it guards as a
/// race); pthread mutexes it follows, so `scripts/sanitize thread` checks what matters.
///
/// A thread may also wait, for a bounded time, for another to change the value (see
/// ``withLock(waitingUpTo:_:)`` and ``withLockWakingWaiters(_:)``).
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// A lock around `value`.
    package init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
        // Timed waits count on the monotonic clock: a change of the wall clock neither cuts
        // them short nor stretches them.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(changed, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(changed)
        changed.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, under the lock.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Like ``withLock(_:)``, then wakes the threads waiting in ``withLock(waitingUpTo:_:)``
    /// to look at the value again.
    package func withLockWakingWaiters<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(mutex)
        }
        return try body(&value)
    }

    /// Runs `body` under the lock until it returns a result. While it returns nil, the
    /// thread waits (the lock released) for a change made with ``withLockWakingWaiters(_:)``,
    /// at most `limit` in all; nil when none gave a result by then.
    package func withLock<Result>(waitingUpTo limit: Duration, _ body: (inout Value) -> Result?) -> Result? {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let total = Int64(deadline.tv_nsec) + max(limit, .zero).nanoseconds
        deadline.tv_sec += Int(total / 1_000_000_000)
        deadline.tv_nsec = Int(total % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result = body(&value) { return result }
            // Any error but a wake-up (the deadline passed, or could not be kept) ends the wait.
            if pthread_cond_timedwait(changed, mutex, &deadline) != 0 { return body(&value) }
        }
    }
}
