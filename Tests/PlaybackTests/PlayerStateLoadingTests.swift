import Testing

@testable import Media
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// Loading the selected entry without GStreamer: a local file's tags are read first, and the
/// read's end decides whether, where and toward what the load goes on.
@Suite("Player state: a load and the read before it")
struct PlayerStateLoadingTests {
    typealias Action = PlayerState.Action

    /// Three files queued, none read, the first selected.
    static func unread() -> PlayerState {
        var state = PlayerState()
        _ = state.insert((1...3).map { MediaItem(uri: "file:///music/\($0).flac") }, at: 0)
        return state
    }

    /// An engine that holds nothing yet.
    static let idle = PlayerState.EngineView(status: .stopped, intent: .stopped)

    /// The read a load's actions ask for: its entry and generation.
    static func read(_ actions: [Action]) -> (id: UInt64, generation: Int)? {
        for case .readBeforeLoad(let id, _, let generation) in actions { return (id, generation) }
        return nil
    }

    @Test func anUnreadLocalFileIsReadBeforeItLoads() throws {
        var state = Self.unread()
        let actions = state.loadSelected(at: .seconds(4), intent: .playing)
        let read = try #require(Self.read(actions))
        #expect(read.id == state.selectedID)
        #expect(!actions.contains { if case .startLoad = $0 { true } else { false } }, "nothing loads before the read")
        #expect(
            state.reading == PlayerState.Reading(position: .seconds(4), intent: .playing, generation: read.generation))
        #expect(state.isReading(read.id))
    }

    @Test func aFileWhoseTagsAreKnownAndAStreamLoadAtOnce() {
        var state = Self.unread()
        state.queue[0].info = TrackInfo()
        let id = state.queue[0].id
        #expect(
            state.loadSelected(at: .seconds(2), intent: .paused) == [.startLoad(id, at: .seconds(2), intent: .paused)])
        #expect(state.reading == nil)

        _ = state.insert([MediaItem(uri: "http://radio.invalid/live")], at: 0)
        state.selection.index = 0
        let stream = state.queue[0].id
        #expect(state.loadSelected(at: nil, intent: .playing) == [.startLoad(stream, at: nil, intent: .playing)])
    }

    @Test func aLoadTowardStoppedOnlyReads() throws {
        var state = Self.unread()
        state.queue[0].info = TrackInfo()
        #expect(state.loadSelected(at: nil, intent: .stopped) == [])
        state.queue[0].info = nil
        let read = try #require(Self.read(state.loadSelected(at: nil, intent: .stopped)))
        let ended = state.readBeforeLoadEnded(read.id, generation: read.generation, .success(TrackInfo()), Self.idle)
        #expect(ended == [.announce(.entryInfo(read.id))], "the tags are kept; nothing loads")
    }

    @Test func theReadEndsAndTheLoadGoesOnWhereItWasHeaded() throws {
        var state = Self.unread()
        let read = try #require(Self.read(state.loadSelected(at: .seconds(4), intent: .playing)))
        state.readingSeeks(to: .seconds(9))
        state.readingPaused()
        var info = TrackInfo()
        info.title = "One"
        let actions = state.readBeforeLoadEnded(read.id, generation: read.generation, .success(info), Self.idle)
        #expect(actions == [.announce(.entryInfo(read.id)), .startLoad(read.id, at: .seconds(9), intent: .paused)])
        #expect(state.queue[0].info?.title == "One" && state.reading == nil)
    }

    @Test func aReadOvertakenByAnotherLoadStartsNothing() throws {
        var state = Self.unread()
        let first = try #require(Self.read(state.loadSelected(at: nil, intent: .playing)))
        state.selection.move(from: first.id, to: 1, in: state.queue, forward: true)
        let second = try #require(Self.read(state.loadSelected(at: nil, intent: .playing)))
        #expect(second.id != first.id && second.generation != first.generation)

        let stale = state.readBeforeLoadEnded(first.id, generation: first.generation, .success(TrackInfo()), Self.idle)
        #expect(stale == [.log(.trace, "/music/1.flac was read, but another load came since")])
        #expect(state.queue[0].info == nil, "a stale read records nothing")
        #expect(state.reading != nil, "the second load still waits")
        let current = state.readBeforeLoadEnded(
            second.id, generation: second.generation, .success(TrackInfo()), Self.idle)
        #expect(current.last == .startLoad(second.id, at: nil, intent: .playing))
    }

    @Test func aSlowReadLoadsUnderTheFileNameAndReadsAgain() throws {
        var state = Self.unread()
        let read = try #require(Self.read(state.loadSelected(at: nil, intent: .playing)))
        let actions = state.readBeforeLoadEnded(
            read.id, generation: read.generation, .failure(MediaError("timed out", isTimeout: true)), Self.idle)
        #expect(
            Array(actions.dropFirst())
                == [.startLoad(read.id, at: nil, intent: .playing), .readAgain(read.id, uri: "file:///music/1.flac")])
        #expect(state.queue[0].failure == nil, "slow is not broken")
    }

    @Test func aBrokenFileIsSkippedBeforeItReachesThePipeline() throws {
        var state = Self.unread()
        let read = try #require(Self.read(state.loadSelected(at: .seconds(3), intent: .playing)))
        let actions = state.readBeforeLoadEnded(
            read.id, generation: read.generation, .failure(MediaError("not an audio file")), Self.idle)
        #expect(state.queue[0].failure == "not an audio file")
        #expect(state.selectedIndex == 1, "the queue goes on")
        #expect(actions.last == .load(at: nil, intent: .playing), "the next entry loads from its start")
        #expect(!actions.contains { if case .startLoad = $0 { true } else { false } })
    }
}
