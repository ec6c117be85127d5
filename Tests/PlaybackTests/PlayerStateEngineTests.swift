import Logging
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// What the player's state makes of the engine's reports, without GStreamer: the end of the
/// queue, failures, gapless switches, the sound server's interruptions, what clients are
/// shown when tags come.
@Suite("Player state: the engine's reports")
struct PlayerStateEngineTests {
    typealias Action = PlayerState.Action
    typealias View = PlayerState.EngineView

    /// Two files queued, the first selected and shown, nothing read.
    static func twoFiles() -> PlayerState {
        var state = PlayerState()
        _ = state.insert([MediaItem(uri: "file:///music/a.flac"), MediaItem(uri: "file:///music/b.flac")], at: 0)
        state.show(state.selected)
        return state
    }

    /// The engine playing the entry `id`.
    static func playing(_ id: UInt64?) -> View {
        View(status: .playing, intent: .playing, settledEntry: id, upcomingEntry: id, loadedEntry: id)
    }

    static func logs(_ actions: [Action], _ level: Logger.Level) -> [String] {
        actions.compactMap { if case .log(level, let line) = $0 { line } else { nil } }
    }

    @Test func aFailureIsRecordedAndLoggedOnce() {
        var state = Self.twoFiles()
        let b = state.queue[1].id
        let first = state.handOverFailed(b, reason: "broken")
        let again = state.handOverFailed(b, reason: "broken again")
        #expect(state.queue[1].failure == "broken" && state.queue[0].failure == nil)
        #expect(first.contains(.announce(.entryInfo(b))))
        #expect(Self.logs(first, .warning) == ["skipping /music/b.flac: broken"])
        #expect(again.isEmpty)
    }

    @Test func onlyTheShownEntryIsShownAgainWhenItsTagsCome() {
        var state = Self.twoFiles()
        var info = TrackInfo()
        info.title = "B"
        let b = state.record(info, at: 1) + state.showIfShown(1)
        #expect(state.shown?.info == nil, "another entry is not shown")
        #expect(b == [.announce(.entryInfo(state.queue[1].id))])

        info.title = "A"
        let a = state.record(info, at: 0) + state.showIfShown(0)
        #expect(state.shown?.info?.title == "A")
        #expect(a == [.announce(.entryInfo(state.queue[0].id)), .announce(.metadata)])
    }

    @Test func theEndOfTheQueueStopsAndSaysSo() {
        var state = Self.twoFiles()
        let (a, b) = (state.queue[0].id, state.queue[1].id)
        let first = state.ended(a, Self.playing(a))
        #expect(first.last == .load(at: nil, intent: .playing), "what follows plays")
        #expect(state.selectedID == b && !state.ranOut)
        let last = state.ended(b, Self.playing(b))
        #expect(last.last == .stop, "nothing follows the last entry")
        #expect(state.ranOut, "stopped because the queue ran out")
    }

    @Test func aFailedEntryIsSkippedInTheDirectionOfTravelAndAllFailedStops() {
        var state = Self.twoFiles()
        let (a, b) = (state.queue[0].id, state.queue[1].id)
        let skip = state.failed(a, reason: "no decoder", intent: nil, Self.playing(a))
        #expect(skip.last == .load(at: nil, intent: .playing) && state.selectedID == b)
        let stop = state.failed(b, reason: "no decoder", intent: nil, Self.playing(b))
        #expect(stop.last == .stop && state.ranOut)
        #expect(state.queue.entries.allSatisfy { $0.failure != nil })
    }

    /// Previous onto the first entry, found unplayable only once it loads (its failure was
    /// not known when the command came): playback turns around to what follows it, and a
    /// failure of that one goes on forward. A stop here would leave Next and Previous
    /// moving a stopped selection, with nothing heard.
    @Test func previousOntoAnUnplayableFirstEntryTurnsAroundAndPlaysOn() {
        var state = PlayerState()
        let items = ["a.mp4", "b.mkv", "c.ogv", "d.flac"].map { MediaItem(uri: "file:///music/\($0)") }
        _ = state.insert(items, at: 0)
        let (a, b, c, d) = (state.queue[0].id, state.queue[1].id, state.queue[2].id, state.queue[3].id)
        _ = state.command(.next, Self.playing(a))
        #expect(state.selectedID == b)
        #expect(state.command(.previous(position: .zero), Self.playing(b)) == [.load(at: nil, intent: .playing)])
        #expect(state.selectedID == a)

        let back = state.failed(a, reason: "no decoder", intent: nil, Self.playing(b))
        #expect(back.last == .load(at: nil, intent: .playing), "\(back)")
        #expect(state.selectedID == b && !state.ranOut)
        #expect(Self.logs(back, .warning) == ["skipping /music/a.mp4: no decoder"])

        let onward = state.failed(b, reason: "no decoder", intent: nil, Self.playing(b))
        #expect(onward.last == .load(at: nil, intent: .playing) && state.selectedID == c, "on forward, not back")
        _ = state.failed(c, reason: "no decoder", intent: nil, Self.playing(c))
        #expect(state.selectedID == d)
        let end = state.failed(d, reason: "no decoder", intent: nil, Self.playing(d))
        #expect(end.last == .stop && state.ranOut, "nothing playable is left either way")
    }

    @Test func aSwitchSelectsTheEntryHandedOverUnlessAnotherIsReadAndARemovedOneGoesOn() {
        var state = Self.twoFiles()
        let (a, b) = (state.queue[0].id, state.queue[1].id)
        _ = state.switched(from: a, to: b, Self.playing(a))
        #expect(state.selectedID == b)

        var reading = Self.twoFiles()
        let (c, d) = (reading.queue[0].id, reading.queue[1].id)
        _ = reading.startReading(at: nil, intent: .playing)
        _ = reading.switched(from: nil, to: d, Self.playing(c))
        #expect(reading.selectedID == c, "the entry being read stays selected")

        var removed = Self.twoFiles()
        let gone = removed.queue[1].id
        _ = removed.remove(id: gone, requested: .playing)
        let actions = removed.switched(from: removed.queue[0].id, to: gone, Self.playing(removed.queue[0].id))
        #expect(actions.last == .stop, "nothing follows: the end of the queue")
    }

    @Test func anInterruptionPausesAndItsEndResumesUnlessSomeoneActed() {
        var state = Self.twoFiles()
        let paused = state.stateRequested(.paused, Self.playing(state.selectedID))
        #expect(paused.last == .pauseForInterruption)
        var view = Self.playing(state.selectedID)
        view.intent = .paused
        #expect(state.stateRequested(.playing, view).last == .play)

        _ = state.stateRequested(.paused, Self.playing(state.selectedID))
        state.userActed()
        #expect(!state.stateRequested(.playing, view).contains(.play), "a command since the pause keeps it paused")
    }

    @Test func aChangeOfWhatFollowsAfterPlaybinTookTheNextReloads() {
        var state = Self.twoFiles()
        let (a, b) = (state.queue[0].id, state.queue[1].id)
        var view = Self.playing(a)
        view.committedEntry = b
        #expect(state.nextMayHaveChanged(view).isEmpty, "b still follows")
        state.selection.setRepeatMode(.one)
        #expect(state.nextMayHaveChanged(view).last == .reloadSelected)
        view.committedEntry = nil
        #expect(state.nextMayHaveChanged(view) == [.prepareNext])
    }
}
