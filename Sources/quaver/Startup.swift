/// The daemon's life with its bus name, from `start` to exit: the decisions apart from the
/// bus and the timers, so that a table test walks every one.
///
/// The saved session is read off the main actor once the bus is connected: a queue file may
/// be tens of megabytes, and the main actor never waits for the disk. The name is owned once
/// the first state is true (a track prerolled or playing, or nothing
/// to play), so that no client reads a Stopped with no track that is about to change. A
/// start that takes long owns it all the same at a deadline, and publishes what is true
/// then. Every way the process ends goes through ``end(_:)``: what is saved and released
/// depends on how far the start went.
struct Startup: Equatable {
    /// How far the daemon is.
    enum Phase: Equatable {
        /// Made: not connected to the bus, nothing queued.
        case made
        /// Connected; the saved session is being read, off the main actor.
        case readingSession
        /// Connected; what plays first is being found or loaded, and the name waits for it
        /// for `deadline` seconds at most.
        case findingFirstState(deadline: Double)
        /// The name is asked for: owned from now on (or another process had it, and the
        /// daemon ends).
        case named
        /// The daemon ends: nothing starts, and nothing ends it a second time.
        case ending
    }

    /// Why the daemon ends.
    enum Ending: Equatable {
        /// Asked to quit: D-Bus `Quit`, SIGINT or SIGTERM. Status 0.
        case asked(String)
        /// Another process owns the name (it started in the meantime). Status 0.
        case nameTaken
        /// The name cannot be owned. Status 1.
        case nameRefused(String)
        /// The connection to the session bus is gone. Status 1.
        case busLost
    }

    /// What the executor carries out.
    enum Action: Equatable {
        /// Read the saved session off the main actor, then report it with
        /// ``sessionRead(starting:makingDemo:)`` once what it holds is queued.
        case readSession
        /// Own the name now (and stop the deadline's timer).
        case ownName
        /// Own the name in this many seconds, unless the first state comes first.
        case armDeadline(seconds: Double)
        /// Write the session, then release the name, stop the pipeline and exit with the status.
        case saveAndExit(success: Bool)
        /// Stop the pipeline and exit with the status; nothing is saved or released (the
        /// name is another's, or the bus is gone).
        case exit(success: Bool)
    }

    /// How long the start may take before the name is owned whatever the state.
    static let nameOwnershipDeadline: Double = 2
    /// The same when the demo playlist is rendered first (a first run with no music): three
    /// tracks take seconds to render on a busy machine, and a client that reads the state
    /// meanwhile would see Stopped with no track.
    static let demoNameOwnershipDeadline: Double = 15

    /// How far the daemon is now.
    private(set) var phase = Phase.made

    /// Connected to the bus: the saved session is read next.
    mutating func connected() -> [Action] {
        guard phase == .made else { return [] }
        phase = .readingSession
        return [.readSession]
    }

    /// The saved session is read, and the media queued or being found: `starting` says
    /// whether what plays first is still being found or loaded; `makingDemo`, whether that
    /// is the demo being rendered.
    mutating func sessionRead(starting: Bool, makingDemo: Bool) -> [Action] {
        guard phase == .readingSession else { return [] }
        guard starting else {
            phase = .named
            return [.ownName]
        }
        let seconds = makingDemo ? Self.demoNameOwnershipDeadline : Self.nameOwnershipDeadline
        phase = .findingFirstState(deadline: seconds)
        return [.armDeadline(seconds: seconds)]
    }

    /// The player, a load or the demo moved on: the name is owned once nothing is starting.
    mutating func progressed(starting: Bool) -> [Action] {
        guard case .findingFirstState = phase, !starting else { return [] }
        phase = .named
        return [.ownName]
    }

    /// The deadline passed before the first state was found.
    mutating func deadlinePassed() -> [Action] {
        guard case .findingFirstState = phase else { return [] }
        phase = .named
        return [.ownName]
    }

    /// The daemon is to end, for `ending`: once. Before the saved session is read, nothing
    /// is saved: a save then would write an empty queue over the one on disk.
    mutating func end(_ ending: Ending) -> [Action] {
        guard phase != .ending else { return [] }
        let connected = phase != .made && phase != .readingSession
        phase = .ending
        switch ending {
        case .asked: return [connected ? .saveAndExit(success: true) : .exit(success: true)]
        case .nameTaken: return [.exit(success: true)]
        case .nameRefused, .busLost: return [.exit(success: false)]
        }
    }
}
