import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// A listener's commands as inputs of the player's state, without GStreamer: what each one
/// selects and shows, and what it asks the player to do.
@Suite("Player state: the listener's commands")
struct PlayerStateCommandTests {
    typealias Action = PlayerState.Action

    /// The engine holding entry `id` (nil: nothing), toward `intent`.
    static func engine(holding id: UInt64?, _ intent: PlaybackStatus) -> PlayerState.EngineView {
        PlayerState.EngineView(
            status: id == nil ? .stopped : intent, intent: id == nil ? .stopped : intent, settledEntry: id,
            upcomingEntry: id, loadedEntry: id, hasLoad: id != nil)
    }

    static let stopped = engine(holding: nil, .stopped)

    @Test func playWithNothingQueuedIsRefused() {
        var state = PlayerState()
        #expect(state.command(.play, Self.stopped) == [.refused])
        #expect(state.command(.preroll(index: nil, at: nil), Self.stopped) == [.refused])
        #expect(state.command(.playEntry(index: 0, at: nil), Self.stopped) == [.refused])
    }

    @Test func playResumesTheHeldEntryAndLoadsAnyOther() {
        var state = PlayerStateTests.queued(3)
        let first = state.queue[0].id
        #expect(state.command(.play, Self.engine(holding: first, .paused)) == [.resume])
        #expect(
            state.command(.play, Self.engine(holding: state.queue[2].id, .paused)) == [.load(at: nil, intent: .playing)]
        )
        #expect(state.selectedID == first)
    }

    @Test func playAndPauseWhileTagsAreReadChangeWhereTheLoadHeads() {
        var state = PlayerStateTests.queued(2)
        _ = state.startReading(at: nil, intent: .paused)
        #expect(state.command(.play, Self.stopped) == [])
        #expect(state.reading?.intent == .playing)
        #expect(state.command(.pause, Self.stopped) == [], "the engine has nothing to pause yet")
        #expect(state.reading?.intent == .paused)
        #expect(state.command(.seek(to: .seconds(7)), Self.stopped) == [])
        #expect(state.reading?.position == .seconds(7), "it loads there once read")
    }

    @Test func pauseOnlyWhatPlaysAndToggleGoesOnWhileTheAudioWaits() {
        var state = PlayerStateTests.queued(2)
        let first = state.queue[0].id
        #expect(state.command(.pause, Self.engine(holding: first, .paused)) == [])
        #expect(state.command(.pause, Self.engine(holding: first, .playing)) == [.pause])
        #expect(
            state.command(.togglePlayPause(waitingForAudio: false), Self.engine(holding: first, .playing)) == [.pause])
        #expect(
            state.command(.togglePlayPause(waitingForAudio: true), Self.engine(holding: first, .playing)) == [.resume],
            "audio that waits is shown paused: the toggle plays on")
        #expect(
            state.command(.togglePlayPause(waitingForAudio: false), Self.engine(holding: first, .paused)) == [.resume])
    }

    @Test func nextWhileStoppedShowsWhatPlayWouldStartAndWhilePlayingLoadsIt() {
        var state = PlayerStateTests.queued(3)
        #expect(state.command(.next, Self.stopped) == [.readSelected, .announce(.transport)])
        #expect(state.selectedIndex == 1 && state.shown?.id == state.queue[1].id)
        #expect(
            state.command(.next, Self.engine(holding: state.queue[1].id, .playing)) == [
                .load(at: nil, intent: .playing)
            ])
        #expect(state.selectedIndex == 2)
        #expect(state.command(.next, Self.engine(holding: state.queue[2].id, .playing)) == [], "the end: nothing")
        #expect(state.selectedIndex == 2)
    }

    @Test func previousRestartsAfterThreeSecondsAndAtTheFirstEntry() {
        var state = PlayerStateTests.queued(3)
        state.selection.move(from: nil, to: 1, in: state.queue, forward: true)
        let second = state.queue[1].id
        #expect(
            state.command(.previous(position: .seconds(5)), Self.engine(holding: second, .playing)) == [
                .seek(to: .zero)
            ])
        #expect(
            state.command(.previous(position: .seconds(1)), Self.engine(holding: second, .playing)) == [
                .load(at: nil, intent: .playing)
            ])
        #expect(state.selectedIndex == 0)
        let first = state.queue[0].id
        #expect(
            state.command(.previous(position: .seconds(1)), Self.engine(holding: first, .playing)) == [.seek(to: .zero)]
        )
        #expect(state.command(.previous(position: .seconds(1)), Self.stopped) == [], "stopped at the first: nothing")
    }

    @Test func goToAnUnknownEntryIsRefusedAndAKnownOneKeepsTheState() {
        var state = PlayerStateTests.queued(3)
        #expect(state.command(.goTo(999), Self.stopped) == [.refused])
        let third = state.queue[2].id
        #expect(
            state.command(.goTo(third), Self.engine(holding: state.queue[0].id, .paused)) == [
                .load(at: nil, intent: .paused)
            ])
        #expect(state.selectedID == third)
    }

    @Test func aSeekNeedsTheSelectedEntryHeld() {
        var state = PlayerStateTests.queued(2)
        #expect(state.command(.seek(to: .seconds(3)), Self.stopped) == [.refused], "nothing loaded")
        #expect(
            state.command(.seek(to: .seconds(3)), Self.engine(holding: state.queue[1].id, .playing)) == [.refused],
            "another entry held")
        #expect(
            state.command(.seek(to: .seconds(-2)), Self.engine(holding: state.queue[0].id, .paused)) == [
                .seek(to: .zero)
            ])
    }

    @Test func prerollAndPlayEntryLoadTheEntryAsked() {
        var state = PlayerStateTests.queued(3)
        #expect(
            state.command(.preroll(index: 2, at: .seconds(4)), Self.stopped) == [
                .load(at: .seconds(4), intent: .paused)
            ])
        #expect(state.selectedIndex == 2)
        #expect(
            state.command(.preroll(index: 9, at: nil), Self.stopped) == [.load(at: nil, intent: .paused)],
            "out of range: the selected")
        #expect(state.selectedIndex == 2)
        #expect(
            state.command(.playEntry(index: 1, at: .seconds(2)), Self.stopped) == [
                .load(at: .seconds(2), intent: .playing)
            ])
        #expect(state.command(.playEntry(index: 5, at: nil), Self.stopped) == [.refused])
        #expect(state.selectedIndex == 1)
    }

    @Test func playAddedRemembersWhereItCameFrom() {
        var state = PlayerStateTests.queued(2)
        let (added, _) = state.insert([MediaItem(uri: "file:///music/new.flac")], at: 1)
        let id = added[0].id
        #expect(
            state.command(.playAdded(id), Self.engine(holding: state.queue[0].id, .playing)) == [
                .load(at: nil, intent: .playing)
            ])
        #expect(state.selectedID == id)
        #expect(state.command(.playAdded(999), Self.stopped) == [.refused])
    }

    @Test func stopAbandonsAReadAndIsNoRunOut() {
        var state = PlayerStateTests.queued(2)
        state.ranOut = true
        _ = state.startReading(at: nil, intent: .playing)
        #expect(state.command(.stop, Self.engine(holding: state.queue[0].id, .playing)) == [.stop])
        #expect(state.reading == nil && !state.ranOut)
    }

    @Test func aCommandEndsWhatAnInterruptionWouldResume() {
        var state = PlayerStateTests.queued(2)
        let first = state.queue[0].id
        _ = state.stateRequested(.paused, Self.engine(holding: first, .playing))
        _ = state.command(.pause, Self.engine(holding: first, .paused))
        let afterInterruption = state.stateRequested(.playing, Self.engine(holding: first, .paused))
        #expect(!afterInterruption.contains(.play), "the listener paused meanwhile: \(afterInterruption)")
    }
}
