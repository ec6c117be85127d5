import Testing

@testable import quaver

/// What a start restores from the files it finds: the whole save when it is there, and
/// the queue whatever else is damaged.
@Suite("session restore: the newest whole save, never less than the queue")
struct SessionRestoreTests {
    typealias QueueFile = SessionFiles.QueueFile
    typealias Reading = SessionRestore.Reading

    /// A folder as a start finds it: the state file as read and each queue file's reading.
    struct Folder: CustomTestStringConvertible, Sendable {
        var name: String
        var state: Reading<CheckedState>
        var queues: [QueueFile: Reading<[String]>]
        var expected: SessionRestore.Plan
        var testDescription: String { name }
    }

    static let options = (volume: 0.5, rate: 1.5, loop: "all", shuffle: true)

    /// A saved state of `count` entries on entry 1 at 7 s, naming `generation` (nil: the
    /// old format, version 1).
    static func state(count: Int, generation: Int?) -> SavedState {
        SavedState(
            version: generation == nil ? 1 : 2, queueCount: count, queueGeneration: generation, current: 1,
            position: 7_000_000, volume: options.volume, rate: options.rate, loop: options.loop,
            shuffle: options.shuffle)
    }

    static func read(count: Int, generation: Int?) -> Reading<CheckedState> {
        .read(CheckedState(state: state(count: count, generation: generation)))
    }

    static func entries(_ count: Int, _ tag: String) -> [String] {
        (0..<count).map { "file:///music/\(tag)-\($0).flac" }
    }

    /// The options of the state naming `generation`, over a queue of `count` restored alone.
    static func alone(count: Int, named generation: Int?) -> SavedState {
        SessionRestore.queueAlone(state(count: 0, generation: generation), count: count)
    }

    static func whole(_ count: Int, _ file: QueueFile, _ tag: String) -> SessionRestore.Restored {
        let generation: Int? = if case .generation(let number) = file { number } else { nil }
        return SessionRestore.Restored(
            state: state(count: count, generation: generation), dropped: [], queue: entries(count, tag), file: file,
            whole: true)
    }

    static let folders: [Folder] = [
        Folder(
            name: "nothing saved: nothing restored", state: .missing, queues: [:],
            expected: SessionRestore.Plan()),
        Folder(
            name: "the whole save: the state and the queue file it names",
            state: read(count: 3, generation: 5), queues: [.generation(5): .read(entries(3, "g5"))],
            expected: .init(restored: whole(3, .generation(5), "g5"))),
        Folder(
            name: "a save cut short before its state: the previous whole save, the newer queue removed",
            state: read(count: 3, generation: 5),
            queues: [.generation(5): .read(entries(3, "g5")), .generation(6): .read(entries(4, "g6"))],
            expected: .init(restored: whole(3, .generation(5), "g5"), removed: [.generation(6)])),
        Folder(
            name: "a save cut short after its state: the old queue file removed",
            state: read(count: 4, generation: 6),
            queues: [.generation(5): .read(entries(3, "g5")), .generation(6): .read(entries(4, "g6"))],
            expected: .init(restored: whole(4, .generation(6), "g6"), removed: [.generation(5)])),
        Folder(
            name: "the old format, whole: restored, and a first new save cut short removed",
            state: read(count: 3, generation: nil),
            queues: [.unnumbered: .read(entries(3, "old")), .generation(1): .read(entries(2, "g1"))],
            expected: .init(restored: whole(3, .unnumbered, "old"), removed: [.generation(1)])),
        Folder(
            name: "the old format torn (the issue's 673 and 672): its queue without the position",
            state: read(count: 672, generation: nil), queues: [.unnumbered: .read(entries(673, "old"))],
            expected: .init(
                restored: .init(
                    state: alone(count: 673, named: nil), dropped: [], queue: entries(673, "old"), file: .unnumbered,
                    whole: false),
                warnings: [
                    "queue.m3u8 holds 673 entries, the state expects 672: restoring its queue without the position"
                ]
            )),
        Folder(
            name: "a damaged queue file with another count: its queue without the position",
            state: read(count: 3, generation: 5), queues: [.generation(5): .read(entries(2, "g5"))],
            expected: .init(
                restored: .init(
                    state: alone(count: 2, named: 5), dropped: [], queue: entries(2, "g5"), file: .generation(5),
                    whole: false),
                warnings: [
                    "queue.5.m3u8 holds 2 entries, the state expects 3: restoring its queue without the position"
                ])),
        Folder(
            name: "the named queue file missing: the newest other one, without the position",
            state: read(count: 3, generation: 5),
            queues: [.generation(4): .read(entries(2, "g4")), .unnumbered: .read(entries(1, "old"))],
            expected: .init(
                restored: .init(
                    state: alone(count: 2, named: 5), dropped: [], queue: entries(2, "g4"), file: .generation(4),
                    whole: false),
                warnings: [
                    "queue.5.m3u8, which the state names, is missing: restoring the queue of queue.4.m3u8 without the position"
                ])),
        Folder(
            name: "the named queue file too large: set aside, the next one restored",
            state: read(count: 3, generation: 5),
            queues: [
                .generation(5): .unreadable("too large", setAside: true), .generation(3): .read(entries(1, "g3")),
            ],
            expected: .init(
                restored: .init(
                    state: alone(count: 1, named: 5), dropped: [], queue: entries(1, "g3"), file: .generation(3),
                    whole: false),
                setAside: [.init(name: "queue.5.m3u8", reason: "too large")],
                warnings: [
                    "cannot read the queue: too large: restoring the queue of queue.3.m3u8 without the position"
                ])),
        Folder(
            name: "the named queue file too large and no other: both set aside, afresh",
            state: read(count: 3, generation: nil), queues: [.unnumbered: .unreadable("too large", setAside: true)],
            expected: .init(setAside: [
                .init(name: "queue.m3u8", reason: "too large"),
                .init(name: "state.json", reason: "cannot read the queue: too large"),
            ])),
        Folder(
            name: "the old format's queue missing (read as empty) with entries expected: the state set aside",
            state: read(count: 3, generation: nil), queues: [.unnumbered: .read([])],
            expected: .init(setAside: [
                .init(name: "state.json", reason: "queue.m3u8 holds 0 entries, the state expects 3")
            ])
        ),
        Folder(
            name: "the old format's empty queue: restored empty",
            state: read(count: 0, generation: nil), queues: [.unnumbered: .read([])],
            expected: .init(restored: whole(0, .unnumbered, "old"))),
        Folder(
            name: "a corrupt state: set aside, the newest queue restored with the player's first options",
            state: .unreadable("not a Quaver state file", setAside: true),
            queues: [.generation(7): .read(entries(5, "g7")), .generation(6): .read(entries(4, "g6"))],
            expected: .init(
                restored: .init(
                    state: SessionRestore.queueAlone(.initial, count: 5), dropped: [], queue: entries(5, "g7"),
                    file: .generation(7), whole: false),
                setAside: [.init(name: "state.json", reason: "not a Quaver state file")])),
        Folder(
            name: "a corrupt state and no queue: set aside, afresh",
            state: .unreadable("not a Quaver state file", setAside: true), queues: [:],
            expected: .init(setAside: [.init(name: "state.json", reason: "not a Quaver state file")])),
        Folder(
            name: "no state beside a queue file (a first save cut short): its queue",
            state: .missing, queues: [.generation(1): .read(entries(3, "g1"))],
            expected: .init(
                restored: .init(
                    state: SessionRestore.queueAlone(.initial, count: 3), dropped: [], queue: entries(3, "g1"),
                    file: .generation(1), whole: false),
                warnings: [
                    "no saved state names queue.1.m3u8 (a first save cut short): restoring its queue without the position"
                ])),
        Folder(
            name: "a state of an unknown version: set aside, the queue kept",
            state: .read(
                CheckedState(
                    state: SavedState(
                        version: 9, queueCount: 1, current: nil, position: 0, volume: 1, rate: 1, loop: "off",
                        shuffle: false))),
            queues: [.generation(2): .read(entries(1, "g2"))],
            expected: .init(
                restored: .init(
                    state: SessionRestore.queueAlone(.initial, count: 1), dropped: [], queue: entries(1, "g2"),
                    file: .generation(2), whole: false),
                setAside: [.init(name: "state.json", reason: "state version 9 is not one Quaver reads (1 to 2)")])),
        Folder(
            name: "a version 2 state that names no queue file: set aside",
            state: .read(CheckedState(state: state(count: 1, generation: 0))), queues: [:],
            expected: .init(setAside: [
                .init(name: "state.json", reason: "the state names no queue file (no queueGeneration from 1)")
            ])),
        Folder(
            name: "unreadable queue files are passed over for the next, and only those too large set aside",
            state: .missing,
            queues: [
                .generation(9): .unreadable("too large", setAside: true),
                .generation(8): .unreadable("Permission denied", setAside: false), .generation(7): .read([]),
                .generation(6): .read(entries(2, "g6")),
            ],
            expected: .init(
                restored: .init(
                    state: SessionRestore.queueAlone(.initial, count: 2), dropped: [], queue: entries(2, "g6"),
                    file: .generation(6), whole: false),
                setAside: [.init(name: "queue.9.m3u8", reason: "too large")],
                warnings: [
                    "no saved state names queue.6.m3u8 (a first save cut short): restoring its queue without the position"
                ])),
    ]

    @Test(arguments: folders)
    func restores(_ folder: Folder) {
        var reads: [QueueFile] = []
        let plan = SessionRestore.plan(
            state: folder.state, queueFiles: folder.queues.keys.sorted(by: >),
            read: { file in
                reads.append(file)
                return folder.queues[file] ?? .missing
            })
        #expect(plan == folder.expected)
        #expect(Set(reads).count == reads.count, "a file is read once: \(reads)")
    }

    @Test("a whole save reads only the queue file its state names")
    func readsOnlyTheNamedQueue() {
        var reads: [QueueFile] = []
        _ = SessionRestore.plan(
            state: Self.read(count: 1, generation: 3), queueFiles: [.generation(4), .generation(3), .unnumbered],
            read: { file in
                reads.append(file)
                return .read(Self.entries(1, "x"))
            })
        #expect(reads == [.generation(3)])
    }
}
