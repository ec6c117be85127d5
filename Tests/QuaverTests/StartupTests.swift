import Testing

@testable import quaver

/// The start-up's decisions, input by input: each row drives a fresh `Startup` through its
/// inputs and checks what the last one asked for and where it left the daemon.
@Suite("start-up: the bus name and how the daemon ends")
struct StartupTests {
    enum Input: CustomStringConvertible, Sendable {
        case connected
        case sessionRead
        case end(Startup.Ending)

        var description: String {
            switch self {
            case .connected: "connected"
            case .sessionRead: "sessionRead"
            case .end(let ending): "end(\(ending))"
            }
        }
    }

    typealias Row = TableRow<Input, Startup.Action, Startup.Phase>

    static let rows: [Row] = [
        Row(
            name: "connected: the saved session is read first", inputs: [.connected], actions: [.readSession],
            phase: .readingSession),
        Row(
            name: "the session read: the name at once, whatever is still being found",
            inputs: [.connected, .sessionRead], actions: [.ownName], phase: .named),
        Row(name: "no session read before connecting", inputs: [.sessionRead], actions: [], phase: .made),
        Row(name: "connected once", inputs: [.connected, .sessionRead, .connected], actions: [], phase: .named),
        Row(
            name: "the session read once: the name is asked for once",
            inputs: [.connected, .sessionRead, .sessionRead], actions: [], phase: .named),
        Row(
            name: "asked to quit while the session is read: exit 0, nothing saved over it",
            inputs: [.connected, .end(.asked("terminated"))], actions: [.exit(success: true)], phase: .ending),
        Row(
            name: "a session read after the end starts nothing",
            inputs: [.connected, .end(.asked("terminated")), .sessionRead], actions: [], phase: .ending),
        Row(
            name: "asked to quit while running: save, release, exit 0",
            inputs: [.connected, .sessionRead, .end(.asked("terminated"))], actions: [.saveAndExit(success: true)],
            phase: .ending),
        Row(
            name: "asked to quit before connecting: nothing to save", inputs: [.end(.asked("terminated"))],
            actions: [.exit(success: true)], phase: .ending),
        Row(
            name: "the name is another's: exit 0, nothing saved",
            inputs: [.connected, .sessionRead, .end(.nameTaken)], actions: [.exit(success: true)], phase: .ending),
        Row(
            name: "the name refused: exit 1, nothing saved",
            inputs: [.connected, .sessionRead, .end(.nameRefused("denied"))], actions: [.exit(success: false)],
            phase: .ending),
        Row(
            name: "the bus lost: exit 1, nothing saved", inputs: [.connected, .sessionRead, .end(.busLost)],
            actions: [.exit(success: false)], phase: .ending),
        Row(
            name: "ended once: a second signal",
            inputs: [.connected, .sessionRead, .end(.asked("terminated")), .end(.asked("interrupted"))],
            actions: [], phase: .ending),
        Row(
            name: "ended once: the bus lost while stopping",
            inputs: [.connected, .sessionRead, .end(.asked("terminated")), .end(.busLost)], actions: [],
            phase: .ending),
    ]

    @Test(arguments: rows)
    func decides(_ row: Row) {
        var startup = Startup()
        var actions: [Startup.Action] = []
        for input in row.inputs {
            switch input {
            case .connected: actions = startup.connected()
            case .sessionRead: actions = startup.sessionRead()
            case .end(let ending): actions = startup.end(ending)
            }
        }
        #expect(actions == row.actions, "after \(row.inputs)")
        #expect(startup.phase == row.phase, "after \(row.inputs)")
    }
}

/// The loads under way and what waits for them.
@Suite("start-up: loads in the background")
struct LoadsTests {
    @Test func aReplacedLoadNoLongerCounts() {
        var loads = Loads()
        let first = loads.begin()
        #expect(loads.isLoading && loads.isCurrent(first))
        loads.replace()
        let second = loads.begin()
        #expect(!loads.isCurrent(first) && loads.isCurrent(second))
        let firstCounts = loads.end(first)
        #expect(!firstCounts)
        #expect(loads.isLoading, "the second is still under way")
        let secondCounts = loads.end(second)
        #expect(secondCounts)
        #expect(!loads.isLoading)
    }

    @Test func playAskedWhileLoadingPlaysTheFirstTracksOnce() {
        var loads = Loads()
        let waited = loads.askToPlay()
        #expect(!waited, "nothing loading: nothing to wait for")
        _ = loads.begin()
        let waits = loads.askToPlay()
        #expect(waits)
        #expect(loads.playsLateTracks(startPaused: true))
        let plays = loads.takePlay(startPaused: true)
        #expect(plays)
        let playsAgain = loads.takePlay(startPaused: true)
        #expect(!playsAgain, "the wish is spent")
        let playsUnpaused = loads.takePlay(startPaused: false)
        #expect(playsUnpaused)
    }

    @Test func playPauseWhileLoadingToggles() {
        var loads = Loads()
        _ = loads.begin()
        _ = loads.askToPlay(toggle: true)
        #expect(loads.playWhenLoaded)
        _ = loads.askToPlay(toggle: true)
        #expect(!loads.playWhenLoaded)
    }

    @Test func endingAbandonsWhatIsUnderWay() {
        var loads = Loads()
        let generation = loads.begin()
        loads.abandon()
        #expect(!loads.isLoading)
        _ = loads.end(generation)
        #expect(!loads.isLoading && loads.inProgress == 0)
    }
}
