/// The media being expanded in the background (files, folders, playlists, the demo), and
/// what waits for them: the session is saved, and the name owned, once they are all in.
struct Loads: Equatable {
    /// How many loads are under way.
    private(set) var inProgress = 0
    /// The loads' generation: batches of an earlier one are dropped (the queue was replaced).
    private(set) var generation = 0
    /// Play was asked for before anything was queued: the first tracks in start playing.
    private(set) var playWhenLoaded = false

    /// Whether any load is under way.
    var isLoading: Bool { inProgress > 0 }

    /// A load starts: its generation, to check its batches against.
    mutating func begin() -> Int {
        inProgress += 1
        return generation
    }

    /// A load of `generation` is all in: whether its result still counts.
    mutating func end(_ generation: Int) -> Bool {
        inProgress = max(0, inProgress - 1)
        return generation == self.generation
    }

    /// Whether a batch of a load of `generation` still counts.
    func isCurrent(_ generation: Int) -> Bool { generation == self.generation }

    /// The batches still to come from earlier loads are dropped (the queue is being replaced).
    mutating func replace() { generation += 1 }

    /// Play (or, for `toggle`, Play-Pause) asked for while the first tracks are being found;
    /// false when nothing is loading (nothing to wait for).
    mutating func askToPlay(toggle: Bool = false) -> Bool {
        guard isLoading else { return false }
        playWhenLoaded = toggle ? !playWhenLoaded : true
        return true
    }

    /// The first tracks are in: whether to play them (else preroll them, paused, when the
    /// daemon was started paused). The wish is spent.
    mutating func takePlay(startPaused: Bool) -> Bool {
        defer { playWhenLoaded = false }
        return !startPaused || playWhenLoaded
    }

    /// Whether tracks that come after playback ran out are played.
    func playsLateTracks(startPaused: Bool) -> Bool { !startPaused || playWhenLoaded }

    /// The daemon ends: what is under way no longer holds the session back.
    mutating func abandon() { inProgress = 0 }
}
