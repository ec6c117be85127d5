import DBus
import Foundation

// Sending the generated calls with several in flight, judging each answer, and counting
// them for the summary.

// MARK: - Running calls

/// Sends calls with several in flight and records every outcome.
@MainActor
final class HostileRunner {
    let connection: Connection
    let destination: String
    let timeout: Duration
    private(set) var outcomes: [HostileOutcome?] = []
    /// `verdict(call, outcome)` of each call of the last run.
    private(set) var verdicts: [String?] = []

    init(connection: Connection, destination: String, timeout: Duration = .seconds(20)) {
        self.connection = connection
        self.destination = destination
        self.timeout = timeout
    }

    /// The slowest calls of the last run: (duration, index).
    private(set) var slowest: [(duration: Duration, index: Int)] = []

    func perform(_ call: HostileCall) async -> HostileOutcome {
        let message: Message
        do {
            message = try Message.methodCall(
                destination: destination, path: try ObjectPath(validating: call.path), interface: call.interface,
                member: call.member, arguments: call.arguments)
        } catch {
            return .sendFailure(error)
        }
        do {
            return .success(try await connection.call(message, timeout: timeout))
        } catch {
            return .error(error.name.rawValue, error.message)
        }
    }

    /// Runs every call, `inFlight` at a time, and returns the outcomes in call order, each
    /// with its verdict (nil: as expected). Good replies come without their values.
    func run(_ calls: [HostileCall], inFlight: Int) async -> [(outcome: HostileOutcome, verdict: String?)] {
        outcomes = Array(repeating: nil, count: calls.count)
        verdicts = Array(repeating: nil, count: calls.count)
        pending = calls
        cursor = 0
        slowest = []
        timePerCategory = [:]
        let workers = (0..<inFlight).map { _ in
            Task { @MainActor in
                while let index = self.take() {
                    let started = ContinuousClock.now
                    var outcome = await self.perform(self.pending[index])
                    let verdict = Self.verdict(self.pending[index], outcome)
                    // Keep a good reply's values only as long as they are checked (long runs).
                    if case .success = outcome, verdict == nil { outcome = .success([]) }
                    self.outcomes[index] = outcome
                    self.verdicts[index] = verdict
                    self.note(ContinuousClock.now - started, index)
                }
            }
        }
        for worker in workers { await worker.value }
        pending = []
        return zip(outcomes, verdicts).map { outcome, verdict in
            outcome.map { ($0, verdict) } ?? (.sendFailure(BusError(.failed, "never run")), "never run")
        }
    }

    /// Time spent waiting for answers, per category, in the last run.
    private(set) var timePerCategory: [HostileCategory: Duration] = [:]

    private func note(_ duration: Duration, _ index: Int) {
        timePerCategory[pending[index].category, default: .zero] += duration
        guard slowest.count < 10 || duration > slowest[slowest.count - 1].duration else { return }
        slowest.append((duration, index))
        slowest.sort { $0.duration > $1.duration }
        if slowest.count > 10 { slowest.removeLast() }
    }

    private var pending: [HostileCall] = []
    private var cursor = 0

    private func take() -> Int? {
        guard cursor < pending.count else { return nil }
        defer { cursor += 1 }
        return cursor
    }

    /// Why `outcome` is not what `call` may answer, or nil when it is.
    nonisolated static func verdict(_ call: HostileCall, _ outcome: HostileOutcome) -> String? {
        let expectation = call.expectation
        switch outcome {
        case .sendFailure(let error):
            if expectation.sendFailure && error.name == .invalidArgs { return nil }
            return "could not be sent: \(error)"
        case .success(let values):
            if expectation.sendFailure { return "was sent and answered, but must be refused before sending" }
            guard expectation.successAllowed else {
                return "succeeded; expected \(expectation.errors.sorted().joined(separator: " or "))"
            }
            return expectation.problem(with: values)
        case .error(let name, let message):
            if expectation.sendFailure { return "was sent (answered \(name)), but must be refused before sending" }
            if name == BusError.Name.noReply.rawValue { return "got NoReply (\(message.prefix(200)))" }
            if expectation.allows(errorName: name) { return nil }
            let allowed =
                (expectation.successAllowed ? ["success"] : []) + expectation.errors.sorted()
                + expectation.errorPrefixes.map { $0 + "*" }
            return "answered \(name): \(message.prefix(300)); expected \(allowed.joined(separator: " or "))"
        }
    }
}

/// Counts of outcomes per category and per answer, for the summary.
struct HostileTally {
    var calls = 0
    var perCategory: [HostileCategory: Int] = [:]
    var perAnswer: [String: Int] = [:]
    var failures: [(index: Int, call: HostileCall, why: String)] = []

    mutating func add(_ call: HostileCall, _ result: (outcome: HostileOutcome, verdict: String?), index: Int) {
        let outcome = result.outcome
        calls += 1
        perCategory[call.category, default: 0] += 1
        switch outcome {
        case .success: perAnswer["success", default: 0] += 1
        case .error(let name, _):
            perAnswer[name.replacingOccurrences(of: "org.freedesktop.DBus.Error.", with: ""), default: 0] += 1
        case .sendFailure: perAnswer["refused before sending", default: 0] += 1
        }
        if let why = result.verdict { failures.append((index, call, why)) }
    }

    var summary: String {
        let answers = perAnswer.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let categories = perCategory.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(
            separator: ", ")
        return "\(calls) calls; answers: \(answers); categories: \(categories)"
    }
}
