internal import CGStreamer
internal import CGStreamerShims
import Media
import PlaybackVocabulary

/// Sampling whether the audio moves: the stream's position beside the pipeline's clock.
extension Pipeline {
    /// Where the stream and the pipeline's clock were at one instant, read on the pipeline's
    /// queue. The position is the sink's (what it has played); the clock is the one the
    /// pipeline runs on: a sound server's sink provides its own, which stands still while the
    /// server takes no audio, and a sink without one (`fakesink`) runs on the system clock.
    package struct Progress: Sendable, Equatable {
        package var position: Duration?
        /// The clock's time (nil: the pipeline has no clock, as before it first plays).
        package var clock: Duration?
        /// The clock's name, for the log (`GstPulseSinkClock`, `GstSystemClock`).
        package var clockName: String?
        /// How much decoded audio waits in playsink's queue in front of the sink (nil: no
        /// queue found): a sink that takes none leaves it full, a decoder that sends none
        /// leaves it empty.
        package var queued: Duration?
        package var at: ContinuousClock.Instant
    }

    /// Asks where the stream and its clock are; the answer comes as ``Event/progress(_:)``.
    package func sampleProgress() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.post(.progress(Self.progress(of: playbin)))
        }
    }

    /// Asked of playsink, not playbin: playbin answers a query, or a search of its bins, under
    /// locks the decoding side's streaming threads hold, and several times a second that wait,
    /// on a decoder busy or stuck with an odd file, was what made most pipelines count as
    /// stuck. The sink's position is what playbin would have answered.
    private static func progress(of playbin: UnsafeMutablePointer<GstElement>) -> Progress {
        guard let playsink = cshims_playsink(playbin) else { return Progress(position: nil, at: .now) }
        defer { gst_object_unref(UnsafeMutableRawPointer(playsink)) }
        var progress = Progress(position: position(of: playsink), at: .now)
        progress.queued = queuedInFrontOfSink(playsink)
        guard let clock = gst_element_get_clock(playbin) else { return progress }
        defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
        let time = gst_clock_get_time(clock)
        if time != UInt64.max { progress.clock = .nanoseconds(Int64(time)) }
        progress.clockName = cshims_object_name(UnsafeMutableRawPointer(clock)).map { String(cString: $0) }
        return progress
    }

    /// The time of audio in playsink's `aqueue`, the queue in front of the audio sink.
    private static func queuedInFrontOfSink(_ playsink: UnsafeMutablePointer<GstElement>) -> Duration? {
        guard let queue = cshims_audio_sink_queue(playsink) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(queue)) }
        var value = GValue()
        g_value_init(&value, GType(11 << 2))  // G_TYPE_UINT64, a macro Swift does not import
        defer { g_value_unset(&value) }
        g_object_get_property(OpaquePointer(queue).gObject, "current-level-time", &value)
        return .nanoseconds(Int64(clamping: g_value_get_uint64(&value)))
    }
}
