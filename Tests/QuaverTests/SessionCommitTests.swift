import Testing

@testable import quaver

/// The steps of one save, and what the writer knows of the folder as they succeed or fail.
@Suite("session commit: each save whole or not at all")
struct SessionCommitTests {
    typealias Step = SessionCommit.Step

    /// The steps of a save with the queue, as generation `n`.
    static func queueSave(_ generation: Int) -> [Step] {
        [
            .writeQueue(generation: generation), .syncFolder, .writeState(generation: generation), .syncFolder,
            .removeQueues(except: generation),
        ]
    }

    /// The queue files of these generations, as a listing of the folder finds them.
    static func files(_ generations: Int...) -> [SessionFiles.QueueFile] {
        generations.map { .generation($0) }
    }

    @Test("a queue goes to a new generation, named by the state only once it is whole on disk")
    func queueSaveOrder() {
        var commit = SessionCommit(committed: 4, newest: 6)
        #expect(commit.begin(queue: true, found: Self.files(4, 6)) == Self.queueSave(7))
        #expect(commit.committed == nil, "while the queue is written, no state alone may name a queue file")
    }

    @Test("a state alone names the queue file already written")
    func stateAlone() {
        var commit = SessionCommit(committed: 4, newest: 4)
        #expect(commit.begin(queue: false, found: Self.files(4)) == [.writeState(generation: 4)])
        #expect(commit.committed == 4)
    }

    @Test("a state alone is not written while no queue file holds the player's queue")
    func stateAloneWithoutQueue() {
        var fresh = SessionCommit(newest: 3)
        #expect(fresh.begin(queue: false, found: Self.files(3)) == nil)
        var failed = SessionCommit(committed: 4, newest: 4)
        _ = failed.begin(queue: true, found: Self.files(4))
        #expect(failed.failed() == [])
        #expect(
            failed.begin(queue: false, found: Self.files(4)) == nil,
            "the queue on disk is an older one than the state describes")
    }

    @Test("a save that succeeds commits its generation; the next goes one further")
    func succeeds() {
        var commit = SessionCommit(newest: 0)
        for step in commit.begin(queue: true, found: []) ?? [] { commit.succeeded(step) }
        #expect(commit.committed == 1)
        #expect(commit.begin(queue: true, found: Self.files(1)) == Self.queueSave(2))
    }

    @Test("a state write that fails after the queue removes the queue file no state names")
    func stateFailsAfterQueue() {
        var commit = SessionCommit(committed: 2, newest: 2)
        let steps = commit.begin(queue: true, found: Self.files(2)) ?? []
        commit.succeeded(steps[0])
        commit.succeeded(steps[1])
        #expect(commit.failed() == [.removeQueue(generation: 3)])
        #expect(commit.committed == nil)
        #expect(commit.begin(queue: true, found: Self.files(2)) == Self.queueSave(4), "a number once used is not again")
    }

    @Test("a queue write that fails leaves nothing to undo")
    func queueFails() {
        var commit = SessionCommit(committed: 2, newest: 2)
        _ = commit.begin(queue: true, found: Self.files(2))
        #expect(commit.failed() == [])
        #expect(commit.begin(queue: true, found: Self.files(2)) == Self.queueSave(3), "nothing of 3 is on disk")
    }

    @Test("a folder sync that fails after the state keeps the old queues, and the state stays committed")
    func syncFailsAfterState() {
        var commit = SessionCommit(committed: 2, newest: 2)
        let steps = commit.begin(queue: true, found: Self.files(2)) ?? []
        for step in steps.prefix(3) { commit.succeeded(step) }
        #expect(commit.failed() == [], "the state names generation 3: its file stays")
        #expect(commit.committed == 3)
        #expect(commit.begin(queue: false, found: Self.files(2, 3)) == [.writeState(generation: 3)])
    }

    @Test("a state alone that fails leaves the queue it names committed")
    func stateAloneFails() {
        var commit = SessionCommit(committed: 5, newest: 5)
        _ = commit.begin(queue: false, found: Self.files(5))
        #expect(commit.failed() == [])
        #expect(commit.begin(queue: false, found: Self.files(5)) == [.writeState(generation: 5)])
    }

    @Test("a folder that cannot be opened writes nothing, and a queue that was due leaves the committed one behind")
    func folderNotOpened() {
        var commit = SessionCommit(committed: 5, newest: 5)
        #expect(commit.begin(queue: false, found: nil) == nil)
        #expect(commit.committed == 5, "a state alone that was not written changes nothing on disk")
        #expect(commit.begin(queue: true, found: nil) == nil)
        #expect(commit.committed == nil)
        #expect(commit.begin(queue: false, found: Self.files(5)) == nil)
    }

    @Test("a generation another Quaver wrote in the folder is not used again")
    func anotherWritersGeneration() {
        var commit = SessionCommit(committed: 5, newest: 5)
        #expect(commit.begin(queue: true, found: Self.files(5, 9)) == Self.queueSave(10))
    }

    @Test("a state alone is not written once another Quaver's save removed the queue file it would name")
    func anotherWriterRemovedTheQueue() {
        var commit = SessionCommit(committed: 5, newest: 5)
        #expect(commit.begin(queue: false, found: Self.files(9)) == nil)
        #expect(commit.committed == nil, "the queue must be written again first")
        #expect(commit.begin(queue: true, found: Self.files(9)) == Self.queueSave(10))
    }

    @Test("only the removals may fail without failing the save")
    func mustSucceed() {
        #expect(Self.queueSave(1).map(\.mustSucceed) == [true, true, true, true, false])
        #expect(!Step.removeQueue(generation: 1).mustSucceed)
    }

    @Test("the newest generation is never below the committed one")
    func newestCoversCommitted() {
        var commit = SessionCommit(committed: 9, newest: 3)
        #expect(commit.newest == 9)
        #expect(commit.begin(queue: true, found: Self.files(9))?.first == .writeQueue(generation: 10))
    }
}
