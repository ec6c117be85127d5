import Media
import PlaybackPipeline
import PlaybackVocabulary

/// The volumes Quaver set lately, to tell a mixer's change from an echo of its own.
///
/// Pure: instants are handed in. The output reports each volume set back, possibly after a
/// later one was set, and such an echo is no change by a mixer. A volume set is remembered
/// for two seconds; at most eight are.
struct VolumeEchoes: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// How long a volume set is remembered.
    static let memory = Duration.seconds(2)
    private var requests: [(volume: Double, at: Instant)] = []

    /// Quaver set `volume` at `now`.
    mutating func set(_ volume: Double, at now: Instant) {
        requests = requests.filter { now - $0.at < Self.memory }.suffix(7) + [(volume, now)]
    }

    /// Whether the output reporting `heard` at `now` is a change by someone else, the volume
    /// being `current`: not when equal but for rounding to it or to a volume set lately.
    func isChange(_ heard: Double, current: Double, at now: Instant) -> Bool {
        guard heard.isFinite, abs(heard - current) > 0.001 else { return false }
        return !requests.contains { abs($0.volume - heard) <= 0.001 && now - $0.at < Self.memory }
    }
}
