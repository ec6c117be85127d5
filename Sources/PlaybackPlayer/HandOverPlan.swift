package import Media
package import PlaybackPipeline
package import PlaybackVocabulary

/// What playbin is told follows the current entry, for a gapless switch. Pure.
///
/// playbin keeps a track's parsed tags for as long as the stream it switched from gaplessly:
/// a track that holds a picture over the limit ends with a load of what follows instead,
/// which frees them. So does a local file whose tags could not be read in time: what they
/// hold is not known. A local file is handed over only once it has been read, so that a
/// broken one is skipped before, never torn out of a pipeline that already switched to it.
package enum HandOverPlan: Sendable, Equatable {
    /// Nothing: the current stream ends, and what follows, if anything, is loaded then.
    case nothing
    /// playbin takes this entry's URI when the current stream is about to end.
    case handOver(GaplessHandoff.Item)
    /// Nothing yet: the entry that follows is read first, and the plan made again then.
    case readFirst(entry: UInt64, uri: String)

    /// The plan for `next` to follow `current` (nil: nothing follows).
    package init(current: QueueEntry, next: QueueEntry?) {
        guard let next, current.info?.oversizedPictureBytes == nil, !current.needsRead else {
            self = .nothing
            return
        }
        self =
            next.info == nil && next.isLocal
            ? .readFirst(entry: next.id, uri: next.uri) : .handOver(.init(entryID: next.id, uri: next.uri))
    }
}
