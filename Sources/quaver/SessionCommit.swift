/// How one save replaces the saved session whole: the steps the writer takes, and what is
/// on disk as each one succeeds or fails. Pure: ``StateStore`` carries the steps out, on the
/// writer's queue.
///
/// A save with the queue writes it to a file of a new generation (`queue.<n>.m3u8`, one
/// more than any seen), beside the one `state.json` names, and only then replaces
/// `state.json` with a state naming the new generation. That rename is the one moment the
/// saved session changes: a save cut short anywhere (a kill, a crash, a power cut, a full
/// disk) leaves `state.json` naming a queue file that is whole, the previous one, which is
/// removed only once the new state is in place. The folder is flushed after each rename that
/// a later step relies on, so that a power cut cannot keep the later rename and lose the
/// earlier one. A save of the state alone names the queue file already written.
struct SessionCommit: Equatable {
    /// One step of a save.
    enum Step: Equatable {
        /// Writes the queue to this generation's file: a temporary file, flushed and renamed.
        case writeQueue(generation: Int)
        /// Flushes the folder, so that the renames made so far reach the disk before the next.
        case syncFolder
        /// Replaces `state.json` with the state, naming this generation's queue file.
        case writeState(generation: Int)
        /// Removes every queue file but this generation's (the unnumbered one too). Its
        /// failure fails nothing: the next save, or the next start, removes them.
        case removeQueues(except: Int)
        /// Removes this generation's queue file, written but named by no state. Its failure
        /// fails nothing either.
        case removeQueue(generation: Int)

        /// Whether a failure of this step fails the save.
        var mustSucceed: Bool {
            switch self {
            case .writeQueue, .syncFolder, .writeState: true
            case .removeQueues, .removeQueue: false
            }
        }
    }

    /// The generation that `state.json` names and whose queue file holds the queue last
    /// handed to a write; nil while none does (nothing saved yet in this run, a queue being
    /// written, or a queue write that failed), when a state alone cannot be written.
    private(set) var committed: Int?
    /// The highest generation seen in the folder or written: the next queue file is one more.
    private(set) var newest: Int
    /// The generation of a queue file written in this save, before a state names it.
    private(set) var unnamed: Int?

    /// The writer's view of the folder at start: `committed` is the generation restored
    /// whole (the player's queue is that file's), `newest` the highest one found.
    init(committed: Int? = nil, newest: Int = 0) {
        self.committed = committed
        self.newest = max(newest, committed ?? 0)
    }

    /// Begins a save of the state, with the queue when `queue` is true: its steps, in
    /// order; nil when nothing is to be written.
    ///
    /// `found` is the folder's queue files, listed under its lock (another Quaver, started
    /// with `--instance new`, saves in the same folder): a generation it wrote is not used
    /// again, and a state alone is written only while the queue file it names is there. Nil
    /// when the folder cannot be opened: nothing is written, and a queue that was due
    /// leaves the committed one behind all the same.
    mutating func begin(queue: Bool, found: [SessionFiles.QueueFile]?) -> [Step]? {
        unnamed = nil
        if let found { newest = max(newest, found.map(\.number).max() ?? 0) }
        guard queue else {
            // Another writer's save removed it: the queue must be written before a state names one.
            if let committed, let found, !found.contains(.generation(committed)) { self.committed = nil }
            guard found != nil, let committed else { return nil }
            return [.writeState(generation: committed)]
        }
        // From here the player's queue is not the one `committed` names, whatever happens.
        committed = nil
        guard found != nil else { return nil }
        let generation = newest + 1
        return [
            .writeQueue(generation: generation), .syncFolder, .writeState(generation: generation), .syncFolder,
            .removeQueues(except: generation),
        ]
    }

    /// `step` of the save succeeded.
    mutating func succeeded(_ step: Step) {
        switch step {
        case .writeQueue(let generation):
            newest = max(newest, generation)
            unnamed = generation
        case .writeState(let generation):
            committed = generation
            unnamed = nil
        case .syncFolder, .removeQueues, .removeQueue:
            break
        }
    }

    /// A step that must succeed failed: the save ends there, and the steps returned undo
    /// what no state names (a queue file written for it, which on a full disk holds the
    /// space the next save needs).
    mutating func failed() -> [Step] {
        defer { unnamed = nil }
        return unnamed.map { [.removeQueue(generation: $0)] } ?? []
    }
}
