import SeededRandom
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// The player's own state without GStreamer: queue edits, the selection, the shown entry and
/// a load waiting for tags, each step checked for what it decides.
@Suite("Player state: the queue, the selection and the shown entry")
struct PlayerStateTests {
    typealias Action = PlayerState.Action

    static func files(_ count: Int) -> [MediaItem] {
        (1...count).map { MediaItem(uri: "file:///music/\($0).flac") }
    }

    /// A state with `count` files queued, their tags read, the first one selected and shown.
    static func queued(_ count: Int) -> PlayerState {
        var state = PlayerState()
        _ = state.insert(files(count), at: 0)
        for index in state.queue.indices { state.queue[index].info = TrackInfo() }
        state.show(state.selected)
        return state
    }

    /// The soak's "removed track still shown": the shown entry plays on while the selection has
    /// moved to the next one, whose tags are being read; a client removes the shown one. It
    /// must not stay shown (it did, Paused, with Next and Previous enabled).
    @Test func removingTheShownEntryWhileAnotherIsReadShowsTheSelectedOne() throws {
        var state = Self.queued(3)
        let shown = state.queue[0]
        state.queue[1].info = nil  // read when it loads
        state.selection.move(from: shown.id, to: 1, in: state.queue, forward: true)
        _ = state.startReading(at: nil, intent: .playing)

        let removal = state.remove(id: shown.id, requested: .playing)
        let actions = try #require(removal)
        #expect(state.shown?.id == state.queue[0].id, "the selected entry is shown in its place")
        #expect(state.queue.index(of: shown.id) == nil)
        #expect(state.reading != nil, "the selected entry's load still waits for its tags")
        #expect(actions == [.forget(shown.id), .nextMayHaveChanged, .announce(.queue)])
    }

    /// Removing the selected entry while playing moves on as Next would; its follower is
    /// shown at once, not once its tags are read.
    @Test func removingTheSelectedEntryWhilePlayingShowsAndLoadsTheFollower() throws {
        var state = Self.queued(3)
        let removed = state.queue[0]
        let removal = state.remove(id: removed.id, requested: .playing)
        let actions = try #require(removal)
        #expect(state.selectedIndex == 0 && state.selected?.uri == "file:///music/2.flac")
        #expect(state.shown?.id == state.selectedID)
        #expect(actions == [.forget(removed.id), .announce(.queue), .load(at: nil, intent: .playing)])
    }

    /// Removing the last entry with nothing after it stops, and shows what Play would start.
    @Test func removingTheLastSelectedEntryStopsAndShowsWhatPlayWouldStart() throws {
        var state = Self.queued(2)
        state.selection.move(from: nil, to: 1, in: state.queue, forward: true)
        state.show(state.selected)
        let lastID = state.queue[1].id
        let removal = state.remove(id: lastID, requested: .playing)
        let actions = try #require(removal)
        #expect(actions == [.forget(lastID), .announce(.queue), .stop, .readSelected])
        #expect(state.selectedIndex == 0 && state.shown?.id == state.queue[0].id)

        let lastRemoval = state.remove(id: state.queue[0].id, requested: .stopped)
        let last = try #require(lastRemoval)
        #expect(last.contains(.stop))
        #expect(state.selectedIndex == nil && state.shown == nil && state.queue.isEmpty)
        #expect(state.remove(id: 99, requested: .stopped) == nil, "an unknown id changes nothing")
    }

    /// A read that ends after another load (or a move) came is not the one waited for.
    @Test func onlyTheLatestReadIsWaitedFor() {
        var state = Self.queued(2)
        let first = state.startReading(at: .seconds(3), intent: .playing)
        let second = state.startReading(at: nil, intent: .paused)
        #expect(state.finishReading(generation: first) == nil)
        #expect(state.finishReading(generation: second)?.intent == .paused)
        #expect(state.reading == nil)
        let third = state.startReading(at: nil, intent: .playing)
        state.abandonReading()
        #expect(state.finishReading(generation: third) == nil)
    }

    /// Replacing the queue shows its first entry at once and plays when asked.
    @Test func replacingTheQueueShowsItsFirstEntry() {
        var state = Self.queued(3)
        state.interruption.interrupted()
        let actions = state.replace(with: Self.files(2), play: true)
        #expect(state.queue.count == 2 && state.shown?.id == state.queue[0].id)
        #expect(actions.first == .stop && actions.last == .play)
        #expect(!state.interruption.shouldResume, "a new queue is the listener's act: the interruption's end leaves it")
    }

    // MARK: - Random walks

    enum Step: CustomStringConvertible {
        case insert(count: Int, at: Int, streams: Bool)
        case remove(Int)
        case removeUnknown
        case replace(count: Int)
        case read(Int)
        case fail(Int)
        case move(to: Int)
        case load(PlaybackStatus)
        case readFinished(ReadOutcome)
        case settle
        case ended
        case loadedFailed
        case switched
        case repeatMode(RepeatMode)
        case command(PlayerState.Command)

        var description: String {
            switch self {
            case .insert(let count, let at, let streams): "insert \(count) at \(at)\(streams ? " (streams)" : "")"
            case .remove(let index): "remove #\(index)"
            case .removeUnknown: "remove an unknown id"
            case .replace(let count): "replace with \(count)"
            case .read(let index): "tags of #\(index) read"
            case .fail(let index): "#\(index) found unplayable"
            case .move(let index): "select #\(index)"
            case .load(let intent): "load toward \(intent)"
            case .readFinished(let outcome): "the read before the load ends: \(outcome)"
            case .settle: "the loaded entry settles"
            case .ended: "the loaded entry ends"
            case .loadedFailed: "the loaded entry fails"
            case .switched: "playbin switches to what was handed over"
            case .repeatMode(let mode): "repeat \(mode)"
            case .command(let command): "command \(command)"
            }
        }
    }

    /// How a read before a load ends.
    enum ReadOutcome: CaseIterable {
        case read, tooSlow, broken

        var result: Result<TrackInfo, MediaError> {
            switch self {
            case .read: .success(TrackInfo())
            case .tooSlow: .failure(MediaError("timed out", isTimeout: true))
            case .broken: .failure(MediaError("not an audio file"))
            }
        }
    }

    static func randomStep(_ random: inout SplitMix, count: Int) -> Step {
        guard count > 0 else {
            return random.chance(0.8) ? .insert(count: random.int(1..<4), at: 0, streams: false) : .removeUnknown
        }
        let index = random.int(0..<count)
        switch random.int(0..<24) {
        case 0, 1, 2:
            return .insert(count: random.int(1..<4), at: random.int(0..<(count + 1)), streams: random.chance(0.3))
        case 3, 4, 5: return .remove(index)
        case 6: return random.chance(0.2) ? .replace(count: random.int(0..<4)) : .removeUnknown
        case 7, 8: return .read(index)
        case 9: return .fail(index)
        case 10: return .move(to: index)
        case 11: return .load(random.pick([.playing, .paused]))
        case 12, 13: return .readFinished(random.pick(ReadOutcome.allCases))
        case 14: return .settle
        case 15: return .ended
        case 16: return .loadedFailed
        case 17: return .switched
        case 19, 20:
            return .command(
                random.pick([.play, .pause, .stop, .next, .togglePlayPause(waitingForAudio: random.chance(0.2))]))
        case 21: return .command(.previous(position: random.chance(0.5) ? .seconds(5) : .seconds(1)))
        case 22:
            return .command(random.chance(0.8) ? .goTo(UInt64(random.int(0..<(count * 3)))) : .seek(to: .seconds(2)))
        case 23: return .command(.preroll(index: random.chance(0.5) ? index : nil, at: nil))
        default: return .repeatMode(random.pick(RepeatMode.allCases))
        }
    }

    @Test(
        "the shown entry is queued or none, no entry is lost, a load waits only for the selected entry",
        arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func invariantsHold(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var state = PlayerState()
        /// The ids the queue should hold, in order: what the steps added and removed.
        var expected: [UInt64] = []
        /// Where the commands received lead (the engine's intent, as the player reads it).
        var requested = PlaybackStatus.stopped
        /// The entry whose stream the engine holds.
        var loaded: UInt64?
        var view: PlayerState.EngineView {
            PlayerState.EngineView(
                status: loaded == nil ? .stopped : requested, intent: loaded == nil ? .stopped : requested,
                settledEntry: loaded, upcomingEntry: loaded, loadedEntry: loaded, hasLoad: loaded != nil)
        }
        /// The read a load waits for: its entry and generation.
        var read: (id: UInt64, generation: Int)?
        let check = InvariantChecks()
        for number in 0..<2_000 where !check.failed {
            let step = Self.randomStep(&random, count: state.queue.count)
            var actions: [Action] = []
            let removedID: UInt64?
            switch step {
            case .insert(let count, let at, let streams):
                let items = (0..<count).map {
                    MediaItem(uri: streams ? "http://radio.invalid/\($0)" : "file:///\(number)/\($0).flac")
                }
                let (added, decided) = state.insert(items, at: at)
                expected.insert(contentsOf: added.map(\.id), at: min(at, expected.count))
                actions = decided
                removedID = nil
            case .remove(let index):
                let id = state.queue[index].id
                actions = state.remove(id: id, requested: requested) ?? []
                expected.removeAll { $0 == id }
                removedID = id
            case .removeUnknown:
                check(state.remove(id: .max, requested: requested) == nil, "an unknown id changes nothing")
                removedID = nil
            case .replace(let count):
                actions = state.replace(with: count > 0 ? Self.files(count) : [], play: false)
                expected = state.queue.entries.map(\.id)
                requested = .stopped
                removedID = nil
            case .read(let index):
                state.queue[index].info = TrackInfo()
                _ = state.showAgainIfShown(state.queue[index].id)
                removedID = nil
            case .fail(let index):
                state.queue[index].failure = "broken"
                _ = state.showAgainIfShown(state.queue[index].id)
                removedID = nil
            case .move(let index):
                if index != state.selectedIndex { state.abandonReading() }
                state.selection.move(from: state.selectedID, to: index, in: state.queue, forward: true)
                if requested == .stopped { state.show(state.selected) }
                removedID = nil
            case .load(let intent):
                actions = state.selectedIndex == nil ? [] : [.load(at: nil, intent: intent)]
                removedID = nil
            case .readFinished(let outcome):
                if let (id, generation) = read {
                    actions = state.readBeforeLoadEnded(id, generation: generation, outcome.result, view)
                }
                read = nil
                removedID = nil
            case .settle:
                actions = state.settled(view)
                if let loaded, state.queue.contains(loaded), requested != .stopped {
                    check(state.shown?.id == loaded, "the settled entry is shown: \(number) \(step)")
                }
                removedID = nil
            case .ended:
                actions = loaded.map { state.ended($0, view) } ?? []
                removedID = nil
            case .loadedFailed:
                actions = loaded.map { state.failed($0, reason: "broken", intent: nil, view) } ?? []
                removedID = nil
            case .switched:
                removedID = nil
                guard let from = loaded, case .handOver(let item) = state.handOverPlan(view) else { break }
                if state.selection.order.repeatMode == .off {
                    check(item.entryID != from, "an entry is not handed over to follow itself: \(number)")
                }
                actions = state.switched(from: from, to: item.entryID, view)
                loaded = item.entryID
                if state.reading == nil {
                    check(state.selectedID == item.entryID, "the switch selects what was handed over: \(number)")
                }
            case .repeatMode(let mode):
                actions = state.setRepeatMode(mode)
                removedID = nil
            case .command(let command):
                let before = state.selectedID
                actions = state.command(command, view)
                removedID = nil
                if actions == [.refused] {
                    check(state.selectedID == before, "a refused command moves nothing: \(number) \(step)")
                }
                if case .goTo(let id) = command, !actions.contains(.refused) {
                    check(state.selectedID == id, "Go to selects its entry: \(number) \(step)")
                }
            }
            // The player's side of the actions: the engine as this walk models it, and the
            // steps a load runs (the read before it), in the order the player runs them.
            var pending = actions[...]
            while let action = pending.popFirst() {
                switch action {
                case .load(let position, let intent):
                    check(state.selectedIndex != nil, "a load needs a selected entry: \(number) \(step)")
                    check(intent != .stopped, "a load heads somewhere: \(number) \(step)")
                    pending = state.loadSelected(at: position, intent: intent) + pending
                case .readBeforeLoad(let id, _, let generation):
                    check(id == state.selectedID, "only the selected entry is read before its load: \(number) \(step)")
                    read = (id, generation)
                case .startLoad(let id, _, let intent):
                    check(
                        id == state.selectedID, "a load (and its position) is the selected entry's: \(number) \(step)")
                    check(state.reading == nil, "no read waits once a load starts: \(number) \(step)")
                    requested = intent
                    loaded = id
                case .stop:
                    requested = .stopped
                    loaded = nil
                case .play where state.selectedIndex != nil:
                    requested = .playing
                case .resume:
                    check(loaded == state.selectedID && loaded != nil, "only the held entry resumes: \(number) \(step)")
                    requested = .playing
                case .pause:
                    check(requested == .playing, "only what plays pauses: \(number) \(step)")
                    requested = .paused
                case .seek:
                    check(loaded == state.selectedID && loaded != nil, "a seek is in the held entry: \(number) \(step)")
                default:
                    break
                }
            }
            let context = "seed \(seed), step \(number): \(step)"
            check(state.queue.entries.map(\.id) == expected, "no entry lost or added unasked: \(context)")
            if let shown = state.shown {
                check(state.queue.contains(shown.id), "the shown entry is queued: \(context)")
            }
            if let removedID { check(state.shown?.id != removedID, "a removed entry is never shown: \(context)") }
            if let index = state.selectedIndex {
                check(state.queue.indices.contains(index), "the selection is in the queue: \(context)")
            } else {
                check(state.reading == nil, "a load waits only for a selected entry: \(context)")
            }
            if state.queue.isEmpty { check(state.shown == nil && state.selectedIndex == nil, "empty: \(context)") }
            // Next and Previous, by hand, in queue order: a neighbour exists unless at an end.
            if let index = state.selectedIndex, !state.selection.order.shuffle,
                state.queue.entries.allSatisfy({ $0.failure == nil })
            {
                let wraps = state.selection.order.repeatMode == .all && state.queue.count > 1
                check(
                    state.selection.canMove(forward: true, in: state.queue) == (wraps || index < state.queue.count - 1),
                    "Next matches the order and the loop mode: \(context)")
                check(
                    state.selection.canMove(forward: false, in: state.queue) == (wraps || index > 0),
                    "Previous matches the order and the loop mode: \(context)")
            }
        }
    }
}
