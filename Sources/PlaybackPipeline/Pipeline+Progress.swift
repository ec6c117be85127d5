internal import CGStreamer
internal import CGStreamerShims
import Dispatch
import Glibc
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

    /// Watches the stream's pace for as long as its audio keeps the pace `watch` expects,
    /// telling nobody; the first sample off that pace comes as ``Event/progress(_:since:)``
    /// with a calm one before it, and the watch stops there (as it does at
    /// ``stopPaceWatch()``, ``sampleProgress()`` or a load).
    ///
    /// The output's streaming thread judges the pace as each buffer enters the output (see
    /// `cshims_pace`): it wakes for every buffer anyway, so that no thread of the daemon's own
    /// wakes while the audio plays on, and a music player plays for hours. Only when no
    /// buffer kept the pace for `watch.period` is the stream sampled, on the pipeline's
    /// queue; the calm sample is then where the output's audio last kept it. An output whose
    /// pad cannot be watched is sampled every `watch.period` instead.
    package func watchPace(_ watch: PaceWatch) {
        run { pipeline in
            pipeline.stopPacing()
            pipeline.paceWatch = watch
            if pipeline.paceAlarm != nil, let pace = pipeline.pace {
                cshims_pace_arm(pace, watch.share, Int64(watch.period.nanoseconds))
                return
            }
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
        if let pace { cshims_pace_disarm(pace) }
    }

    /// Has ``pace`` watch the buffers that enter `output` (the audio sink), and listens for
    /// its alarm on the pipeline's queue. On the pipeline's queue, as it is built.
    func watchPace(enteringOutput output: UnsafeMutablePointer<GstElement>) {
        guard let pace, cshims_pace_attach(pace, output, "sink") != 0 else { return }
        // The source reads a duplicate that only its cancellation closes, as the bus's does.
        let descriptor = dup(cshims_pace_descriptor(pace))
        guard descriptor >= 0 else { return }
        let alarm = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: jobs.queue)
        alarm.setEventHandler { [weak self] in self?.paceFellBehind() }
        alarm.setCancelHandler { close(descriptor) }
        alarm.resume()
        paceAlarm = alarm
    }

    /// The alarm of ``pace``, on the pipeline's queue: when the audio is indeed off its
    /// pace, the stream is sampled in a job of its own (timed, as every call into the
    /// playbin is), and reported with a calm sample where the output's audio last kept it.
    private func paceFellBehind() {
        guard let pace else { return }
        var keptAt: Int64 = 0
        var keptStreamTime: Int64 = 0
        guard cshims_pace_take_alarm(pace, &keptAt, &keptStreamTime) != 0 else { return }
        let (kept, streamTime) = (keptAt, keptStreamTime)
        run { pipeline in
            guard let watch = pipeline.paceWatch, let playbin = pipeline.playbin else { return pipeline.stopPacing() }
            let sample = Self.progress(of: playbin)
            pipeline.stopPacing()
            pipeline.post(.progress(sample, since: watch.calm(before: sample, keptAt: kept, at: streamTime)))
        }
    }

    /// One sample of a ``watchPace(_:)`` on a timer, on the pipeline's queue.
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
    /// The sample the next is compared with (the calm sample, when no buffer showed the pace
    /// kept since the watch began).
    package var reference: Pipeline.Progress
    /// How fast the position should move: the playback rate.
    package var rate: Double
    /// The share of the expected progress that keeps pace.
    package var share: Double
    /// How long the audio may fall behind the pace before the stream is sampled (how often
    /// it is sampled, when the output's pad cannot be watched).
    package var period: Duration

    package init(reference: Pipeline.Progress, rate: Double, share: Double, period: Duration) {
        self.reference = reference
        self.rate = rate
        self.share = share
        self.period = period
    }

    /// The calm sample before `sample`, off the pace: where the output's audio last kept it
    /// (`keptAt`, on `cshims_pace_now()`'s clock), at the stream time of the buffer that
    /// showed it (`streamTime`, ns; negative when unknown). That buffer had entered the
    /// output, ahead of what was heard: the calm position is never past `sample`'s, so that
    /// audio that stood since counts as standing. ``reference`` when no buffer kept the pace.
    func calm(before sample: Pipeline.Progress, keptAt: Int64, at streamTime: Int64) -> Pipeline.Progress {
        guard streamTime >= 0 else { return reference }
        let age = Duration.nanoseconds(max(cshims_pace_now() - keptAt, 0))
        var position = Duration.nanoseconds(streamTime)
        if let heard = sample.position { position = min(position, heard) }
        return Pipeline.Progress(position: position, clockName: sample.clockName, at: .now - age)
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
