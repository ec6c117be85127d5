// Playback is the layers of the library, re-exported: the daemon, the bench and the tests
// `import Playback` and see the whole library. The layers, bottom up (docs/architecture.md):
// PlaybackVocabulary, Media, PlaybackPipeline, PlaybackEngine, PlaybackPlayer.
@_exported public import PlaybackPlayer
