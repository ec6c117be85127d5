// The layers below, for every file of this layer and for the layers above.
@_exported public import PlaybackEngine
