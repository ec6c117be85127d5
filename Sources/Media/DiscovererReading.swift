internal import CGStreamer
internal import CGStreamerShims
import FoundationEssentials
import PlaybackVocabulary

/// One reading of a file with a GStreamer discoverer made for it: its streams, duration and
/// tags, and its cover image stored in the artwork cache. Blocks its thread up to the
/// timeout; the readers run it off the main actor, one reading of a file at a time (see
/// ``SharedReadings``).
enum DiscovererReading {
    /// Reads `uri` with a discoverer of its own: the reading ``SharedReadings`` shares.
    static func read(_ uri: String, timeout: Duration, artwork: ArtworkCache?) -> Result<TrackInfo, MediaError> {
        retryingOnce { readOnce(uri, timeout: timeout, artwork: artwork) }
    }

    /// What one reading found: a result, or a stream whose data stopped flowing, with
    /// GStreamer's message.
    enum Reading {
        case read(Result<TrackInfo, MediaError>)
        case stoppedFlowing(String)
    }

    /// Runs `reading`, and once more when its data stopped flowing. A demuxer can stop as
    /// the discoverer links it (plugins-bad's aiffparse in GStreamer 1.22 pushes before its
    /// pad is linked: "Internal data stream error"); a second reading tells that race from
    /// a file that cannot be read, which fails the same way again.
    static func retryingOnce(_ reading: () -> Reading) -> Result<TrackInfo, MediaError> {
        if case .read(let result) = reading() { return result }
        switch reading() {
        case .read(let result): return result
        case .stoppedFlowing(let message): return .failure(MediaError(message))
        }
    }

    private static func readOnce(_ uri: String, timeout: Duration, artwork: ArtworkCache?) -> Reading {
        GStreamer.initialize()
        let made = GStreamerError.catching { gst_discoverer_new(GstClockTime(timeout.nanoseconds), &$0) }
        guard let discoverer = made.value else {
            return .read(.failure(MediaError("cannot create a discoverer: \(made.error?.message ?? "?")")))
        }
        defer { g_object_unref(UnsafeMutableRawPointer(discoverer)) }
        cshims_discoverer_decode_audio_only(UnsafeMutableRawPointer(discoverer))
        let (info, error) = GStreamerError.catching { gst_discoverer_discover_uri(discoverer, uri, &$0) }
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let message = error?.message
        guard let info else { return .read(.failure(MediaError(message ?? "unreadable"))) }

        switch gst_discoverer_info_get_result(info) {
        case GST_DISCOVERER_OK:
            break
        case GST_DISCOVERER_URI_INVALID:
            return .read(.failure(MediaError("invalid URI")))
        case GST_DISCOVERER_TIMEOUT:
            return .read(.failure(MediaError("timed out reading the file", isTimeout: true)))
        case GST_DISCOVERER_MISSING_PLUGINS where !Self.missesOnlyPictures(info):
            return .read(.failure(MediaError("no GStreamer plugin can decode it (\(message ?? "missing plugins"))")))
        case GST_DISCOVERER_MISSING_PLUGINS:
            break  // the video, images or subtitles, skipped on purpose; the audio plays
        case GST_DISCOVERER_ERROR
        where error?.domain == "gst-stream-error-quark"
            && error?.code == Int32(GST_STREAM_ERROR_FAILED.rawValue):
            return .stoppedFlowing(message ?? "its data stopped flowing")
        default:
            return .read(.failure(MediaError(message ?? "not a media file GStreamer can read")))
        }

        var track = TrackInfo()
        track.audioStreams = countAndFree(gst_discoverer_info_get_audio_streams(info))
        track.videoStreams = countAndFree(gst_discoverer_info_get_video_streams(info))
        guard track.audioStreams > 0 else {
            return .read(.failure(MediaError("it has no audio stream")))
        }
        let duration = gst_discoverer_info_get_duration(info)
        if duration != cshims_clock_time_none(), duration > 0 { track.duration = .nanoseconds(Int64(duration)) }
        track.isSeekable = gst_discoverer_info_get_seekable(info) != 0
        track.isLive = gst_discoverer_info_get_live(info) != 0
        let tags = gst_discoverer_info_get_tags(info).map(TagReader.init)
        if let tags {
            track.apply(tags)
            let largest = tags.largestPictureBytes()
            if largest > ArtworkCache.maximumImageBytes { track.oversizedPictureBytes = largest }
        }
        if track.title == nil, MediaSources.isLocal(uri), let path = URL(string: uri)?.path,
            let apeTag = APETag.read(path: path)
        {
            track.fillIn(from: apeTag)  // musepackdec drops the tags apedemux reads
        }
        if let artwork {
            track.artworkURL = artwork.artwork(forTrack: uri, tags: tags)
            track.artworkSearched = true
        }
        if track.replayGain == nil, MediaSources.isLocal(uri), let path = URL(string: uri)?.path {
            track.signature = TrackSignature.of(path: path)
        }
        return .read(.success(track))
    }

    /// Whether every element the discoverer missed is of video, images or subtitles, which
    /// Quaver skips on purpose (a music video's picture): its installer details name each as
    /// `gstreamer|1.0|...|decoder-video/x-theora`.
    private static func missesOnlyPictures(_ info: OpaquePointer) -> Bool {
        guard let details = gst_discoverer_info_get_missing_elements_installer_details(info) else { return false }
        var missing: [String] = []
        var index = 0
        while let detail = details[index] {
            missing.append(String(cString: detail))
            index += 1
        }
        return !missing.isEmpty
            && missing.allSatisfy { detail in
                ["video/", "image/", "subtitle/", "text/", "application/x-ssa", "application/x-ass"].contains {
                    detail.contains("decoder-" + $0)
                }
            }
    }

    private static func countAndFree(_ list: UnsafeMutablePointer<GList>?) -> Int {
        guard let list else { return 0 }
        let count = Int(g_list_length(list))
        gst_discoverer_stream_info_list_free(list)
        return count
    }
}
