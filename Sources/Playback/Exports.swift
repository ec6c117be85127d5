// The layers below, re-exported: the daemon, the bench and the tests `import Playback` and
// see the whole library, as before it was split.
@_exported public import Media
@_exported public import PlaybackEngine
@_exported public import PlaybackPipeline
@_exported public import PlaybackVocabulary
