internal import CGStreamer
internal import CGStreamerShims
import Dispatch
import Glibc
package import Media
package import PlaybackVocabulary

/// The one owner of a GStreamer `playbin`, configured for audio only.
///
/// Every call into GStreamer runs on the pipeline's own serial queue, as GstPlay runs its
/// playbin on a thread of its own: commands return at once, and what the pipeline does comes
/// back as ``Event``s, in order, on the main actor. Nothing outside this type touches the
/// playbin, and nothing waits for it. A call that GStreamer does not return from within
/// `stuckLimit`, blocked rather than slow or starved of CPU, is reported as ``Event/stuck``;
/// the pipeline is then replaced by its owner, and this one is freed whenever GStreamer lets
/// go of it.
package final class Pipeline: @unchecked Sendable {
    /// How long a call into the playbin may take before the pipeline counts as stuck.
    var stuckLimit: Duration { jobs.limit }
    /// The call that got the pipeline stuck, if one did: when it was made, and why it was
    /// taken for stuck.
    package var stuck: (since: ContinuousClock.Instant, why: StuckCall)? { jobs.stuck }
    /// The gapless hand-over: the next URI, answered by the main actor, read by
    /// `about-to-finish` on a streaming thread.
    package let handoff: GaplessHandoff

    /// Bytes the sources of the playbin have sent on, counted on its streaming threads.
    private let sourceBytes = cshims_byte_counter_new()
    /// The decoded audio that reached the audio filter since the last load began.
    private let decodedBytes = cshims_byte_counter_new()
    /// Judges, in the output's streaming thread, whether the audio keeps its pace (see
    /// ``watchPace(_:)``); nil when the kernel gives no timer.
    let pace = cshims_pace_new()

    /// Where every call into the playbin runs, timed (see ``WatchedQueue``).
    let jobs: WatchedQueue
    private let deliver: @Sendable (Delivery) -> Void

    // Touched on `jobs.queue` only (here and in Pipeline+Bus.swift).
    var playbin: UnsafeMutablePointer<GstElement>?
    var bus: UnsafeMutablePointer<GstBus>?
    private var busSource: (any DispatchSourceRead)?
    private var handlers: [gulong] = []
    /// The audio filter with the ReplayGain elements; nil when they are not installed.
    private var loudness: LoudnessChain?
    var loadNumber = 0
    /// The pace watch in force, while the audio keeps its pace (Pipeline+Progress.swift):
    /// judged by ``pace`` in the output's streaming thread, or sampled on ``paceTimer``.
    var paceWatch: PaceWatch?
    /// Samples the pace on the pipeline's queue, when the output's pad cannot be watched.
    var paceTimer: (any DispatchSourceTimer)?
    /// Hears ``pace`` say the audio fell off its pace; nil when the output's pad is not watched.
    var paceAlarm: (any DispatchSourceRead)?
    /// The scheduler's statistics at the last progress sample asked for, and when.
    var lastReading: (SchedulerReading, ContinuousClock.Instant)?
    /// The URI of the load in progress (nil once it is taken down).
    var loadedURI: String?
    /// The tag list of the last tag message read since the stream started (a reference of its own).
    var lastTags: UnsafeMutablePointer<GstTagList>?
    var wantsElements = false

    /// Makes the playbin. Checks the sink description before anything runs, so that a bad
    /// `--audio-sink` is an error at start; the playbin itself is built on the pipeline's queue.
    /// - Parameter audioSink: a GStreamer bin description (`fakesink sync=true`), or nil for
    ///   the system's audio output (`autoaudiosink`, which falls back to a null sink).
    /// - Parameter deliver: called on the main actor with every event, in order.
    package init(
        audioSink: String?, volume: Double, stuckLimit: Duration = .seconds(3),
        deliver: @escaping @MainActor @Sendable (Delivery) -> Void
    ) {
        let deliver: @Sendable (Delivery) -> Void = { delivery in
            DispatchQueue.main.async { MainActor.assumeIsolated { deliver(delivery) } }
        }
        self.deliver = deliver
        // A call into GStreamer can wait on the about-to-finish handler: the handler's wait
        // ends well before such a call counts as stuck.
        let decoded = CounterReader(counter: decodedBytes)
        handoff = GaplessHandoff(answerWait: min(.seconds(1), stuckLimit / 3)) { decoded.read() }
        // The watchdog reports a stuck pipeline whatever load it was at.
        jobs = WatchedQueue(label: "quaver.pipeline", limit: stuckLimit) { report in
            switch report {
            case .stuck(let since, _): deliver(Delivery(load: .max, event: .stuck(since: since)))
            case .slow(let since, let why): deliver(Delivery(load: .max, event: .slowCall(since: since, why)))
            case .returned(let since): deliver(Delivery(load: .max, event: .slowCallReturned(since: since)))
            }
        }
        run { pipeline in
            do throws(SetupError) {
                try pipeline.build(audioSink: audioSink, volume: volume)
            } catch {
                pipeline.post(
                    .error(
                        PipelineError(
                            message: error.description, domain: .other("quaver"), code: 0,
                            source: ElementPath("/quaver-playbin"), inOutput: true)))
            }
        }
    }

    /// Checks what a pipeline needs before one is made: `playbin` installed, and a sink
    /// description that parses.
    package static func validate(audioSink: String?) throws(SetupError) {
        GStreamer.initialize()
        guard GStreamer.hasElement("playbin") else {
            throw SetupError(
                description: "the GStreamer element 'playbin' is missing (install gstreamer1.0-plugins-base)")
        }
        guard let audioSink else { return }
        let (parsed, error) = GStreamerError.catching { gst_parse_bin_from_description(audioSink, 1, &$0) }
        guard let parsed else {
            throw SetupError(description: "invalid --audio-sink '\(audioSink)': \(error?.message ?? "unknown error")")
        }
        gst_object_unref(UnsafeMutableRawPointer(parsed))
    }

    static let streamProperties =
        "props, media.role=(string)music, application.name=(string)Quaver, application.id=(string)quaver, application.icon_name=(string)quaver"

    private func build(audioSink: String?, volume: Double) throws(SetupError) {
        GStreamer.initialize()
        guard let element = gst_element_factory_make("playbin", "quaver-playbin") else {
            throw SetupError(
                description: "the GStreamer element 'playbin' is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(element)
        // Audio only: video and subtitle streams are never shown (the flags), nor parsed or
        // decoded, and no video sink is ever made (see cshims_playbin_decode_audio_only).
        gst_util_set_object_arg(OpaquePointer(element).gObject, "flags", "audio+soft-volume")
        cshims_playbin_decode_audio_only(element)
        // playsink's queue in front of the audio sink holds a second of decoded audio by
        // default, refilled after every seek; a fifth of a second is ample ahead of a sink
        // that buffers on its own, and makes each seek decode less.
        cshims_playbin_limit_audio_queue(element, 200_000_000)
        // scaletempo keeps pitch when the rate changes; the ReplayGain elements go before it.
        let filter: UnsafeMutablePointer<GstElement>?
        if let chain = makeLoudnessChain(limiter: false) {
            filter = chain.bin
            loudness = chain
        } else {
            filter = gst_element_factory_make("scaletempo", nil)
        }
        if let filter { cshims_object_set_object(element, "audio-filter", filter) }
        let sink: UnsafeMutablePointer<GstElement>?
        if let audioSink {
            let (parsed, error) = GStreamerError.catching { gst_parse_bin_from_description(audioSink, 1, &$0) }
            sink = parsed.map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: GstElement.self) }
            if sink == nil {
                let reason = error?.message ?? "unknown error"
                gst_object_unref(element)
                throw SetupError(description: "invalid --audio-sink '\(audioSink)': \(reason)")
            }
        } else {
            sink = gst_element_factory_make("autoaudiosink", "quaver-audio-sink")
        }
        // What the sound server is told about the stream: music (so that a phone or alarm
        // stream corks it), and whose it is (mixers show the name and icon).
        cshims_playbin_set_stream_properties(element, Self.streamProperties)
        if let sink {
            cshims_set_stream_properties(sink, Self.streamProperties)
            cshims_object_set_object(element, "audio-sink", sink)
            watchPace(enteringOutput: sink)
        }
        // Decoded audio is counted where it enters the filter, else where it enters the sink.
        if let counted = filter ?? sink { cshims_count_pad_bytes(counted, "sink", decodedBytes) }
        cshims_object_set_double(element, "volume", Self.linear(volume))
        playbin = element

        let bus = gst_element_get_bus(element)!
        self.bus = bus
        var pollFD = GPollFD()
        gst_bus_get_pollfd(bus, &pollFD)
        // The source watches a duplicate that only its cancellation closes: the bus closes its
        // own descriptor when the pipeline goes, and a new pipeline can get the same number
        // before the old source is unregistered, which would leave the new one deaf.
        let watched = dup(pollFD.fd)
        let source = DispatchSource.makeReadSource(
            fileDescriptor: watched >= 0 ? watched : pollFD.fd, queue: jobs.queue)
        source.setEventHandler { [weak self] in self?.drainBus() }
        if watched >= 0 { source.setCancelHandler { close(watched) } }
        source.resume()
        busSource = source

        let handoffPointer = Unmanaged.passRetained(handoff).toOpaque()
        handlers = [
            cshims_connect_element_signal(
                element, "about-to-finish", aboutToFinishThunk, handoffPointer, releaseHandoffThunk),
            cshims_playbin_watch_volume(element),
            cshims_playbin_count_source_bytes(element, sourceBytes),
        ]
    }

    // MARK: - Commands (from the main actor; none waits)

    /// Takes down what is loaded (to READY, or to NULL when `fresh`), drops the messages
    /// still queued about it, and starts `uri` toward `state`. Events after this carry `number`.
    /// READY, not NULL, by default: the file is closed all the same, and GStreamer 1.22's
    /// playsink leaks its audio chain (about 4 KiB) on every NULL → PLAYING. After a failure,
    /// NULL: every element of the failed stream goes, not only its data.
    /// `loudness`: the gain the stream plays at.
    package func load(_ uri: String, state: State, number: Int, fresh: Bool, loudness: LoudnessPlan? = nil) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.tearDown(playbin, fresh: fresh)
            if let limiter = loudness?.limiter { pipeline.useLoudnessChain(limiter: limiter, in: playbin) }
            cshims_byte_counter_reset(pipeline.decodedBytes)  // nothing of the old stream flows now
            pipeline.handoff.loaded(number, loudness: loudness)
            pipeline.loadNumber = number
            pipeline.loadedURI = uri
            pipeline.wantsElements = true
            cshims_object_set_string(playbin, "uri", uri)
            pipeline.change(playbin, to: state)
        }
    }

    /// Takes down what is loaded (see ``load(_:state:number:fresh:)``).
    package func unload(number: Int, fresh: Bool) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.tearDown(playbin, fresh: fresh)
            pipeline.loadNumber = number
            pipeline.loadedURI = nil
        }
    }

    /// Moves the loaded stream to `state`; ``Event/stateChangeFailed(_:)`` when refused.
    package func setState(_ state: State) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.change(playbin, to: state)
        }
    }

    /// A flushing, accurate seek that also sets the playback rate; it completes with the next
    /// ``Event/asyncDone(_:)``, or is reported refused.
    package func seek(to position: Duration, rate: Double) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
            let start = gint64(position.nanoseconds)
            let accepted =
                gst_element_seek(
                    playbin, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, start, GST_SEEK_TYPE_NONE, -1) != 0
            if !accepted { pipeline.post(.seekRefused(position)) }
        }
    }

    /// Sets the volume, on the cubic scale of desktop mixers (0...1).
    package func setVolume(_ volume: Double) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            cshims_object_set_double(playbin, "volume", Self.linear(volume))
        }
    }

    /// Asks where the stream is; the answer comes as ``Event/position(_:)``.
    package func queryPosition() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            let at = ContinuousClock.now
            pipeline.post(.position(Self.position(of: playbin), at: at))
        }
    }

    /// Asks what state the pipeline is in, without waiting on a change under way; the answer
    /// comes as ``Event/stateChecked(current:pending:)``.
    package func checkState() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            let (current, pending) = Self.state(of: playbin)
            pipeline.post(.stateChecked(current: current, pending: pending))
        }
    }

    /// How many bytes the sources have sent on so far, over every URI loaded: a stream whose
    /// count grows is receiving data, however long its decoders take to make audio of it.
    /// Reads a counter, never the playbin: it never waits.
    package var bytesFromSources: UInt64 { cshims_byte_counter_read(sourceBytes) }

    /// Whether any decoded audio of the load in progress reached the output's filter: a load
    /// that never prerolls without any is its file's fault (no decoder made audio of it),
    /// one with some is the output's (it took none). Reads a counter, never the playbin.
    package var hasDecodedAudio: Bool { cshims_byte_counter_read(decodedBytes) > 0 }

    deinit {
        paceAlarm?.cancel()
        cshims_pace_unref(pace)
        cshims_byte_counter_unref(sourceBytes)
        cshims_byte_counter_unref(decodedBytes)
        if let lastTags { gst_tag_list_unref(lastTags) }
        // Released already, or never built: nothing to free. Otherwise the playbin goes on a
        // queue of its own, never on the thread that dropped the pipeline (the main actor).
        guard let playbin else { return }
        busSource?.cancel()
        handoff.abandon(retiring: true)
        let parts = Parts(playbin: playbin, bus: bus, handlers: handlers)
        DispatchQueue(label: "quaver.pipeline.free").async {
            for handler in parts.handlers where handler != 0 { cshims_disconnect(parts.playbin, handler) }
            gst_element_set_state(parts.playbin, GST_STATE_NULL)
            if let bus = parts.bus { gst_object_unref(bus) }
            gst_object_unref(parts.playbin)
        }
    }

    /// What a dropped pipeline is made of, handed to a queue to be freed.
    private struct Parts: @unchecked Sendable {
        let playbin: UnsafeMutablePointer<GstElement>
        let bus: UnsafeMutablePointer<GstBus>?
        let handlers: [gulong]
    }

    /// Asks what the stream plays through; the answer comes as ``Event/elements(_:)``.
    package func describeElements() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.post(.elements(GStreamer.factoryNames(inBin: playbin)))
        }
    }

    /// Lets go of the pipeline: nothing more is reported, commands still queued are skipped,
    /// and the playbin is freed on the pipeline's queue, once GStreamer lets go of it after a
    /// stuck call. `freed` is called (on the main actor) when it is.
    package func release(freed: (@MainActor @Sendable () -> Void)? = nil) {
        jobs.retire()
        // A stuck load that returns later must not arm it again.
        handoff.abandon(retiring: true)
        jobs.queue.async { [self] in
            busSource?.cancel()
            busSource = nil
            stopPacing()
            paceAlarm?.cancel()
            paceAlarm = nil
            if let playbin {
                for handler in handlers where handler != 0 { cshims_disconnect(playbin, handler) }
                gst_element_set_state(playbin, GST_STATE_NULL)
                gst_object_unref(playbin)
            }
            if let bus { gst_object_unref(bus) }
            playbin = nil
            bus = nil
            keepLastTags(nil)
            if let freed { DispatchQueue.main.async { MainActor.assumeIsolated(freed) } }
        }
    }

    /// Runs `body` on the pipeline's queue, timed (see ``WatchedQueue/run(_:)``).
    func run(_ body: @escaping @Sendable (Pipeline) -> Void) {
        jobs.run { [self] in body(self) }
    }

    /// Reports an event from a streaming thread, outside the order of the bus and of any load.
    private func makeLoudnessChain(limiter: Bool) -> LoudnessChain? {
        LoudnessChain.make(handoff: handoff, limiter: limiter) { [weak self] event in self?.postFromStream(event) }
    }

    /// Replaces the loudness chain, taken down with the stream (READY or NULL), by one with
    /// `rglimiter` or without, as the plan of the stream about to load needs: a change of the
    /// clipping setting to or from the limiter applies from the next track loaded (a track
    /// taken for a gapless switch plays through the chain there is).
    private func useLoudnessChain(limiter: Bool, in playbin: UnsafeMutablePointer<GstElement>) {
        guard let current = loudness, current.hasLimiter != limiter, let chain = makeLoudnessChain(limiter: limiter)
        else { return }
        cshims_object_set_object(playbin, "audio-filter", chain.bin)
        loudness = chain
    }

    private func postFromStream(_ event: Event) {
        guard !jobs.isSilenced else { return }
        deliver(Delivery(load: .max, event: event))
    }

    func post(_ event: Event) {
        guard !jobs.isSilenced else { return }
        deliver(Delivery(load: loadNumber, event: event))
    }

    private func tearDown(_ playbin: UnsafeMutablePointer<GstElement>, fresh: Bool) {
        // A handler waiting for what follows lets go first: the state change waits on it.
        handoff.abandon()
        stopPacing()
        gst_element_set_state(playbin, fresh ? GST_STATE_NULL : GST_STATE_READY)
        loudness?.reset()
        keepLastTags(nil)
        // What is still queued describes the stream just taken down.
        if let bus {
            gst_bus_set_flushing(bus, 1)
            gst_bus_set_flushing(bus, 0)
        }
    }

    private func change(_ playbin: UnsafeMutablePointer<GstElement>, to state: State) {
        if gst_element_set_state(playbin, state.gst) == GST_STATE_CHANGE_FAILURE {
            // The error GStreamer queued with the refusal says why: it goes first.
            drainBus()
            post(.stateChangeFailed(state))
        }
    }

    private static func linear(_ cubic: Double) -> Double {
        gst_stream_volume_convert_volume(GST_STREAM_VOLUME_FORMAT_CUBIC, GST_STREAM_VOLUME_FORMAT_LINEAR, cubic)
    }
}

private let aboutToFinishThunk: cshims_element_callback = { element, data in
    guard let element, let data else { return }
    let handoff = Unmanaged<GaplessHandoff>.fromOpaque(data).takeUnretainedValue()
    if let uri = handoff.commit() {
        cshims_object_set_string(element, "uri", uri)
        let message = gst_message_new_application(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self),
            gst_structure_new_empty(nextURITakenMessage))
        gst_element_post_message(element, message)
    }
}

/// Reads a byte counter from any thread (its count is atomic), holding a reference of its
/// own: a handler may read it while the pipeline that made it goes.
private final class CounterReader: @unchecked Sendable {
    private let counter: OpaquePointer?

    init(counter: OpaquePointer?) { self.counter = cshims_byte_counter_ref(counter) }

    func read() -> UInt64 { cshims_byte_counter_read(counter) }

    deinit { cshims_byte_counter_unref(counter) }
}

/// The name of the application message that becomes `Pipeline.Event.nextURITaken`.
let nextURITakenMessage = "quaver-next-uri-taken"

private let releaseHandoffThunk: GClosureNotify = { data, _ in
    guard let data else { return }
    Unmanaged<GaplessHandoff>.fromOpaque(data).release()
}
