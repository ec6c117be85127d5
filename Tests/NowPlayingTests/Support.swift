import DBus
import TestKit
import Testing

@testable import NowPlaying

// MARK: - Clock

/// A clock the test moves by hand: `base + offset`.
@MainActor
final class FakeClock {
    let base = ContinuousClock.now
    var offset: Duration = .zero
    var now: ContinuousClock.Instant { base + offset }
    func advance(by duration: Duration) { offset += duration }
}

// MARK: - Engine

/// One entry of the fake engine's play queue.
struct TestTrack: Sendable {
    var id: UInt64
    var title: String
    var duration: Duration?
    var isLiveStream = false
}

/// A player stand-in: handles every command the way a real player would and publishes
/// what it does through the info center, at the moments that change the timing.
@MainActor
final class FakeEngine {
    enum Event: Equatable {
        case play, pause, togglePlayPause, stop, nextTrack, previousTrack
        case changePlaybackPosition(Duration)
        case seek(offset: Duration, position: Duration)
        case changePlaybackRate(Double)
        case changeVolume(Double)
        case changeRepeatMode(RepeatType)
        case changeShuffleMode(ShuffleType)
        case openURI(String)
    }

    let commands: RemoteCommandCenter
    let info: NowPlayingInfoCenter
    private(set) var events: [Event] = []
    /// Forces a handler (by command name) to answer with this status and do nothing.
    var statuses: [String: RemoteCommandHandlerStatus] = [:]
    var queue: [TestTrack]
    private(set) var index: Int?
    private(set) var rate: Double = 1
    private var nextQueueItemID: UInt64 = 1000

    init(commands: RemoteCommandCenter, info: NowPlayingInfoCenter, queue: [TestTrack]) {
        self.commands = commands
        self.info = info
        self.queue = queue
        addTargets()
        updateNavigation()
    }

    func clearEvents() { events.removeAll() }

    private func handle(_ name: String, _ event: Event, _ action: () -> Void) -> RemoteCommandHandlerStatus {
        events.append(event)
        if let status = statuses[name], status != .success { return status }
        action()
        return .success
    }

    private func addTargets() {
        commands.playCommand.addTarget { [unowned self] _ in handle("play", .play) { play() } }
        commands.pauseCommand.addTarget { [unowned self] _ in handle("pause", .pause) { pause() } }
        commands.togglePlayPauseCommand.addTarget { [unowned self] _ in
            handle("togglePlayPause", .togglePlayPause) { info.playbackState == .playing ? pause() : play() }
        }
        commands.stopCommand.addTarget { [unowned self] _ in handle("stop", .stop) { stop() } }
        commands.nextTrackCommand.addTarget { [unowned self] _ in handle("nextTrack", .nextTrack) { next() } }
        commands.previousTrackCommand.addTarget { [unowned self] _ in
            handle("previousTrack", .previousTrack) { previous() }
        }
        commands.changePlaybackPositionCommand.addTarget { [unowned self] event in
            handle("changePlaybackPosition", .changePlaybackPosition(event.positionTime)) {
                setElapsed(event.positionTime)
            }
        }
        commands.seekCommand.addTarget { [unowned self] event in
            handle("seek", .seek(offset: event.offset, position: event.position)) { setElapsed(event.position) }
        }
        commands.changePlaybackRateCommand.addTarget { [unowned self] event in
            handle("changePlaybackRate", .changePlaybackRate(event.playbackRate)) { setRate(event.playbackRate) }
        }
        commands.changeVolumeCommand.addTarget { [unowned self] event in
            handle("changeVolume", .changeVolume(event.volume)) { info.volume = event.volume }
        }
        commands.changeRepeatModeCommand.addTarget { [unowned self] event in
            handle("changeRepeatMode", .changeRepeatMode(event.repeatType)) {
                commands.currentRepeatType = event.repeatType
                updateNavigation()
            }
        }
        commands.changeShuffleModeCommand.addTarget { [unowned self] event in
            handle("changeShuffleMode", .changeShuffleMode(event.shuffleType)) {
                commands.currentShuffleType = event.shuffleType
            }
        }
        commands.openURICommand.addTarget { [unowned self] event in
            handle("openURI", .openURI(event.uri)) {
                nextQueueItemID += 1
                queue.append(TestTrack(id: nextQueueItemID, title: event.uri, duration: .seconds(60)))
                load(queue.count - 1)
                play()
            }
        }
    }

    // MARK: Player behaviour

    /// Makes queue entry `i` current at `elapsed`, keeping the playing/paused/stopped state.
    func load(_ i: Int, at elapsed: Duration = .zero) {
        index = i
        let track = queue[i]
        var item = NowPlayingInfo(queueItemID: track.id)
        item.title = track.title
        item.duration = track.duration
        item.isLiveStream = track.isLiveStream
        item.elapsedPlaybackTime = elapsed
        item.defaultPlaybackRate = rate
        item.playbackRate = info.playbackState == .playing ? rate : 0
        info.nowPlayingInfo = item
        updateNavigation()
    }

    func play() {
        if index == nil { load(0) }
        guard var item = info.nowPlayingInfo, info.playbackState != .playing else { return }
        item.elapsedPlaybackTime = info.currentPosition  // zero when stopped
        item.playbackRate = rate
        info.nowPlayingInfo = item
        info.playbackState = .playing
    }

    func pause() {
        guard var item = info.nowPlayingInfo, info.playbackState == .playing else { return }
        item.elapsedPlaybackTime = info.currentPosition
        item.playbackRate = 0
        info.nowPlayingInfo = item
        info.playbackState = .paused
    }

    func stop() {
        guard var item = info.nowPlayingInfo else { return }
        item.elapsedPlaybackTime = .zero
        item.playbackRate = 0
        info.nowPlayingInfo = item
        info.playbackState = .stopped
    }

    func next() {
        guard let i = index else { return }
        if i + 1 < queue.count {
            load(i + 1)
        } else if commands.currentRepeatType == .all {
            load(0)
        } else {
            stop()
        }
    }

    /// Like most players: restarts the current item when more than 3 s in.
    func previous() {
        guard let i = index else { return }
        if info.currentPosition > .seconds(3) || i == 0 { setElapsed(.zero) } else { load(i - 1) }
    }

    func setElapsed(_ elapsed: Duration) {
        guard var item = info.nowPlayingInfo else { return }
        item.elapsedPlaybackTime = elapsed
        info.nowPlayingInfo = item
    }

    func setRate(_ newRate: Double) {
        let position = info.currentPosition
        rate = newRate
        guard var item = info.nowPlayingInfo else { return }
        item.defaultPlaybackRate = newRate
        if info.playbackState == .playing {
            item.elapsedPlaybackTime = position
            item.playbackRate = newRate
        }
        info.nowPlayingInfo = item
    }

    func updateNavigation() {
        guard let i = index else {
            commands.nextTrackCommand.isEnabled = false
            commands.previousTrackCommand.isEnabled = false
            return
        }
        commands.nextTrackCommand.isEnabled = i + 1 < queue.count || commands.currentRepeatType == .all
        commands.previousTrackCommand.isEnabled = i > 0
    }
}

// MARK: - Signals

/// The signals the server emitted (TestKit's `RecordedSignal`), in order.
@MainActor
final class SignalRecorder {
    var signals: [RecordedSignal] = []
}

// MARK: - Harness

/// A server wired to a command center, an info center on a fake clock and a fake engine,
/// with signals recorded instead of sent.
@MainActor
final class Harness {
    static let player = MPRISServer.playerInterface
    static let root = MPRISServer.rootInterface
    static let properties = ExportedObject.propertiesInterface

    static let defaultQueue = [
        TestTrack(id: 101, title: "One", duration: .seconds(200)),
        TestTrack(id: 102, title: "Two", duration: .seconds(180)),
        TestTrack(id: 103, title: "Three", duration: .seconds(240)),
    ]

    let clock = FakeClock()
    let commands = RemoteCommandCenter()
    let info: NowPlayingInfoCenter
    let engine: FakeEngine
    let server: MPRISServer
    let recorder = SignalRecorder()

    init(
        queue: [TestTrack] = Harness.defaultQueue,
        configuration: MPRISServer.Configuration = .init(playerName: "test", identity: "Test"),
        prepare: (RemoteCommandCenter) -> Void = { _ in }
    ) {
        let clock = self.clock
        info = NowPlayingInfoCenter(clock: { clock.now })
        engine = FakeEngine(commands: commands, info: info, queue: queue)
        prepare(commands)
        server = MPRISServer(commandCenter: commands, infoCenter: info, configuration: configuration)
        let recorder = self.recorder
        server.object.signalSink = { interface, member, arguments in
            recorder.signals.append(RecordedSignal(interface: interface, member: member, arguments: arguments))
        }
        server.publishNow()
        recorder.signals.removeAll()
    }

    /// Loads queue entry `i` in `state` at `elapsed`, publishes, and forgets the signals and events.
    func start(_ i: Int = 0, at elapsed: Duration = .zero, state: PlaybackState = .playing) {
        engine.load(i, at: elapsed)
        switch state {
        case .playing: engine.play()
        case .paused:
            engine.play()
            engine.pause()
        case .stopped: engine.stop()
        }
        if elapsed != .zero && state != .stopped { engine.setElapsed(elapsed) }
        settle()
    }

    /// Publishes what is pending and returns exactly the signals that publication emitted.
    @discardableResult
    func flush() -> [RecordedSignal] {
        recorder.signals.removeAll()
        server.publishNow()
        let emitted = recorder.signals
        recorder.signals.removeAll()
        return emitted
    }

    /// Publishes and forgets signals and engine events.
    func settle() {
        flush()
        engine.clearEvents()
    }

    func playerChanges(_ signals: [RecordedSignal]) -> [RecordedSignal] {
        signals.filter { $0.changedInterface == Harness.player }
    }

    // MARK: D-Bus calls

    func call(_ member: String, _ arguments: [Value] = []) -> Result<[Value], BusError> {
        server.object.dispatch(interface: Harness.player, member: member, arguments: arguments)
    }

    func getResult(_ name: String, _ interface: String = Harness.player) -> Result<[Value], BusError> {
        server.object.dispatch(
            interface: Harness.properties, member: "Get", arguments: [.string(interface), .string(name)])
    }

    /// The unwrapped value of a property, nil when Get fails.
    func value(_ name: String, _ interface: String = Harness.player) -> Value? {
        guard case .success(let values) = getResult(name, interface), let first = values.first else { return nil }
        return first.unwrapped
    }

    func getAll(_ interface: String = Harness.player) -> [String: Value] {
        let result = server.object.dispatch(
            interface: Harness.properties, member: "GetAll", arguments: [.string(interface)])
        guard case .success(let values) = result, let first = values.first else { return [:] }
        return first.stringVariantDictionary ?? [:]
    }

    func set(_ name: String, _ value: Value, _ interface: String = Harness.player) -> Result<[Value], BusError> {
        server.object.dispatch(
            interface: Harness.properties, member: "Set",
            arguments: [.string(interface), .string(name), .variant(value)])
    }

    var position: Int64? { value("Position")?.int64 }
    var metadata: [String: Value] { value("Metadata")?.stringVariantDictionary ?? [:] }
    func trackID(_ queueItemID: UInt64) -> Value { .objectPath(server.trackID(for: queueItemID)) }
}

// MARK: - Helpers

extension Result where Success == [Value], Failure == BusError {
    var errorName: String? {
        if case .failure(let error) = self { return error.name.rawValue }
        return nil
    }
    var errorMessage: String? {
        if case .failure(let error) = self { return error.message }
        return nil
    }
    var succeeded: Bool {
        if case .success = self { return true }
        return false
    }
}

let invalidArgs = BusError.Name.invalidArgs.rawValue
