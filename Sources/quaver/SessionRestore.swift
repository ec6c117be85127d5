/// What a start restores from the saved session's folder: pure over what was read, so that
/// a table test walks every kind of damage.
///
/// The whole save is the state and the queue file it names, with as many entries as the
/// state counts: it comes back as it was. Anything less keeps the queue, because a queue is
/// what cannot be made again: the state's queue file with another count (damaged), or,
/// when that file is missing or unreadable, or the state is (a state moved aside, or none
/// beside a queue file), the newest queue file that reads. Such a queue is restored without
/// a current entry or position, and with the state's options when the state was read.
/// Queue files that a whole save does not name are left over from saves cut short: they
/// are removed.
enum SessionRestore {
    /// A file as read.
    enum Reading<Value: Equatable & Sendable>: Equatable, Sendable {
        /// Nothing is at its path.
        case missing
        /// It could not be read (or is too large to be what it should), for this reason;
        /// `setAside` asks that it be moved aside (`<name>.corrupt`) so that nothing reads it again.
        case unreadable(String, setAside: Bool)
        /// Its contents.
        case read(Value)
    }

    /// A file moved aside, and why.
    struct Aside: Equatable {
        /// The file's name in the folder.
        var name: String
        /// What is wrong with it.
        var reason: String
    }

    /// What is restored.
    struct Restored: Equatable {
        /// The state: the saved one when `whole`; else the saved options (or the player's
        /// first ones) with no current entry, at the start.
        var state: SavedState
        /// The state's fields dropped as out of range (see ``CheckedState``).
        var dropped: [String]
        /// The queue's entries, as the file holds them.
        var queue: [String]
        /// The file they are from.
        var file: SessionFiles.QueueFile
        /// Whether the state and the queue are one save: the state's current entry and
        /// position apply, and the state may go on naming the file.
        var whole: Bool
    }

    /// What the start does with the folder.
    struct Plan: Equatable {
        /// What is restored; nil when nothing is (the start is afresh).
        var restored: Restored?
        /// Files moved aside.
        var setAside: [Aside] = []
        /// Queue files removed: no whole save names them.
        var removed: [SessionFiles.QueueFile] = []
        /// What was restored in place of the whole save, and why: a line each for the log.
        var warnings: [String] = []
    }

    /// The versions of the state file read.
    static let versions = 1...SavedState.currentVersion

    /// Decides what to restore from the state file as read and the queue files present
    /// (`read` reads one; only those needed are read).
    static func plan(
        state: Reading<CheckedState>, queueFiles: [SessionFiles.QueueFile],
        read: (SessionFiles.QueueFile) -> Reading<[String]>
    ) -> Plan {
        var plan = Plan()
        var named: SessionFiles.QueueFile?
        var options: SavedState?
        var dropped: [String] = []
        /// Why the state's own queue is not restored with it.
        var problem: String?
        switch state {
        case .missing:
            break
        case .unreadable(let reason, _):
            plan.setAside.append(Aside(name: SessionFiles.state, reason: reason))
        case .read(let checked):
            switch queueFile(of: checked.state) {
            case .failure(let reason):
                plan.setAside.append(Aside(name: SessionFiles.state, reason: reason.description))
            case .success(let file):
                named = file
                options = checked.state
                dropped = checked.dropped
                switch read(file) {
                case .read(let entries) where entries.count == checked.state.queueCount:
                    plan.restored = Restored(
                        state: checked.state, dropped: checked.dropped, queue: entries, file: file, whole: true)
                    plan.removed = queueFiles.filter { $0 != file }
                    return plan
                case .read(let entries) where !entries.isEmpty:
                    plan.warnings.append(
                        "\(file) holds \(entries.count) entries, the state expects \(checked.state.queueCount): "
                            + "restoring its queue without the position")
                    plan.restored = Restored(
                        state: queueAlone(checked.state, count: entries.count), dropped: checked.dropped,
                        queue: entries, file: file, whole: false)
                    return plan
                case .read(let entries):
                    problem = "\(file) holds \(entries.count) entries, the state expects \(checked.state.queueCount)"
                case .missing:
                    problem = "\(file), which the state names, is missing"
                case .unreadable(let reason, let setAside):
                    if setAside { plan.setAside.append(Aside(name: file.name, reason: reason)) }
                    problem = "cannot read the queue: \(reason)"
                }
            }
        }

        // The whole save is not there: the newest queue that reads, with the state's options.
        for file in queueFiles where file != named {
            switch read(file) {
            case .read(let entries) where !entries.isEmpty:
                let alone = queueAlone(options ?? SavedState.initial, count: entries.count)
                plan.restored = Restored(state: alone, dropped: dropped, queue: entries, file: file, whole: false)
                if let problem {
                    plan.warnings.append("\(problem): restoring the queue of \(file) without the position")
                } else if case .missing = state {
                    plan.warnings.append(
                        "no saved state names \(file) (a first save cut short): restoring its queue without the position"
                    )
                }
                return plan
            case .read, .missing:
                continue
            case .unreadable(let reason, let setAside):
                if setAside { plan.setAside.append(Aside(name: file.name, reason: reason)) }
            }
        }
        if let problem { plan.setAside.append(Aside(name: SessionFiles.state, reason: problem)) }
        return plan
    }

    /// Why a state file that decoded is not one to restore.
    struct Refusal: Error, CustomStringConvertible {
        /// What is wrong with it.
        var description: String
    }

    /// The queue file `state` names, or why it names none.
    static func queueFile(of state: SavedState) -> Result<SessionFiles.QueueFile, Refusal> {
        guard versions.contains(state.version) else {
            return .failure(
                Refusal(
                    description:
                        "state version \(state.version) is not one Quaver reads (\(versions.lowerBound) to \(versions.upperBound))"
                ))
        }
        guard state.version >= 2 else { return .success(.unnumbered) }
        guard let generation = state.queueGeneration, generation >= 1 else {
            return .failure(Refusal(description: "the state names no queue file (no queueGeneration from 1)"))
        }
        return .success(.generation(generation))
    }

    /// `state` for a queue of `count` entries restored without it: no current entry, at the
    /// start, with its options.
    static func queueAlone(_ state: SavedState, count: Int) -> SavedState {
        var state = state
        state.queueCount = count
        state.current = nil
        state.position = 0
        return state
    }
}
