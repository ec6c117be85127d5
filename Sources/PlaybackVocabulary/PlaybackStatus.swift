/// What clients are told of the transport.
public enum PlaybackStatus: String, Sendable { case stopped, paused, playing }

/// What follows the last entry, or the current one at its end.
public enum RepeatMode: String, Sendable, CaseIterable { case off, one, all }

/// What kind of change the observer is told about.
public enum PlaybackChange: Sendable, Equatable {
    /// Status, current entry, position or rate changed (a moment to republish the timing).
    case transport
    /// The current entry's metadata changed.
    case metadata
    /// The volume changed.
    case volume
    /// Repeat or shuffle changed.
    case options
    /// Entries were added, removed or replaced (`queueRevision` changed).
    case queue
    /// The tags of an entry were read, or it was found unplayable.
    case entryInfo(UInt64)
}
