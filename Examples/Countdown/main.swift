// countdown: kitchen timers that every desktop media control can see and drive.
//
// A program that plays no media at all, made controllable with NowPlaying, the way an iOS
// app adopts MPRemoteCommandCenter and MPNowPlayingInfoCenter: while a timer counts down it
// is "playing", Next and Previous move between the timers, seeking moves within one, and a
// timer that runs out hands over to the next (after the last, it stops). It links libdbus-1
// and Swift's runtime, Dispatch and Concurrency: no Foundation, GStreamer or GLib.
//
//     countdown [--name NAME] [LABEL=SECONDS ...]
//     playerctl -p countdown play
//
// With no timers given it offers Tea (3 min), Eggs (6 min) and Pasta (9 min).

import DBus
import Dispatch
import Glibc
import NowPlaying

/// One timer: what clients show as the title, and how long it counts down.
struct Preset {
    /// The title (`xesam:title`).
    var label: String
    /// The duration (`mpris:length`).
    var length: Duration

    /// `LABEL=SECONDS`, or `SECONDS` alone (labelled by its place); nil when malformed.
    init?(argument: String, number: Int) {
        let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
        guard let seconds = Double(parts.last ?? ""), seconds > 0, seconds.isFinite else { return nil }
        label = parts.count == 2 ? parts[0] : "Timer \(number)"
        length = .seconds(seconds)
    }

    /// A preset of the kitchen.
    init(_ label: String, minutes: Int) {
        self.label = label
        length = .seconds(minutes * 60)
    }
}

/// The timers, which one is current and how far it has run: the whole model. It tells the
/// info center what is true at every transport moment (play, pause, seek, another timer)
/// and never in between; clients extrapolate the position from the last one.
@MainActor
final class Countdown {
    /// The timers, in the order Next goes through them.
    let presets: [Preset]
    /// What clients may ask for; the MPRIS server calls the handlers added here.
    let commands = RemoteCommandCenter()
    /// What clients are told; the MPRIS server publishes it.
    let info = NowPlayingInfoCenter()
    /// The current timer, in `presets`.
    private var index = 0
    /// Counting down, paused, or stopped (rewound).
    private var state = PlaybackState.stopped
    /// How far the current timer had run at `mark`, the last transport moment.
    private var elapsedAtMark = Duration.zero
    /// When the last transport moment was.
    private var mark = ContinuousClock.now
    /// Wakes up when the current timer runs out; replaced at every transport moment.
    private var expiry: Task<Void, Never>?

    /// How far the current timer has run now.
    private var elapsed: Duration {
        state == .playing ? min(elapsedAtMark + (.now - mark), presets[index].length) : elapsedAtMark
    }

    /// Stopped at the start of the first timer, waiting for Play. `presets` must not be empty.
    init(presets: [Preset]) {
        self.presets = presets
        // Handlers run on the main actor, as the bus delivers the commands there. The server
        // calls a handler only while its command is enabled, so none has to check.
        commands.playCommand.addTarget { [unowned self] _ in change(state: .playing) }
        commands.pauseCommand.addTarget { [unowned self] _ in change(state: .paused) }
        commands.togglePlayPauseCommand.addTarget { [unowned self] _ in
            change(state: state == .playing ? .paused : .playing)
        }
        commands.stopCommand.addTarget { [unowned self] _ in change(state: .stopped) }
        commands.nextTrackCommand.addTarget { [unowned self] _ in change(timer: index + 1) }
        commands.previousTrackCommand.addTarget { [unowned self] _ in change(timer: index - 1) }
        // MPRIS Seek and SetPosition both arrive here, resolved and within the timer; a Seek
        // past the end arrives as Next (or Stop on the last timer).
        commands.changePlaybackPositionCommand.addTarget { [unowned self] event in change(position: event.positionTime)
        }
        change(state: .stopped)
    }

    /// The one way the countdown changes: from a command or when a timer runs out. Moving to
    /// another timer starts it from zero; stopping rewinds the current one.
    @discardableResult
    private func change(timer: Int? = nil, position: Duration? = nil, state newState: PlaybackState? = nil)
        -> RemoteCommandHandlerStatus
    {
        // The new mark: another timer starts at zero, a seek where it asked, anything else
        // (play, pause) where the timer has run to.
        elapsedAtMark = timer != nil ? .zero : position ?? elapsed
        mark = .now
        index = timer ?? index
        state = newState ?? state
        if state == .stopped { elapsedAtMark = .zero }
        publish()
        scheduleExpiry()
        return .success
    }

    /// Tells NowPlaying what is true now: the info with the timing Apple's way (elapsed time
    /// and rate, set together), the state, and which commands make sense from here.
    private func publish() {
        let preset = presets[index]
        var now = NowPlayingInfo(queueItemID: UInt64(index + 1))  // one id per timer: its mpris:trackid
        now.title = preset.label
        now.artists = ["Countdown"]
        now.duration = preset.length
        now.elapsedPlaybackTime = elapsedAtMark
        now.playbackRate = state == .playing ? 1 : 0
        info.nowPlayingInfo = now
        info.playbackState = state
        // Honest flags become MPRIS's Can* properties: a stopped timer has nothing to pause,
        // stop or seek in, the last has no next and the first no previous.
        commands.pauseCommand.isEnabled = state != .stopped
        commands.stopCommand.isEnabled = state != .stopped
        commands.changePlaybackPositionCommand.isEnabled = state != .stopped
        commands.nextTrackCommand.isEnabled = index + 1 < presets.count
        commands.previousTrackCommand.isEnabled = index > 0
    }

    /// A timer that runs out hands over to the next, which starts at once; after the last,
    /// the countdown stops.
    private func scheduleExpiry() {
        expiry?.cancel()
        guard state == .playing else { return }
        let remaining = presets[index].length - elapsedAtMark
        expiry = Task { [weak self] in
            try? await Task.sleep(for: remaining)
            guard !Task.isCancelled, let self else { return }
            if index + 1 < presets.count { change(timer: index + 1) } else { change(state: .stopped) }
        }
    }
}

// MARK: - Start

/// Prints why the program cannot run, and ends it.
func fail(_ message: String) -> Never {
    // One write(2) of the line: C's `stderr` is a global Swift 6 will not touch unguarded.
    let line = Array("countdown: \(message)\n".utf8)
    _ = write(STDERR_FILENO, line, line.count)
    exit(2)
}

/// The command line, less `--name NAME` once read: the timers.
var arguments = Array(CommandLine.arguments.dropFirst())
/// The bus name is `org.mpris.MediaPlayer2.<playerName>`.
var playerName = "countdown"
if let flag = arguments.firstIndex(of: "--name") {
    guard flag + 1 < arguments.count else { fail("--name needs a value") }
    playerName = arguments[flag + 1]
    arguments.removeSubrange(flag...flag + 1)
}
/// The timers given, else the kitchen's three.
let presets =
    arguments.isEmpty
    ? [Preset("Tea", minutes: 3), Preset("Eggs", minutes: 6), Preset("Pasta", minutes: 9)]
    : arguments.enumerated().map { offset, argument in
        guard let preset = Preset(argument: argument, number: offset + 1) else {
            fail("'\(argument)' is not LABEL=SECONDS")
        }
        return preset
    }

/// The model, and the server that makes it an MPRIS player: all the adoption there is. Both
/// are globals, so they live as long as the program.
let countdown = Countdown(presets: presets)
let server = MPRISServer(
    commandCenter: countdown.commands, infoCenter: countdown.info,
    configuration: MPRISServer.Configuration(playerName: playerName, identity: "Countdown"))
/// The session bus, where desktop media controls look for players.
let connection: Connection
do {
    connection = try Connection(bus: .session)
    // Owns org.mpris.MediaPlayer2.<playerName>, or, while another countdown has it, the same
    // name with `.instance<PID>` added.
    try server.register(on: connection)
} catch {
    fail("cannot publish on the session bus: \(error.message)")
}
// A timer nobody can see is of no use: leave with the bus.
connection.onDisconnect = { exit(1) }

// dispatchMain(), not an async main: the connection and the server work on the main queue
// (its dispatch sources, and handlers that run on the main actor), and nothing here awaits.
// The main thread parks and serves that queue; the expiry tasks, main-actor work, run there too.
dispatchMain()
