internal import CGStreamer
import FoundationEssentials
import PlaybackVocabulary

/// Playlists named by an `http` or `https` URL (a station's `listen.pls`): fetched with
/// GStreamer's own source for the URL (the HTTP client, TLS, proxy settings and credentials
/// that play it), bounded in size and time, then read as a local playlist is.
///
/// GStreamer cannot play such a file ("Could not determine type of stream"). An HLS
/// playlist (`#EXT-X-` tags) is the exception: it is a stream, which GStreamer's `hlsdemux`
/// plays, so it is queued as it is.
enum RemotePlaylist {
    /// How long a playlist may take to arrive whole: the stream stall limit.
    static let timeout = Duration.seconds(10)

    /// Whether `uri`, an `http` or `https` URL, names a playlist: its path (not its query)
    /// ends in one of `MediaSources.playlistExtensions`.
    static func names(_ uri: String) -> Bool {
        guard let scheme = MediaSources.scheme(of: uri), scheme == "http" || scheme == "https",
            let url = URL(string: uri)
        else { return false }
        return MediaSources.playlistExtensions.contains(MediaSources.pathExtension(url.path))
    }

    /// Whether the text of a playlist is HLS's (RFC 8216 tags start with `#EXT-X-`).
    static func isHLS(_ data: Data) -> Bool {
        data.firstRange(of: Array("#EXT-X-".utf8)) != nil
    }

    /// The absolute URL an entry of the playlist at `base` names, nil when it is not an
    /// `http` or `https` URL: a playlist on the network does not name this machine's files.
    static func resolve(_ entry: String, against base: String) -> String? {
        guard let url = URL(string: entry, relativeTo: URL(string: base))?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        return url.absoluteString
    }

    /// The first `limit` bytes at `uri` (`.start` when there are more), or why they could not
    /// be read within `timeout`.
    static func fetch(_ uri: String, limit: Int, timeout: Duration = timeout) -> LocalFiles.Contents {
        GStreamer.initialize()
        let (made, error) = GStreamerError.catching { gst_element_make_from_uri(GST_URI_SRC, uri, nil, &$0) }
        guard let source = made else {
            return .refused(error?.message ?? "no GStreamer source for it")
        }
        guard let pipeline = gst_pipeline_new(nil), let sink = gst_element_factory_make("fakesink", nil) else {
            gst_object_unref(source)
            return .refused("cannot make a pipeline")
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        gst_bin_add(bin, source)
        gst_bin_add(bin, sink)
        guard gst_element_link(source, sink) != 0, let pad = gst_element_get_static_pad(source, "src") else {
            return .refused("cannot link its source")
        }
        let received = Received(limit: limit)
        let context = Unmanaged.passRetained(received)
        gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER, receive, context.toOpaque(),
            { context in
                context.map { Unmanaged<Received>.fromOpaque($0).release() }
            })
        gst_object_unref(pad)
        guard gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE else {
            return .refused("cannot start reading it")
        }
        let bus = gst_element_get_bus(pipeline)
        defer { gst_object_unref(bus) }
        let deadline = ContinuousClock.now + timeout
        let types = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        while !received.state.withLock({ $0.isFull }) {
            guard ContinuousClock.now < deadline else {
                return .refused("not read whole within \(timeout.components.seconds) s")
            }
            // Short waits: a full buffer ends the read without a message.
            guard let message = gst_bus_timed_pop_filtered(bus, 50_000_000, types) else { continue }
            defer { gst_message_unref(message) }
            guard message.pointee.type == GST_MESSAGE_ERROR else { break }
            return .refused(GStreamerError.of(message).error?.message ?? "unreadable")
        }
        let data = received.state.withLock { $0.data }
        return data.count > limit ? .start(data.prefix(limit), size: nil) : .data(data)
    }

    /// What the source has sent, up to one byte past the limit.
    private final class Received: Sendable {
        struct State: Sendable {
            var data = Data()
            var isFull = false
        }
        let limit: Int
        let state = Locked(State())

        init(limit: Int) { self.limit = limit }
    }

    /// Keeps a buffer the source sends, until the limit is passed; then drops the rest.
    private static let receive: GstPadProbeCallback = { _, info, context in
        guard let info, let context, let buffer = info.pointee.data else { return GST_PAD_PROBE_OK }
        let received = Unmanaged<Received>.fromOpaque(context).takeUnretainedValue()
        let bytes = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstBuffer.self)
        var map = GstMapInfo()
        guard gst_buffer_map(bytes, &map, GST_MAP_READ) != 0 else { return GST_PAD_PROBE_OK }
        defer { gst_buffer_unmap(bytes, &map) }
        let full = received.state.withLock { state -> Bool in
            guard !state.isFull else { return true }
            let room = received.limit + 1 - state.data.count
            state.data.append(UnsafeBufferPointer(start: map.data, count: min(Int(map.size), room)))
            state.isFull = state.data.count > received.limit
            return state.isFull
        }
        return full ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK
    }
}
