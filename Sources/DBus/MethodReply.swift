import Dispatch

/// The answer to one method call, given once: now, from the handler, or later, when what
/// the call asks for is known (a file read on another queue, another call's reply).
///
/// A handler declared with ``Method/init(_:in:out:replying:)`` gets one with each call
/// and answers through it, on the main actor:
///
/// ```swift
/// Method("Open", in: [Argument("path", .string)]) { arguments, reply in
///     let path = arguments[0].string!
///     reader.async {
///         let found = exists(path)
///         DispatchQueue.main.async {
///             MainActor.assumeIsolated {
///                 if found { reply.succeed() } else { reply.fail(BusError(BusError.Name("org.example.Error.NotFound"), path)) }
///             }
///         }
///     }
/// }
/// ```
///
/// Only the first answer counts: a later ``succeed(_:)`` or ``fail(_:)`` is ignored. A reply
/// released without an answer (its handler forgot it, or dropped the closure that held it)
/// answers the caller `org.freedesktop.DBus.Error.Failed` on the next turn of the main
/// queue, and the connection logs it as an error: the caller is not left waiting for its
/// timeout, in a release build as in a debug one.
@MainActor
public final class MethodReply {
    /// The member called, such as `OpenUri`.
    public let member: String
    private var deliver: (@MainActor (Result<[Value], BusError>, _ abandoned: Bool) -> Void)?

    init(member: String, deliver: @escaping @MainActor (Result<[Value], BusError>, _ abandoned: Bool) -> Void) {
        self.member = member
        self.deliver = deliver
    }

    // The last reference may go on any queue (a closure a worker queue ran and released), so
    // the error is sent from the main queue: no hop to the main actor is made for a reply
    // that was answered, which is every reply but a forgotten one.
    deinit {
        guard let deliver else { return }
        let error = BusError(.failed, "\(member) was never answered")
        DispatchQueue.main.async { MainActor.assumeIsolated { deliver(.failure(error), true) } }
    }

    /// Whether the call is answered; later answers are ignored.
    public var isAnswered: Bool { deliver == nil }

    /// Answers the call with `values`, which should match the method's out arguments.
    public func succeed(_ values: [Value] = []) {
        answer(.success(values))
    }

    /// Answers the call with an error reply.
    public func fail(_ error: BusError) {
        answer(.failure(error))
    }

    /// Answers the call with `result`: its values, or an error reply.
    public func answer(_ result: Result<[Value], BusError>) {
        guard let deliver else { return }
        self.deliver = nil
        deliver(result, false)
    }
}

/// An answer that counts only when it comes before its caller stops waiting for it: a
/// synchronous dispatch of a method that may answer later, or a command's status where the
/// reply cannot wait (NowPlaying's property setters).
@MainActor
package final class EarlyAnswer<Answer> {
    private var answer: Answer?
    private var waiting = true

    package init() {}

    /// Keeps `answer` when it is the first and the caller still waits; false when it comes
    /// too late for that (the caller stopped waiting).
    @discardableResult
    package func take(_ answer: Answer) -> Bool {
        guard waiting else { return false }
        if self.answer == nil { self.answer = answer }
        return true
    }

    /// The caller stops waiting: what it has is the first answer, if one came; later ones
    /// are dropped.
    package func stopWaiting() -> Answer? {
        waiting = false
        return answer
    }
}

extension BusError {
    /// What a synchronous caller gets from a method that answers later.
    static func answersLater(_ member: String) -> BusError {
        BusError(.failed, "\(member) answers later, not at once")
    }
}
