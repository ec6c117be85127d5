import SeededRandom
import Testing

@testable import quaver

/// The three decisions together (when to save, the steps of each save, what a start
/// restores) against a folder in memory, through random queue storms, writes cut off at
/// every step, full disks and restarts: whenever the process dies, the next start finds
/// the whole save, the queue as the state describes it.
@Suite("session save and restore over a simulated disk")
struct SessionDiskModelTests {
    /// A folder in memory: each file's contents, and how many entries fit (a full disk).
    struct Disk {
        var queues: [Int: [String]] = [:]
        var state: SavedState?
        /// Entries the folder holds at most, counting a state as one; nil: no limit.
        var capacity: Int?

        var used: Int { queues.values.reduce(0) { $0 + $1.count } + (state == nil ? 0 : 1) }

        /// Whether `entries` more fit.
        func fits(_ entries: Int) -> Bool { capacity.map { used + entries <= $0 } ?? true }

        /// What a start restores from it.
        func plan() -> SessionRestore.Plan {
            SessionRestore.plan(
                state: state.map { .read(CheckedState(state: $0)) } ?? .missing,
                queueFiles: queues.keys.map { .generation($0) }.sorted(by: >),
                read: { file in
                    guard case .generation(let number) = file, let entries = queues[number] else { return .missing }
                    return .read(entries)
                })
        }
    }

    /// One run of the daemon: its decisions, and its player's queue.
    struct Run {
        var save = SessionSave()
        var commit: SessionCommit
        var queue: [String]
        var revision: Int
        /// The write under way: its steps left, the state and queue it writes.
        var writing: (steps: [SessionCommit.Step], state: SavedState, queue: [String])?
        /// The last write, handed out during another: the writer starts it after that one.
        var last: (due: SessionSave.Due, queue: [String])?
        var failures = 0
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func everyStartFindsAWholeSave(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var disk = Disk()
        /// Every queue the player had, by its revision: what the state names must be one.
        var history: [Int: [String]] = [0: []]
        var nextRevision = 1
        var run = Run(commit: SessionCommit(), queue: [], revision: 0)
        var kills = 0
        var committedOnce = false

        func snapshot() -> SessionSave.Snapshot {
            // The position carries the queue revision: the restore is checked against it.
            let state = SavedState(
                queueCount: run.queue.count, current: nil, position: Int64(run.revision), volume: 1, rate: 1,
                loop: "off", shuffle: false)
            return SessionSave.Snapshot(queueRevision: run.revision, state: state)
        }

        func apply(_ actions: [SessionSave.Action]) {
            for action in actions {
                switch action {
                case .write(let due):
                    #expect(run.writing == nil, "two writes at once")
                    begin(due, queue: run.queue)
                case .writeLast(let due):
                    // The queue is read as the last write is handed out, in the turn of its state.
                    if run.writing == nil { begin(due, queue: run.queue) } else { run.last = (due, run.queue) }
                case .reportFailure:
                    run.failures += 1
                case .scheduleTurn, .reportRecovery:
                    break
                }
            }
        }

        /// Starts writing `due`, with `queue` when it is due.
        func begin(_ due: SessionSave.Due, queue: [String]) {
            guard let state = due.state else { return }
            guard let steps = run.commit.begin(queue: due.queue, found: disk.queues.keys.map { .generation($0) }) else {
                apply(run.save.writeFinished(.failed("no queue"), snapshot()))
                return
            }
            run.writing = (steps, state, due.queue ? queue : [])
        }

        /// The write under way ended: the last write, if handed out, starts; then the
        /// main actor hears how it went.
        func finished(_ outcome: SessionSave.Outcome) {
            run.writing = nil
            if let last = run.last {
                run.last = nil
                begin(last.due, queue: last.queue)
            }
            apply(run.save.writeFinished(outcome, snapshot()))
        }

        /// Carries out the next step of the write under way.
        func step() {
            guard var writing = run.writing else { return }
            let step = writing.steps.removeFirst()
            var failed = false
            switch step {
            case .writeQueue(let generation):
                if disk.fits(writing.queue.count) { disk.queues[generation] = writing.queue } else { failed = true }
            case .writeState(let generation):
                var state = writing.state
                state.queueGeneration = generation
                // The replaced state's place is freed by the rename, after the new one is written.
                if disk.fits(1) { disk.state = state } else { failed = true }
            case .removeQueues(let kept):
                disk.queues = disk.queues.filter { $0.key == kept }
            case .removeQueue(let generation):
                disk.queues[generation] = nil
            case .syncFolder:
                break
            }
            if failed {
                for undo in run.commit.failed() {
                    if case .removeQueue(let generation) = undo { disk.queues[generation] = nil }
                }
                finished(.failed("no space"))
                return
            }
            run.commit.succeeded(step)
            if case .writeState = step { committedOnce = true }
            if writing.steps.isEmpty {
                finished(.written)
            } else {
                run.writing = writing
            }
        }

        /// The process dies here; the next one starts from the disk.
        func killAndRestart() {
            kills += 1
            let plan = disk.plan()
            if let state = disk.state {
                let restored = plan.restored
                #expect(restored?.whole == true, "seed \(seed), kill \(kills): \(plan)")
                #expect(plan.setAside.isEmpty && plan.warnings.isEmpty, "seed \(seed), kill \(kills): \(plan)")
                #expect(
                    restored?.queue == history[Int(state.position)],
                    "seed \(seed), kill \(kills): the queue is not the one the state describes")
            } else {
                #expect(!committedOnce, "seed \(seed), kill \(kills): the state is gone")
            }
            for file in plan.removed {
                if case .generation(let number) = file { disk.queues[number] = nil }
            }
            let restored = plan.restored
            let revision = nextRevision
            nextRevision += 1
            history[revision] = restored?.queue ?? []
            let newest = max(disk.queues.keys.max() ?? 0, disk.state?.queueGeneration ?? 0)
            var generation: Int?
            if let restored, restored.whole, case .generation(let number) = restored.file { generation = number }
            run = Run(
                commit: SessionCommit(committed: generation, newest: newest), queue: restored?.queue ?? [],
                revision: revision)
            if generation != nil { run.save.restored(queueRevision: revision) }
        }

        var turnPending = false
        for _ in 0..<4_000 {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30:
                // A queue edit: an entry added or removed.
                if run.queue.isEmpty || Bool.random(using: &random) {
                    let at = Int.random(in: 0...run.queue.count, using: &random)
                    run.queue.insert("file:///music/\(nextRevision).flac", at: at)
                } else {
                    run.queue.remove(at: Int.random(in: 0..<run.queue.count, using: &random))
                }
                run.revision = nextRevision
                history[nextRevision] = run.queue
                nextRevision += 1
                apply(run.save.changed())
                turnPending = true
            case 30..<45 where turnPending:
                turnPending = false
                apply(run.save.turnEnded(snapshot()))
            case 45..<90:
                step()
            case 90..<93:
                // The disk fills up, or is made room on.
                disk.capacity = disk.capacity == nil ? disk.used + Int.random(in: 0...6, using: &random) : nil
            case 93..<96:
                killAndRestart()
                turnPending = false
            default:
                // A clean stop: the last write, then a start.
                apply(run.save.close(snapshot()))
                while run.writing != nil { step() }
                killAndRestart()
                turnPending = false
            }
        }
        #expect(kills > 50, "seed \(seed): only \(kills) restarts")
        #expect(committedOnce)
    }
}
