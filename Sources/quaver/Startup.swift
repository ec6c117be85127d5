/// The daemon's life with its bus name, from `start` to exit: the decisions apart from the
/// bus, so that a table test walks every one.
///
/// The saved session is read off the main actor once the bus is connected: a queue file may
/// be tens of megabytes, and the main actor never waits for the disk. The name is owned as
/// soon as the session (or the arguments) is read, publishing what is true then, as Apple's
/// guides ask of now-playing info: a restored track, paused where the session left it; or
/// Stopped, with nothing shown, while the first track is found and loaded. Clients see
/// Playing only once the audio moves. Every way the process ends goes through
/// ``end(_:)``: what is saved and released depends on how far the start went.
struct Startup: Equatable {
    /// How far the daemon is.
    enum Phase: Equatable {
        /// Made: not connected to the bus, nothing queued.
        case made
        /// Connected; the saved session is being read, off the main actor.
        case readingSession
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
        /// Read the saved session off the main actor, then report it with ``sessionRead()``
        /// once what it holds is queued.
        case readSession
        /// Own the name now.
        case ownName
        /// Write the session, then release the name, stop the pipeline and exit with the status.
        case saveAndExit(success: Bool)
        /// Stop the pipeline and exit with the status; nothing is saved or released (the
        /// name is another's, or the bus is gone).
        case exit(success: Bool)
    }

    /// How far the daemon is now.
    private(set) var phase = Phase.made

    /// Connected to the bus: the saved session is read next.
    mutating func connected() -> [Action] {
        guard phase == .made else { return [] }
        phase = .readingSession
        return [.readSession]
    }

    /// The saved session is read, and the media queued or being found: the name is owned.
    mutating func sessionRead() -> [Action] {
        guard phase == .readingSession else { return [] }
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
