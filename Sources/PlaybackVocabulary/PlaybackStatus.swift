/// What clients are told of the transport.
public enum PlaybackStatus: String, Sendable { case stopped, paused, playing }

/// What follows the last entry, or the current one at its end.
public enum RepeatMode: String, Sendable, CaseIterable { case off, one, all }
