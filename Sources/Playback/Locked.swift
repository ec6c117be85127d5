import Glibc

/// A value behind a POSIX mutex: the little state shared with GStreamer's streaming threads
/// and the tag readers' queues. Not Synchronization's `Mutex`, which on Linux locks with raw
/// futex calls that ThreadSanitizer cannot see (it reported every access it guards as a
/// race); pthread mutexes it follows, so `scripts/sanitize thread` checks what matters.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
