import FoundationEssentials
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackVocabulary

/// The gain each entry plays at, and what the pipeline reports of it.
extension Player {
    /// The plan for the entry with `id`, under the settings now: its tags, else what an
    /// earlier play measured, else the fallback gain (and a measurement while it plays). A
    /// file is known by the signature taken when its tags were read: one whose tags were not
    /// read in time plays at the fallback gain, unmeasured.
    func loudnessPlan(for id: UInt64) -> LoudnessPlan? {
        guard let index = queue.index(of: id) else { return nil }
        let entry = queue[index]
        let tags = entry.info?.replayGain
        var signature: TrackSignature?
        var measured: MeasuredGain?
        if loudness.mode != .off, tags == nil, let known = entry.info?.signature {
            signature = known
            measured = gainCache?.gain(for: known)
        }
        let albumGain = Loudness.usesAlbumGain(
            loudness.mode, albumInOrder: loudness.mode == .auto && playsAlbumInOrder(index))
        var plan = Loudness.plan(loudness, tags: tags, albumGain: albumGain, measured: measured, signature: signature)
        plan.label = MediaSources.displayName(entry.uri)
        return plan
    }

    /// Auto mode: whether the entry at `index` is part of an album played in order (see
    /// ``Loudness/playsAlbumInOrder(shuffle:track:previous:next:)``).
    private func playsAlbumInOrder(_ index: Int) -> Bool {
        guard !state.selection.order.shuffle else { return false }
        // Without Shuffle the play order is the queue's, and reading it draws no random number.
        let previous = neighbour(of: index, forward: false, automatic: true, allowRepeatOne: false)
        let next = neighbour(of: index, forward: true, automatic: true, allowRepeatOne: false)
        func other(_ at: Int?) -> Loudness.AlbumIdentity? { at.flatMap { $0 == index ? nil : albumIdentity(at: $0) } }
        return Loudness.playsAlbumInOrder(
            shuffle: false, track: albumIdentity(at: index), previous: other(previous), next: other(next))
    }

    private func albumIdentity(at index: Int) -> Loudness.AlbumIdentity {
        let entry = queue[index]
        let folder = MediaSources.isLocal(entry.uri) ? URL(string: entry.uri)?.deletingLastPathComponent().path : nil
        return Loudness.AlbumIdentity(
            album: entry.info?.album, albumArtist: entry.info?.albumArtists.first, folder: folder,
            tagsRead: entry.info != nil)
    }

    /// A stream started at its gain: one debug line per track says which and how much.
    func loudnessApplied(_ plan: LoudnessPlan, gain: Double) {
        var line = "loudness of \(plan.label): \(plan.source.rawValue)"
        if let source = plan.tagSource { line += " from \(source.rawValue)" }
        if plan.source != .off {
            line +=
                " \(Loudness.describe(plan.albumMode ? plan.albumGain : plan.trackGain)), preamp \(Loudness.describe(plan.preamp))"
        }
        line += "; applied \(Loudness.describe(gain))"
        if plan.measure != nil { line += "; measuring it while it plays" }
        logger.debug("\(line)")
    }

    /// A track without tags was measured whole: its gain applies from its next play on.
    func loudnessMeasured(_ signature: TrackSignature, _ gain: MeasuredGain) {
        logger.debug(
            "measured \(MediaSources.displayName(signature.path)): gain \(Loudness.describe(gain.gain)), peak \(gain.peak)"
        )
        gainCache?.store(gain, for: signature)
    }
}
