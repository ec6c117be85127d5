import Glibc

/// How Quaver levels loudness between tracks with ReplayGain: set in `quaver.conf` and by
/// command-line options, and read again on SIGHUP.
public struct LoudnessSettings: Sendable, Equatable {
    /// Which gain a track plays at.
    public enum Mode: String, Sendable, CaseIterable {
        /// No gain at all: the tags are ignored and nothing is measured.
        case off
        /// Every track at its own gain: tracks sound equally loud.
        case track
        /// The album's gain when the track has one: an album keeps its quiet and loud tracks.
        case album
        /// The album's gain while an album plays in order, the track's otherwise (see
        /// ``Loudness/playsAlbumInOrder(shuffle:track:previous:next:)``).
        case auto
    }

    /// How a gain that would push the track's peak past full scale is kept from clipping.
    public enum Clipping: String, Sendable, CaseIterable {
        /// The gain is lowered until the tagged (or measured) peak reaches full scale at most.
        case peak
        /// The whole gain is applied and `rglimiter` compresses what goes over -6 dBFS.
        case limiter
        /// Nothing: a gain may clip.
        case off
    }

    /// Which gain a track plays at.
    public var mode: Mode = .auto
    /// Added to every gain, in dB.
    public var preamp: Double = 0
    /// How clipping is prevented.
    public var clipping: Clipping = .peak
    /// The gain, in dB, of a track with no tags that has not been measured yet.
    public var fallbackGain: Double = 0
    /// Whether a track without tags is measured while it plays, for the next time.
    public var analysis = true

    /// The preamps accepted, in dB.
    public static let preampRange: ClosedRange<Double> = -15...15
    /// The fallback gains accepted, in dB.
    public static let fallbackRange: ClosedRange<Double> = -30...15

    /// The defaults: auto mode, no preamp, peak-limited, 0 dB for untagged tracks, measured.
    public init() {}
}

/// The ReplayGain values of a track, from its tags. Gains are in dB against ReplayGain's
/// reference (-18 LUFS), peaks are linear (1: full scale).
public struct ReplayGainTags: Sendable, Equatable {
    /// Where the gains come from.
    public enum Source: String, Sendable {
        /// `REPLAYGAIN_*` tags (Vorbis comments, APE, ID3 TXXX or RVA2, MP4 freeform).
        case replayGain = "ReplayGain tags"
        /// Opus `R128_TRACK_GAIN` / `R128_ALBUM_GAIN`.
        case r128 = "R128 tags"
    }

    /// The track's gain.
    public var trackGain: Double?
    /// The track's peak.
    public var trackPeak: Double?
    /// The album's gain.
    public var albumGain: Double?
    /// The album's peak.
    public var albumPeak: Double?
    /// Where the gains come from.
    public var source: Source = .replayGain

    /// Values as given; nil gains and peaks are missing from the tags.
    public init(
        trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil,
        source: Source = .replayGain
    ) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
        self.source = source
    }

    /// Whether the tags hold a gain of either kind.
    public var hasGain: Bool { trackGain != nil || albumGain != nil }

    /// A ReplayGain gain from an Opus R128 one: R128 gains are Q7.8 fixed point (1/256 dB)
    /// relative to -23 LUFS (EBU R128), ReplayGain's reference is -18 LUFS, so the same
    /// track needs 5 dB more under ReplayGain.
    public static func replayGain(fromR128 q78: Int) -> Double {
        Double(q78) / 256 + 5
    }

    /// The gains of Opus R128 tags (Q7.8 integers). They carry no peaks.
    public static func r128(track: Int?, album: Int?) -> ReplayGainTags? {
        guard track != nil || album != nil else { return nil }
        return ReplayGainTags(
            trackGain: track.map(replayGain(fromR128:)), albumGain: album.map(replayGain(fromR128:)), source: .r128)
    }
}

/// A gain `rganalysis` measured for a track without tags.
public struct MeasuredGain: Sendable, Equatable {
    /// The track's gain in dB against ReplayGain's reference.
    public var gain: Double
    /// The track's peak, linear.
    public var peak: Double

    /// A measurement.
    public init(gain: Double, peak: Double) {
        self.gain = gain
        self.peak = peak
    }
}

/// What identifies the contents of a file without reading it: a measurement is kept for a
/// file only as long as its size and modification time stay the same.
public struct TrackSignature: Hashable, Sendable {
    /// The file's absolute path.
    public var path: String
    /// Its size in bytes.
    public var size: Int64
    /// Its modification time, in nanoseconds since the epoch.
    public var modified: Int64

    /// A signature as given.
    public init(path: String, size: Int64, modified: Int64) {
        self.path = path
        self.size = size
        self.modified = modified
    }

    /// The signature of the regular file at `path` now; nil when there is none.
    public static func of(path: String) -> TrackSignature? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return TrackSignature(path: path, size: Int64(info.st_size), modified: modified)
    }
}

/// What the pipeline applies to one stream: the four values handed to `rgvolume` when the
/// stream starts, how it weighs them, and whether the stream is measured.
public struct LoudnessPlan: Sendable, Equatable {
    /// Which gain the plan applies.
    public enum Source: String, Sendable {
        /// The track's tagged gain.
        case track = "track gain"
        /// The album's tagged gain.
        case album = "album gain"
        /// What an earlier play of a track without tags measured.
        case measured = "measured gain"
        /// The configured gain of a track without tags, not measured yet.
        case fallback = "fallback gain"
        /// Loudness levelling is off.
        case off = "no gain (off)"
    }

    package var trackGain: Double
    package var trackPeak: Double
    package var albumGain: Double
    package var albumPeak: Double
    /// `rgvolume`'s album-mode: which of the two gains it applies.
    package var albumMode: Bool
    package var preamp: Double
    /// `rgvolume`'s headroom: 0 keeps the peak at full scale at most.
    package var headroom: Double
    /// Whether `rglimiter` compresses the peaks.
    package var limiter: Bool
    /// Whether ReplayGain tags in the stream are removed before `rgvolume` sees them (off).
    package var ignoresStreamTags: Bool
    /// The file to measure while it plays; nil when nothing is measured.
    public var measure: TrackSignature?
    /// Which gain the plan applies.
    public var source: Source
    /// Where the tags came from, when the gain is a tagged one.
    public var tagSource: ReplayGainTags.Source?
    /// What the track is called in log lines.
    public var label = ""

    /// The gain `rgvolume` applies for this plan, in dB: the chosen gain plus the preamp,
    /// lowered to keep the peak at full scale when the headroom is 0, and at most +20 dB
    /// (its volume element's limit).
    public var appliedGain: Double {
        let gain = (albumMode ? albumGain : trackGain) + preamp
        let peak = albumMode ? albumPeak : trackPeak
        var result = gain
        if 20 * log10(peak) + gain > headroom { result = 20 * log10(1 / peak) + headroom }
        return min(result, 20)
    }
}

/// The pure decisions of loudness levelling.
public enum Loudness {
    /// What decides whether two entries are of one album: their album tag (with the album
    /// artist when both have one) once their tags are read, else their folder.
    public struct AlbumIdentity: Sendable, Equatable {
        /// The album tag; nil when the tags are read and hold none.
        public var album: String?
        /// The album artist tag.
        public var albumArtist: String?
        /// The folder of a local file.
        public var folder: String?
        /// Whether the tags have been read.
        public var tagsRead: Bool

        /// An identity as given.
        public init(album: String?, albumArtist: String?, folder: String?, tagsRead: Bool) {
            self.album = album
            self.albumArtist = albumArtist
            self.folder = folder
            self.tagsRead = tagsRead
        }

        /// Whether `other` is of the same album.
        public func sameAlbum(as other: AlbumIdentity) -> Bool {
            if tagsRead && other.tagsRead {
                guard let album, !album.isEmpty, album == other.album else { return false }
                if let artist = albumArtist, let otherArtist = other.albumArtist, artist != otherArtist { return false }
                return true
            }
            // An entry whose tags are not read yet (the one after next, usually) counts as
            // of the same album when it is in the same folder, as albums are stored.
            guard let folder, folder == other.folder else { return false }
            return true
        }
    }

    /// Auto mode's choice: an album plays in order when Shuffle is off and the entry before
    /// or after the track in play order is of the same album.
    public static func playsAlbumInOrder(
        shuffle: Bool, track: AlbumIdentity, previous: AlbumIdentity?, next: AlbumIdentity?
    ) -> Bool {
        guard !shuffle else { return false }
        return [previous, next].contains { $0.map(track.sameAlbum(as:)) ?? false }
    }

    /// Whether the album's gain applies under `mode` (auto: `albumInOrder`).
    public static func usesAlbumGain(_ mode: LoudnessSettings.Mode, albumInOrder: Bool) -> Bool {
        switch mode {
        case .off, .track: false
        case .album: true
        case .auto: albumInOrder
        }
    }

    /// The plan for one track.
    /// - Parameters:
    ///   - settings: the mode, preamp, clipping and fallback gain the user chose.
    ///   - tags: its ReplayGain tags, if any.
    ///   - albumGain: whether the album's gain is preferred (see ``usesAlbumGain(_:albumInOrder:)``).
    ///   - measured: what an earlier play measured, for a track without tags.
    ///   - signature: the file's signature, to measure it when it has neither.
    public static func plan(
        _ settings: LoudnessSettings, tags: ReplayGainTags?, albumGain: Bool, measured: MeasuredGain?,
        signature: TrackSignature?
    ) -> LoudnessPlan {
        var plan = LoudnessPlan(
            trackGain: 0, trackPeak: 1, albumGain: 0, albumPeak: 1, albumMode: false, preamp: settings.preamp,
            headroom: settings.clipping == .peak ? 0 : 60, limiter: settings.clipping == .limiter,
            ignoresStreamTags: false,
            measure: nil, source: .fallback, tagSource: nil)
        switch settings.mode {
        case .off:
            plan.preamp = 0
            plan.headroom = 0
            plan.limiter = false
            plan.ignoresStreamTags = true
            plan.source = .off
            return plan
        case .track, .album, .auto:
            break
        }
        if let tags, let gain = tags.trackGain ?? tags.albumGain {
            // A missing value is filled from the other kind, as rgvolume falls back itself:
            // every value is handed over, so that nothing of the previous track remains.
            plan.trackGain = tags.trackGain ?? gain
            plan.trackPeak = tags.trackPeak ?? 1
            plan.albumGain = tags.albumGain ?? gain
            plan.albumPeak = tags.albumPeak ?? tags.trackPeak ?? 1
            plan.albumMode = albumGain ? tags.albumGain != nil : tags.trackGain == nil
            if tags.trackGain == nil { plan.trackPeak = plan.albumPeak }
            plan.source = plan.albumMode ? .album : .track
            plan.tagSource = tags.source
        } else if let measured {
            plan.trackGain = measured.gain
            plan.albumGain = measured.gain
            plan.trackPeak = measured.peak > 0 ? measured.peak : 1
            plan.albumPeak = plan.trackPeak
            plan.source = .measured
        } else {
            plan.trackGain = settings.fallbackGain
            plan.albumGain = settings.fallbackGain
            plan.source = .fallback
            if settings.analysis { plan.measure = signature }
        }
        return plan
    }

    /// No gain, and the stream's tags ignored: for a stream given no plan, so that nothing of
    /// the previous stream's applies.
    public static let neutralPlan: LoudnessPlan = {
        var settings = LoudnessSettings()
        settings.mode = .off
        return plan(settings, tags: nil, albumGain: false, measured: nil, signature: nil)
    }()

    /// A gain in dB as a log line shows it: `+2.50 dB`, `-6.00 dB`.
    public static func describe(_ gain: Double) -> String {
        let hundredths = Int((abs(gain) * 100).rounded())
        let fraction = hundredths % 100
        return (gain < 0 && hundredths > 0 ? "-" : "+") + "\(hundredths / 100)." + (fraction < 10 ? "0" : "")
            + "\(fraction) dB"
    }
}
