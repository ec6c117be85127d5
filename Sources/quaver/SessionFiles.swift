/// The files of the saved session in its folder (`$XDG_STATE_HOME/quaver/`), by name: pure,
/// so that what start-up removes is decided without the disk.
///
/// `state.json` is the playback state, and names the queue file it goes with by its
/// generation: `queue.<generation>.m3u8`. A version before the generations kept the queue
/// in `queue.m3u8`, with a state that names none; that pair is still read.
enum SessionFiles {
    /// The playback state's file.
    static let state = "state.json"

    /// A queue file of the folder.
    enum QueueFile: Hashable, Comparable, CustomStringConvertible {
        /// `queue.m3u8`, from a version that wrote the state and the queue in place.
        case unnumbered
        /// `queue.<n>.m3u8`, n from 1: the queue of the save whose state names n.
        case generation(Int)

        /// The file's name in the folder.
        var name: String {
            switch self {
            case .unnumbered: "queue.m3u8"
            case .generation(let number): "queue.\(number).m3u8"
            }
        }

        /// The generation it counts as: the unnumbered file is older than any numbered one.
        var number: Int {
            switch self {
            case .unnumbered: 0
            case .generation(let number): number
            }
        }

        /// The file's name.
        var description: String { name }

        /// Older first.
        static func < (left: QueueFile, right: QueueFile) -> Bool { left.number < right.number }

        /// The queue file `name` is, or nil when it is none (the digits must be a number from 1,
        /// written as `description` writes it, so that one file has one name).
        init?(name: String) {
            if name == "queue.m3u8" {
                self = .unnumbered
                return
            }
            guard name.hasPrefix("queue."), name.hasSuffix(".m3u8") else { return nil }
            let digits = name.dropFirst("queue.".count).dropLast(".m3u8".count)
            guard let first = digits.first, first != "0", digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let number = Int(digits)
            else { return nil }
            self = .generation(number)
        }
    }

    /// The queue files among `names`, newest first.
    static func queueFiles(in names: [String]) -> [QueueFile] {
        names.compactMap(QueueFile.init(name:)).sorted(by: >)
    }

    /// The process that wrote the temporary file `name` (`.<file>.<pid>.<random>.tmp`, as
    /// `PrivateFolder.replace` names them), or nil when `name` is not one.
    static func temporaryWriter(of name: String) -> Int32? {
        guard name.hasPrefix("."), name.hasSuffix(".tmp") else { return nil }
        let parts = name.dropFirst().dropLast(".tmp".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, let pid = Int32(parts[parts.count - 2]), pid > 0, UInt32(parts[parts.count - 1]) != nil
        else { return nil }
        return pid
    }

    /// The temporary files among `names` that no write will finish: their writer is no
    /// longer running (a run killed, or cut off by a power cut, between writing one and
    /// renaming it). A running writer's are kept: it renames or removes them itself.
    static func staleTemporaries(in names: [String], isRunning: (Int32) -> Bool) -> [String] {
        names.filter { name in temporaryWriter(of: name).map { !isRunning($0) } ?? false }
    }
}
