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
        case writeFinished
        case close(SessionSave.Snapshot?)
        case abandon

        var description: String {
            switch self {
            case .restored(let revision): "restored(\(revision))"
            case .changed: "changed"
            case .turnEnded(let snapshot): "turnEnded(\(Self.name(snapshot)))"
            case .save(let snapshot): "save(\(Self.name(snapshot)))"
            case .writeFinished: "writeFinished"
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
    static func due(queue: Bool = false, _ position: Int64?) -> SessionSave.Due {
        SessionSave.Due(queue: queue, state: position.map(state))
    }

    static let rows: [Row] = [
        Row(
            name: "a change asks for the end of the turn", inputs: [.changed], actions: [.scheduleTurn],
            phase: .scheduled),
        Row(
            name: "a second change in the turn asks nothing more", inputs: [.changed, .changed], actions: [],
            phase: .scheduled),
        Row(
            name: "the turn's end writes the queue and the state", inputs: [.changed, .turnEnded(a)],
            actions: [.write(due(queue: true, 10))], phase: .writing(next: .init(), scheduled: false)),
        Row(
            name: "a restored queue is not written again", inputs: [.restored(1), .changed, .turnEnded(a)],
            actions: [.write(due(10))], phase: .writing(next: .init(), scheduled: false)),
        Row(
            name: "nothing to save while loading", inputs: [.changed, .turnEnded(nil)], actions: [], phase: .idle),
        Row(
            name: "nothing written when nothing changed",
            inputs: [.changed, .turnEnded(a), .writeFinished, .changed, .turnEnded(a)], actions: [], phase: .idle),
        Row(
            name: "a change during a write asks for the turn's end",
            inputs: [.changed, .turnEnded(a), .changed], actions: [.scheduleTurn],
            phase: .writing(next: .init(), scheduled: true)),
        Row(
            name: "what changes during a write is due after it",
            inputs: [.changed, .turnEnded(a), .changed, .turnEnded(b)], actions: [],
            phase: .writing(next: due(20), scheduled: false)),
        Row(
            name: "the newest state and any queue change are due, merged",
            inputs: [.save(a), .save(c), .save(b)], actions: [],
            phase: .writing(next: due(queue: true, 20), scheduled: false)),
        Row(
            name: "what was due is written when the write is done",
            inputs: [.save(a), .save(c), .writeFinished], actions: [.write(due(queue: true, 30))],
            phase: .writing(next: .init(), scheduled: false)),
        Row(
            name: "a write done with nothing due goes idle", inputs: [.save(a), .writeFinished], actions: [],
            phase: .idle),
        Row(
            name: "a write done before the turn's end leaves the save asked for",
            inputs: [.save(a), .changed, .writeFinished], actions: [], phase: .scheduled),
        Row(
            name: "a save while one is asked for writes now and keeps the turn",
            inputs: [.changed, .save(a)], actions: [.write(due(queue: true, 10))],
            phase: .writing(next: .init(), scheduled: true)),
        Row(
            name: "closing while idle writes the state now", inputs: [.save(a), .writeFinished, .close(b)],
            actions: [.writeLast(due(20))], phase: .closed),
        Row(
            name: "closing during a write writes what was due and the newest after it",
            inputs: [.save(a), .save(c), .close(b)], actions: [.writeLast(due(queue: true, 20))], phase: .closed),
        Row(
            name: "closing with nothing changed still reports when the writes are done",
            inputs: [.save(a), .close(a)], actions: [.writeLast(.init())], phase: .closed),
        Row(
            name: "closing while loading writes what was due", inputs: [.save(a), .save(b), .close(nil)],
            actions: [.writeLast(due(20))], phase: .closed),
        Row(
            name: "nothing is written after closing: a change",
            inputs: [.close(a), .changed], actions: [], phase: .closed),
        Row(
            name: "nothing is written after closing: a save", inputs: [.close(a), .save(c)], actions: [], phase: .closed
        ),
        Row(
            name: "nothing is written after closing: the write under way ends",
            inputs: [.save(a), .save(b), .close(b), .writeFinished], actions: [], phase: .closed),
        Row(
            name: "abandoned: nothing more is written", inputs: [.save(a), .abandon, .save(c)], actions: [],
            phase: .closed),
        Row(
            name: "abandoned: the write under way ends, nothing after it",
            inputs: [.save(a), .save(b), .abandon, .writeFinished], actions: [], phase: .closed),
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
            case .writeFinished: actions = save.writeFinished()
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
                apply(save.writeFinished())
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
