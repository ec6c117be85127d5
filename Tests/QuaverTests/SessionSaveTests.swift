import SeededRandom
import Testing

@testable import quaver

/// The session save's decisions, input by input: each row drives a fresh `SessionSave`
/// through its inputs and checks what the last one asked for and where it left the saving.
@Suite("session save: when the session is written")
struct SessionSaveTests {
    enum Input: CustomStringConvertible {
        case restored(Int)
        case changed
        case turnEnded(SessionSave.Snapshot?)
        case save(SessionSave.Snapshot?)
        case writeFinished(SessionSave.Outcome, SessionSave.Snapshot?)
        case close(SessionSave.Snapshot?)
        case abandon

        var description: String {
            switch self {
            case .restored(let revision): "restored(\(revision))"
            case .changed: "changed"
            case .turnEnded(let snapshot): "turnEnded(\(Self.name(snapshot)))"
            case .save(let snapshot): "save(\(Self.name(snapshot)))"
            case .writeFinished(let outcome, let snapshot): "writeFinished(\(outcome), \(Self.name(snapshot)))"
            case .close(let snapshot): "close(\(Self.name(snapshot)))"
            case .abandon: "abandon"
            }
        }

        static func name(_ snapshot: SessionSave.Snapshot?) -> String {
            snapshot.map { "q\($0.queueRevision)@\($0.state.position)" } ?? "nil"
        }
    }

    typealias Row = TableRow<Input, SessionSave.Action, SessionSave.Phase>

    static func state(_ position: Int64) -> SavedState {
        SavedState(queueCount: 3, current: 1, position: position, volume: 1, rate: 1, loop: "off", shuffle: false)
    }

    static func snapshot(_ revision: Int, _ position: Int64) -> SessionSave.Snapshot {
        SessionSave.Snapshot(queueRevision: revision, state: state(position))
    }

    static let a = snapshot(1, 10)
    static let b = snapshot(1, 20)
    static let c = snapshot(2, 30)
    static let d = snapshot(2, 40)
    static func due(queue: Bool = false, _ position: Int64?) -> SessionSave.Due {
        SessionSave.Due(queue: queue, state: position.map(state))
    }
    /// A write that finished, the player showing `snapshot` then.
    static func written(_ snapshot: SessionSave.Snapshot?) -> Input { .writeFinished(.written, snapshot) }
    /// A write that failed (a full disk), the player showing `snapshot` then.
    static func failed(_ snapshot: SessionSave.Snapshot?) -> Input { .writeFinished(.failed("disk full"), snapshot) }

    static let rows: [Row] = [
        Row(
            name: "a change asks for the end of the turn", inputs: [.changed], actions: [.scheduleTurn],
            phase: .scheduled),
        Row(
            name: "a second change in the turn asks nothing more", inputs: [.changed, .changed], actions: [],
            phase: .scheduled),
        Row(
            name: "the turn's end writes the queue and the state", inputs: [.changed, .turnEnded(a)],
            actions: [.write(due(queue: true, 10))], phase: .writing(scheduled: false)),
        Row(
            name: "a restored queue is not written again", inputs: [.restored(1), .changed, .turnEnded(a)],
            actions: [.write(due(10))], phase: .writing(scheduled: false)),
        Row(
            name: "nothing to save while loading", inputs: [.changed, .turnEnded(nil)], actions: [], phase: .idle),
        Row(
            name: "nothing written when nothing changed",
            inputs: [.changed, .turnEnded(a), written(a), .changed, .turnEnded(a)], actions: [], phase: .idle),
        Row(
            name: "a change during a write asks for the turn's end",
            inputs: [.changed, .turnEnded(a), .changed], actions: [.scheduleTurn],
            phase: .writing(scheduled: true)),
        Row(
            name: "what changes during a write waits for it",
            inputs: [.changed, .turnEnded(a), .changed, .turnEnded(b)], actions: [],
            phase: .writing(scheduled: false)),
        Row(
            name: "what changed is written when the write is done, as the player shows it then",
            inputs: [.save(a), .save(b), written(b)], actions: [.write(due(20))],
            phase: .writing(scheduled: false)),
        Row(
            name: "a queue changed during a write is written with the state of the same turn",
            inputs: [.save(a), .save(c), written(d)], actions: [.write(due(queue: true, 40))],
            phase: .writing(scheduled: false)),
        Row(
            name: "a queue changed is written with its state even when the state is as written",
            inputs: [.save(a), written(snapshot(2, 10))], actions: [.write(due(queue: true, 10))],
            phase: .writing(scheduled: false)),
        Row(
            name: "while loading, a state goes alone after the write when its queue is the one written",
            inputs: [.save(a), .save(b), written(nil)], actions: [.write(due(20))],
            phase: .writing(scheduled: false)),
        Row(
            name: "while loading, a state of a queue not written waits: it would name the wrong queue",
            inputs: [.save(a), .save(c), written(nil)], actions: [], phase: .idle),
        Row(
            name: "a write done with nothing due goes idle", inputs: [.save(a), written(a)], actions: [],
            phase: .idle),
        Row(
            name: "playback that moved on during a write, with no change, is not written again (it was, in a loop)",
            inputs: [.changed, .turnEnded(a), written(b)], actions: [], phase: .idle),
        Row(
            name: "a change during a write is written after it, and the next write ends the round",
            inputs: [.save(a), .changed, .turnEnded(b), written(c), written(d)], actions: [],
            phase: .idle),
        Row(
            name: "a write done before the turn's end leaves the save asked for",
            inputs: [.save(a), .changed, written(a)], actions: [], phase: .scheduled),
        Row(
            name: "a save while one is asked for writes now and keeps the turn",
            inputs: [.changed, .save(a)], actions: [.write(due(queue: true, 10))],
            phase: .writing(scheduled: true)),
        Row(
            name: "a failed write is reported, and not tried again at once",
            inputs: [.save(a), .save(b), failed(b)], actions: [.reportFailure("disk full")], phase: .idle),
        Row(
            name: "after a failure, the next change writes the queue and the state again",
            inputs: [.restored(1), .save(a), failed(a), .changed, .turnEnded(a)],
            actions: [.write(due(queue: true, 10))], phase: .writing(scheduled: false)),
        Row(
            name: "a failure with a change asked for is tried again at the turn's end",
            inputs: [.save(a), .changed, failed(b)], actions: [.reportFailure("disk full")], phase: .scheduled),
        Row(
            name: "a second failure is not reported again",
            inputs: [.save(a), failed(a), .save(b), failed(b)], actions: [], phase: .idle),
        Row(
            name: "the first write that succeeds after failures is reported",
            inputs: [.save(a), failed(a), .save(b), failed(b), .save(b), written(b)], actions: [.reportRecovery],
            phase: .idle),
        Row(
            name: "a write that succeeds with no failure before is not reported",
            inputs: [.save(a), failed(a), .save(b), written(b), .save(c), written(c)], actions: [], phase: .idle),
        Row(
            name: "a refused folder is not reported (it says so itself), and the next change writes all again",
            inputs: [.restored(1), .save(a), .writeFinished(.refused, a), .save(a)],
            actions: [.write(due(queue: true, 10))], phase: .writing(scheduled: false)),
        Row(
            name: "closing while idle writes the state now", inputs: [.save(a), written(a), .close(b)],
            actions: [.writeLast(due(20))], phase: .closed),
        Row(
            name: "closing during a write writes the newest after it",
            inputs: [.save(a), .save(b), .close(d)], actions: [.writeLast(due(queue: true, 40))], phase: .closed),
        Row(
            name: "closing with nothing changed still reports when the writes are done",
            inputs: [.save(a), .close(a)], actions: [.writeLast(.init())], phase: .closed),
        Row(
            name: "closing while loading writes the latest state of the queue written",
            inputs: [.save(a), .save(b), .close(nil)],
            actions: [.writeLast(due(20))], phase: .closed),
        Row(
            name: "closing while loading writes no state of a queue not written",
            inputs: [.save(a), .save(c), .close(nil)], actions: [.writeLast(.init())], phase: .closed),
        Row(
            name: "nothing is written after closing: a change",
            inputs: [.close(a), .changed], actions: [], phase: .closed),
        Row(
            name: "nothing is written after closing: a save", inputs: [.close(a), .save(c)], actions: [], phase: .closed
        ),
        Row(
            name: "nothing is written after closing: the write under way ends",
            inputs: [.save(a), .save(b), .close(b), written(c)], actions: [], phase: .closed),
        Row(
            name: "after closing, the last write's failure is still reported",
            inputs: [.save(a), written(a), .close(b), failed(nil)], actions: [.reportFailure("disk full")],
            phase: .closed),
        Row(
            name: "abandoned: nothing more is written", inputs: [.save(a), .abandon, .save(c)], actions: [],
            phase: .closed),
        Row(
            name: "abandoned: the write under way ends, nothing after it",
            inputs: [.save(a), .save(b), .abandon, written(b)], actions: [], phase: .closed),
        Row(
            name: "closing twice writes nothing more", inputs: [.close(a), .close(c)], actions: [.writeLast(.init())],
            phase: .closed),
    ]

    @Test(arguments: rows)
    func decides(_ row: Row) {
        var save = SessionSave()
        var actions: [SessionSave.Action] = []
        for input in row.inputs {
            switch input {
            case .restored(let revision):
                save.restored(queueRevision: revision)
                actions = []
            case .changed: actions = save.changed()
            case .turnEnded(let snapshot): actions = save.turnEnded(snapshot)
            case .save(let snapshot): actions = save.save(snapshot)
            case .writeFinished(let outcome, let snapshot): actions = save.writeFinished(outcome, snapshot)
            case .close(let snapshot): actions = save.close(snapshot)
            case .abandon:
                save.abandon()
                actions = []
            }
        }
        #expect(actions == row.actions, "after \(row.inputs)")
        #expect(save.phase == row.phase, "after \(row.inputs)")
    }

    /// Whatever the order of changes and finished writes, every state the player showed
    /// last before a write starts is written, and nothing is written twice in a row.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyLastStateIsWrittenOnce(seed: UInt64) {
        var save = SessionSave()
        var written: [SavedState] = []
        var writing = false
        var position: Int64 = 0
        var generator = SplitMix(seed: seed)
        func apply(_ actions: [SessionSave.Action]) {
            for case .write(let due) in actions {
                #expect(!writing, "two writes at once")
                writing = true
                if let state = due.state { written.append(state) }
            }
        }
        for _ in 0..<2_000 {
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:
                position += Int64.random(in: 0...1, using: &generator)
                apply(save.save(Self.snapshot(1, position)))
            case 1 where writing:
                writing = false
                apply(save.writeFinished(.written, Self.snapshot(1, position)))
            default:
                apply(save.turnEnded(Self.snapshot(1, position)))
            }
        }
        for case .writeLast(let due) in save.close(Self.snapshot(1, position)) {
            if let state = due.state { written.append(state) }
        }
        #expect(written.last?.position == position)
        #expect(zip(written, written.dropFirst()).allSatisfy { $0 != $1 })
    }
}
