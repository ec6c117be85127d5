internal import CGStreamer
internal import CGStreamerShims
import Dispatch
import Media
import PlaybackVocabulary

/// Reading the bus, on the pipeline's queue: GStreamer's messages become ``Pipeline/Event``s,
/// with what the pipeline knows at that moment.
extension Pipeline {
    func drainBus() {
        guard let bus else { return }
        while let message = gst_bus_pop(bus) {
            let event = translate(message)
            gst_message_unref(message)
            // What a load plays through is told before it is known to have prerolled, so that
            // whoever hears of the preroll can already say which elements it has.
            if wantsElements, case .asyncDone = event, let playbin {
                wantsElements = false
                post(.elements(GStreamer.factoryNames(inBin: playbin)))
            }
            if let event { post(event) }
        }
    }

    /// Keeps `list` (a reference of its own, or nil) as the last tags heard, letting go of the
    /// one before.
    func keepLastTags(_ list: UnsafeMutablePointer<GstTagList>?) {
        if let lastTags { gst_tag_list_unref(lastTags) }
        lastTags = list
    }

    static func position(of playbin: UnsafeMutablePointer<GstElement>) -> Duration? {
        var value: gint64 = -1
        return gst_element_query_position(playbin, GST_FORMAT_TIME, &value) != 0 && value >= 0
            ? .nanoseconds(value) : nil
    }

    private func facts(of playbin: UnsafeMutablePointer<GstElement>) -> Facts {
        var facts = Facts()
        facts.at = .now
        facts.position = Self.position(of: playbin)
        var value: gint64 = -1
        if gst_element_query_duration(playbin, GST_FORMAT_TIME, &value) != 0, value > 0 {
            facts.duration = .nanoseconds(value)
        }
        if let query = gst_query_new_seeking(GST_FORMAT_TIME) {
            if gst_element_query(playbin, query) != 0 {
                var seekable: gboolean = 0
                gst_query_parse_seeking(query, nil, &seekable, nil, nil)
                facts.isSeekable = seekable != 0
            }
            gst_query_unref(query)
        }
        (facts.current, facts.pending) = Self.state(of: playbin)
        return facts
    }

    /// The state the pipeline is in and the one it heads for, at once (a timeout of zero:
    /// a change under way is not waited for).
    static func state(of playbin: UnsafeMutablePointer<GstElement>) -> (current: State, pending: State) {
        var current = GST_STATE_VOID_PENDING
        var pending = GST_STATE_VOID_PENDING
        gst_element_get_state(playbin, &current, &pending, 0)
        return (State(current), State(pending))
    }

    private func translate(_ message: UnsafeMutablePointer<GstMessage>) -> Event? {
        guard let playbin else { return nil }
        let fromPipeline = cshims_message_source(message) == UnsafeMutableRawPointer(playbin)
        switch message.pointee.type {
        case GST_MESSAGE_STATE_CHANGED:
            guard fromPipeline else { return nil }
            var old = GST_STATE_VOID_PENDING
            var new = GST_STATE_VOID_PENDING
            var pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(message, &old, &new, &pending)
            let at = ContinuousClock.now
            let position = State(new) >= .paused ? Self.position(of: playbin) : nil
            return .stateChanged(old: State(old), new: State(new), pending: State(pending), position: position, at: at)
        case GST_MESSAGE_ASYNC_DONE:
            return fromPipeline ? .asyncDone(facts(of: playbin)) : nil
        case GST_MESSAGE_EOS:
            return .endOfStream(position: Self.position(of: playbin))
        case GST_MESSAGE_ERROR:
            let (error, debugText) = GStreamerError.of(message)
            var source = "/?"
            var uri = loadedURI
            if let object = cshims_message_source(message) {
                if let path = gst_object_get_path_string(object.assumingMemoryBound(to: GstObject.self)) {
                    source = String(cString: path)
                    g_free(path)
                }
                if let decoderURI = cshims_decoder_uri(object) {
                    uri = String(cString: decoderURI)
                    g_free(decoderURI)
                }
            }
            return .error(
                PipelineError(
                    message: error?.message ?? "unknown error", debug: debugText,
                    domain: .init(error?.domain ?? "unknown"), code: error?.code ?? 0, source: ElementPath(source),
                    uri: uri))
        case GST_MESSAGE_WARNING:
            let source =
                cshims_message_source(message).flatMap { cshims_object_name($0) }.map { String(cString: $0) } ?? "?"
            return .warning(message: GStreamerError.of(message).error?.message ?? "unknown warning", source: source)
        case GST_MESSAGE_STREAM_START:
            keepLastTags(nil)  // a new stream's first tags are read whatever the last ones were
            return .streamStart
        case GST_MESSAGE_DURATION_CHANGED:
            return .durationChanged(facts(of: playbin))
        case GST_MESSAGE_BUFFERING:
            // A queue of a stream already taken out of the pipeline can still report (0%, as it
            // is reset): that is no reason to pause what plays now.
            guard let source = cshims_message_source(message),
                gst_object_has_as_ancestor(
                    source.assumingMemoryBound(to: GstObject.self), OpaquePointer(playbin).object) != 0
            else { return nil }
            var percent: gint = 0
            gst_message_parse_buffering(message, &percent)
            return .buffering(percent: Int(percent))
        case GST_MESSAGE_CLOCK_LOST:
            return .clockLost
        case GST_MESSAGE_REQUEST_STATE:
            var state = GST_STATE_VOID_PENDING
            gst_message_parse_request_state(message, &state)
            return .requestState(State(state))
        case GST_MESSAGE_TAG:
            var list: UnsafeMutablePointer<GstTagList>?
            gst_message_parse_tag(message, &list)
            guard let list else { return nil }
            defer { keepLastTags(list) }
            if let lastTags, StreamTags.agree(list, lastTags) { return nil }
            let tags = StreamTags(list)
            return tags.isEmpty ? nil : .tags(tags)
        case GST_MESSAGE_APPLICATION:
            if cshims_message_is_application(message, CSHIMS_VOLUME_CHANGED_MESSAGE) != 0 {
                let linear = cshims_object_get_double(playbin, "volume")
                return .outputVolumeChanged(
                    gst_stream_volume_convert_volume(
                        GST_STREAM_VOLUME_FORMAT_LINEAR, GST_STREAM_VOLUME_FORMAT_CUBIC, linear))
            }
            if cshims_message_is_application(message, nextURITakenMessage) != 0 { return .nextURITaken }
            return nil
        default:
            return nil
        }
    }
}
