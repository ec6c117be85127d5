public import Media
public import PlaybackVocabulary

/// The values the player's clients see: its entries, its status, its options, and what
/// changed.
extension Player {
    /// What clients are told of the transport (see `PlaybackStatus`).
    public typealias Status = PlaybackStatus

    /// What follows the last entry, or the current one at its end (see
    /// `RepeatMode`).
    public typealias RepeatMode = PlaybackVocabulary.RepeatMode

    /// One entry of the queue (see `QueueEntry`).
    public typealias Entry = QueueEntry

    /// The folder part of URIs, shared by the entries queued from one folder at once.
    typealias SharedPrefix = Media.SharedPrefix

    /// What kind of change the observer is told about (see `PlaybackChange`).
    public typealias Change = PlaybackChange
}
