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
        /// Since the sample before, the process waited for a CPU far longer than it ran (see
        /// ``StarvationCheck/isProcessStarved``): audio that stands then waits on the machine.
        package var starved = false

        package init(
            position: Duration?, clock: Duration? = nil, clockName: String? = nil, queued: Duration? = nil,
            at: ContinuousClock.Instant, starved: Bool = false
        ) {
            self.position = position
            self.clock = clock
            self.clockName = clockName
            self.queued = queued
            self.at = at
            self.starved = starved
        }
    }

    /// Asks where the stream and its clock are; the answer comes as
    /// ``Event/progress(_:since:)``, with no calm sample before it. Stops a ``watchPace(_:)``.
    package func sampleProgress() {
        run { pipeline in
            pipeline.stopPacing()
            guard let playbin = pipeline.playbin else { return }
            var sample = Self.progress(of: playbin)
            // Whether the machine gave the process a CPU since the sample before, when that
            // one was recent (samples asked for come four times a second).
            let reading = SchedulerReading.take()
            if let reading, let (before, then) = pipeline.lastReading, sample.at - then < .seconds(2) {
                sample.starved =
                    StarvationCheck(before: before, after: reading, thread: reading.reader, window: sample.at - then)
                    .isProcessStarved
            }
            pipeline.lastReading = reading.map { ($0, sample.at) }
            pipeline.post(.progress(sample, since: nil))
        }
    }

    /// Samples the stream every `watch.period`, on the pipeline's own queue, for as long as
    /// its audio keeps the pace `watch` expects, telling nobody: a sample the main actor does
    /// not hear wakes one thread, not three. The first sample off that pace comes as
    /// ``Event/progress(_:since:)`` with the calm sample before it, and sampling stops there
    /// (as it does at ``stopPaceWatch()``, ``sampleProgress()`` or a load).
    package func watchPace(_ watch: PaceWatch) {
        run { pipeline in
            pipeline.stopPacing()
            pipeline.paceWatch = watch
            // A pipeline let go of stops its sampling with it.
            pipeline.paceTimer = pipeline.jobs.every(watch.period) { [weak pipeline] in
                pipeline?.samplePace()
                return pipeline != nil
            }
        }
    }

    /// Stops a ``watchPace(_:)``.
    package func stopPaceWatch() {
        run { $0.stopPacing() }
    }

    /// On the pipeline's queue.
    func stopPacing() {
        paceTimer?.cancel()
        paceTimer = nil
        paceWatch = nil
    }

    /// One sample of a ``watchPace(_:)``, on the pipeline's queue.
    private func samplePace() {
        guard var watch = paceWatch, let playbin else { return stopPacing() }
        let sample = Self.progress(of: playbin)
        guard watch.keptPace(to: sample) else {
            stopPacing()
            return post(.progress(sample, since: watch.reference))
        }
        watch.reference = sample
        paceWatch = watch
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

/// What the pipeline needs to sample a stream's progress on its own while the audio keeps
/// its pace (see ``Pipeline/watchPace(_:)``).
package struct PaceWatch: Sendable, Equatable {
    /// The sample the next is compared with.
    package var reference: Pipeline.Progress
    /// How fast the position should move: the playback rate.
    package var rate: Double
    /// The share of the expected progress that keeps pace.
    package var share: Double
    /// How often the stream is sampled.
    package var period: Duration

    package init(reference: Pipeline.Progress, rate: Double, share: Double, period: Duration) {
        self.reference = reference
        self.rate = rate
        self.share = share
        self.period = period
    }

    /// Whether `sample` moved from ``reference`` by at least ``share`` of what the time
    /// between them and the rate make.
    package func keptPace(to sample: Pipeline.Progress) -> Bool {
        guard let from = reference.position, let to = sample.position else { return false }
        return Self.moved(to - from, over: sample.at - reference.at, rate: rate, share: share)
    }

    /// Whether a position that moved by `moved` over `elapsed` at `rate` kept `share` of the
    /// pace (a rate near 0 counts as a tenth, so that a crawl is not taken for keeping pace).
    package static func moved(_ moved: Duration, over elapsed: Duration, rate: Double, share: Double) -> Bool {
        moved >= elapsed * max(rate, 0.1) * share
    }
}
