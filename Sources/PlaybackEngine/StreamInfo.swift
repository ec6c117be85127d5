package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

/// What is shown of an entry the pipeline told about: a network stream, whose tags come as
/// it plays, or a file never read ahead (its read timed out). Pure: the pipeline's facts and
/// the tags heard are handed in.
extension TrackInfo {
    /// What the pipeline told of a stream when it first played: its duration and
    /// seekability, endless when it has no duration, one audio stream.
    package init(facts: Pipeline.Facts) {
        self.init()
        duration = facts.duration
        isSeekable = facts.isSeekable
        isLive = duration == nil
        audioStreams = 1
    }

    /// A stream's info once its duration became known after it started playing (an MP3
    /// served over HTTP is measured as it plays); nil when it was known already, or is still
    /// not: the length is published once, not each refinement of an estimate.
    package func withDurationLearned(from facts: Pipeline.Facts) -> TrackInfo? {
        guard duration == nil, let learned = facts.duration else { return nil }
        var info = self
        info.duration = learned
        info.isLive = false
        info.isSeekable = facts.isSeekable
        return info
    }
}

extension StreamTags {
    /// What a stream shows: `known` (what the pipeline told when it first played, else
    /// `facts` now) without the tags heard before, with these tags in their place.
    package func info(known: TrackInfo?, facts: Pipeline.Facts) -> TrackInfo {
        guard var info = known else { return applied(to: TrackInfo(facts: facts)) }
        info.title = nil
        info.artists = []
        info.album = nil
        info.genres = []
        return applied(to: info)
    }
}
