internal import CGStreamer
internal import CGStreamerShims
import Dispatch
import Glibc

/// The one owner of a GStreamer `playbin`, configured for audio only.
///
/// Every call into GStreamer runs on the pipeline's own serial queue, as GstPlay runs its
/// playbin on a thread of its own: commands return at once, and what the pipeline does comes
/// back as ``Event``s, in order, on the main actor. Nothing outside this type touches the
/// playbin, and nothing waits for it. A call that GStreamer does not return from within
/// `stuckLimit` is reported as ``Event/stuck``; the pipeline is then replaced by its owner, and
/// this one is freed whenever GStreamer lets go of it.
final class Pipeline: @unchecked Sendable {
    enum State: Int, Sendable, Comparable {
        case voidPending = 0, null, ready, paused, playing
        static func < (a: State, b: State) -> Bool { a.rawValue < b.rawValue }
        init(_ state: GstState) { self = State(rawValue: Int(state.rawValue)) ?? .voidPending }
        var gst: GstState { GstState(rawValue: UInt32(rawValue)) }
    }

    /// What the pipeline knows of the loaded stream at the moment of an event, read on its
    /// queue so that the main actor never has to ask.
    struct Facts: Sendable, Equatable {
        /// When the pipeline was asked: a position is as of then, however late it is read.
        var at = ContinuousClock.now
        var position: Duration?
        var duration: Duration?
        var isSeekable = false
        /// The state reached and the one pending.
        var current: State = .voidPending
        var pending: State = .voidPending
    }

    enum Event: Sendable {
        /// The whole pipeline's state changed (not one of its elements').
        /// `position`: where the stream was `at` that moment.
        case stateChanged(old: State, new: State, pending: State, position: Duration?, at: ContinuousClock.Instant)
        /// A preroll or a flushing seek completed.
        case asyncDone(Facts)
        case endOfStream
        /// `source` is the path of the element that failed, e.g.
        /// `/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1/GstSoupHTTPSrc:source`.
        /// `uri`: the URI that failed: the one the failing decoder reads (the stream handed
        /// over for a gapless switch, when it is that one's), else the one loaded; nil when
        /// nothing is. `debug`: GStreamer's debug string, for the developer-level log.
        /// `inOutput`: the audio output failed (the sound server went away, the device was
        /// removed), not the track.
        case error(message: String, debug: String?, source: String, uri: String?, inOutput: Bool)
        case warning(message: String, source: String)
        case streamStart
        case durationChanged(Facts)
        case buffering(percent: Int)
        case clockLost
        /// An element asks the application to change the pipeline's state: the sound server
        /// corks the stream (PAUSED) for a call or an alarm, and uncorks it (PLAYING) after.
        case requestState(State)
        /// The output's volume changed (on the cubic scale of desktop mixers): a mixer changed
        /// the stream's volume on the sound server, or Quaver did.
        case outputVolumeChanged(Double)
        /// Tags reached the sink (what is heard now): a stream's ICY title, a file's own tags.
        /// Lists with nothing a listener sees (a bit rate, a codec) are not reported.
        case tags(StreamTags)
        /// playbin took the prepared next URI (`about-to-finish`): it starts once the current
        /// stream ends. Posted from the streaming thread, so it arrives in order with the rest.
        case nextURITaken
        /// A state change GStreamer refused at once (after the errors it queued with it).
        case stateChangeFailed(State)
        /// A seek GStreamer refused.
        case seekRefused(Duration)
        /// The answer to ``queryPosition()``: where the stream was `at` that moment.
        case position(Duration?, at: ContinuousClock.Instant)
        /// The factory names of the elements the loaded stream is played with, once it
        /// prerolled (for diagnostics and tests).
        case elements([String])
        /// A stream started at this gain (`rgvolume`'s result, in dB), as `plan` set it.
        /// Reported from the streaming thread, whatever load it belongs to.
        case loudnessApplied(LoudnessPlan, gain: Double)
        /// `rganalysis` measured a whole track that has no tags. Reported from the streaming
        /// thread, whatever load it belongs to.
        case loudnessMeasured(TrackSignature, MeasuredGain)
        /// A call into GStreamer did not return within `stuckLimit`: the pipeline is stuck
        /// (a deadlock inside GStreamer) and must be replaced. Nothing else is reported after it.
        case stuck
    }

    /// An event with the number of the load it belongs to: events of a stream taken down
    /// can still be on their way when the next one is loaded.
    struct Delivery: Sendable {
        var load: Int
        var event: Event
    }

    /// Why a pipeline could not be made.
    struct SetupError: Error, CustomStringConvertible {
        var description: String
    }

    /// How long a call into the playbin may take before the pipeline counts as stuck.
    let stuckLimit: Duration
    /// The gapless hand-over: the next URI, prepared by the main actor, read by
    /// `about-to-finish` on a streaming thread.
    let handoff = GaplessHandoff()

    /// Bytes the sources of the playbin have sent on, counted on its streaming threads.
    private let sourceBytes = cshims_byte_counter_new()

    private let queue = DispatchQueue(label: "quaver.pipeline")
    private let watchdogQueue = DispatchQueue(label: "quaver.pipeline.watchdog")
    private let deliver: @Sendable (Delivery) -> Void
    /// What the queue's jobs and the watchdog share.
    private let control = Locked(Control())

    private struct Control {
        /// The job running on the queue, if any (its sequence number).
        var running: UInt64?
        var nextJob: UInt64 = 0
        /// A job did not return in time: nothing more is reported.
        var stuck = false
        /// The owner let go of this pipeline: jobs still queued are skipped.
        var retired = false
    }

    // Touched on `queue` only (here and in Pipeline+Bus.swift).
    var playbin: UnsafeMutablePointer<GstElement>?
    var bus: UnsafeMutablePointer<GstBus>?
    private var busSource: (any DispatchSourceRead)?
    private var handlers: [gulong] = []
    /// The audio filter with the ReplayGain elements; nil when they are not installed.
    private var loudness: LoudnessChain?
    var loadNumber = 0
    /// The URI of the load in progress (nil once it is taken down).
    var loadedURI: String?
    var wantsElements = false

    /// Makes the playbin. Checks the sink description before anything runs, so that a bad
    /// `--audio-sink` is an error at start; the playbin itself is built on the pipeline's queue.
    /// - Parameter audioSink: a GStreamer bin description (`fakesink sync=true`), or nil for
    ///   the system's audio output (`autoaudiosink`, which falls back to a null sink).
    /// - Parameter deliver: called on the main actor with every event, in order.
    init(
        audioSink: String?, volume: Double, stuckLimit: Duration = .seconds(3),
        deliver: @escaping @MainActor @Sendable (Delivery) -> Void
    ) {
        self.stuckLimit = stuckLimit
        self.deliver = { delivery in
            DispatchQueue.main.async { MainActor.assumeIsolated { deliver(delivery) } }
        }
        run { pipeline in
            do throws(SetupError) {
                try pipeline.build(audioSink: audioSink, volume: volume)
            } catch {
                pipeline.post(.error(message: error.description, debug: nil, source: "quaver-playbin", uri: nil, inOutput: true))
            }
        }
    }

    /// Checks what a pipeline needs before one is made: `playbin` installed, and a sink
    /// description that parses.
    static func validate(audioSink: String?) throws(SetupError) {
        GStreamer.initialize()
        guard GStreamer.hasElement("playbin") else {
            throw SetupError(description: "the GStreamer element 'playbin' is missing (install gstreamer1.0-plugins-base)")
        }
        guard let audioSink else { return }
        var error: UnsafeMutablePointer<GError>?
        guard let parsed = gst_parse_bin_from_description(audioSink, 1, &error) else {
            let reason = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw SetupError(description: "invalid --audio-sink '\(audioSink)': \(reason)")
        }
        gst_object_unref(UnsafeMutableRawPointer(parsed))
    }

    static let streamProperties =
        "props, media.role=(string)music, application.name=(string)Quaver, application.id=(string)quaver, application.icon_name=(string)quaver"

    private func build(audioSink: String?, volume: Double) throws(SetupError) {
        GStreamer.initialize()
        guard let element = gst_element_factory_make("playbin", "quaver-playbin") else {
            throw SetupError(description: "the GStreamer element 'playbin' is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(element)
        // Audio only: video and subtitle streams are never shown (the flags) nor decoded (the
        // decoders are skipped when decodebin picks them).
        gst_util_set_object_arg(OpaquePointer(element).gObject, "flags", "audio+soft-volume")
        cshims_playbin_decode_audio_only(element)
        // playsink's queue in front of the audio sink holds a second of decoded audio by
        // default, refilled after every seek; a fifth of a second is ample ahead of a sink
        // that buffers on its own, and makes each seek decode less.
        cshims_playbin_limit_audio_queue(element, 200_000_000)
        // scaletempo keeps pitch when the rate changes; the ReplayGain elements go before it.
        if let chain = LoudnessChain.make(handoff: handoff, report: { [weak self] event in self?.postFromStream(event) }) {
            cshims_object_set_object(element, "audio-filter", chain.bin)
            loudness = chain
        } else if let scaletempo = gst_element_factory_make("scaletempo", nil) {
            cshims_object_set_object(element, "audio-filter", scaletempo)
        }
        let sink: UnsafeMutablePointer<GstElement>?
        if let audioSink {
            var error: UnsafeMutablePointer<GError>?
            sink = gst_parse_bin_from_description(audioSink, 1, &error).map {
                UnsafeMutableRawPointer($0).assumingMemoryBound(to: GstElement.self)
            }
            if sink == nil {
                let reason = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
                if let error { g_error_free(error) }
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
        }
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
        let source = DispatchSource.makeReadSource(fileDescriptor: watched >= 0 ? watched : pollFD.fd, queue: queue)
        source.setEventHandler { [weak self] in self?.drainBus() }
        if watched >= 0 { source.setCancelHandler { close(watched) } }
        source.resume()
        busSource = source

        let handoffPointer = Unmanaged.passRetained(handoff).toOpaque()
        handlers = [
            cshims_connect_element_signal(element, "about-to-finish", aboutToFinishThunk, handoffPointer, releaseHandoffThunk),
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
    func load(_ uri: String, state: State, number: Int, fresh: Bool, loudness: LoudnessPlan? = nil) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.tearDown(playbin, fresh: fresh)
            pipeline.handoff.loaded(loudness: loudness)
            pipeline.loadNumber = number
            pipeline.loadedURI = uri
            pipeline.wantsElements = true
            cshims_object_set_string(playbin, "uri", uri)
            pipeline.change(playbin, to: state)
        }
    }

    /// Takes down what is loaded (see ``load(_:state:number:fresh:)``).
    func unload(number: Int, fresh: Bool) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.tearDown(playbin, fresh: fresh)
            pipeline.loadNumber = number
            pipeline.loadedURI = nil
        }
    }

    /// Moves the loaded stream to `state`; ``Event/stateChangeFailed(_:)`` when refused.
    func setState(_ state: State) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.change(playbin, to: state)
        }
    }

    /// A flushing, accurate seek that also sets the playback rate; it completes with the next
    /// ``Event/asyncDone(_:)``, or is reported refused.
    func seek(to position: Duration, rate: Double) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
            let start = gint64(position.nanoseconds)
            let accepted = gst_element_seek(playbin, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, start, GST_SEEK_TYPE_NONE, -1) != 0
            if !accepted { pipeline.post(.seekRefused(position)) }
        }
    }

    /// What follows the loaded stream, for a gapless switch (nil: nothing, let it end). In
    /// order with the loads: a stream about to be taken down never takes it.
    func prepareNext(_ item: GaplessHandoff.Item?) {
        queue.async { [self] in
            guard !control.withLock({ $0.retired }) else { return }
            handoff.prepare(item)
        }
    }

    /// Sets the volume, on the cubic scale of desktop mixers (0...1).
    func setVolume(_ volume: Double) {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            cshims_object_set_double(playbin, "volume", Self.linear(volume))
        }
    }

    /// Asks where the stream is; the answer comes as ``Event/position(_:)``.
    func queryPosition() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            let at = ContinuousClock.now
            pipeline.post(.position(Self.position(of: playbin), at: at))
        }
    }

    /// How many bytes the sources have sent on so far, over every URI loaded: a stream whose
    /// count grows is receiving data, however long its decoders take to make audio of it.
    /// Reads a counter, never the playbin: it never waits.
    var bytesFromSources: UInt64 { cshims_byte_counter_read(sourceBytes) }

    deinit {
        cshims_byte_counter_unref(sourceBytes)
        // Released already, or never built: nothing to free. Otherwise the playbin goes on a
        // queue of its own, never on the thread that dropped the pipeline (the main actor).
        guard let playbin else { return }
        busSource?.cancel()
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
    func describeElements() {
        run { pipeline in
            guard let playbin = pipeline.playbin else { return }
            pipeline.post(.elements(GStreamer.factoryNames(inBin: playbin)))
        }
    }

    /// Lets go of the pipeline: nothing more is reported, commands still queued are skipped,
    /// and the playbin is freed on the pipeline's queue, once GStreamer lets go of it after a
    /// stuck call. `freed` is called (on the main actor) when it is.
    func release(freed: (@MainActor @Sendable () -> Void)? = nil) {
        control.withLock { $0.retired = true }
        queue.async { [self] in
            busSource?.cancel()
            busSource = nil
            if let playbin {
                for handler in handlers where handler != 0 { cshims_disconnect(playbin, handler) }
                gst_element_set_state(playbin, GST_STATE_NULL)
                gst_object_unref(playbin)
            }
            if let bus { gst_object_unref(bus) }
            playbin = nil
            bus = nil
            if let freed { DispatchQueue.main.async { MainActor.assumeIsolated(freed) } }
        }
    }

    /// Runs `body` on the queue under the watchdog: should it not return within `stuckLimit`,
    /// ``Event/stuck`` is reported once.
    private func run(_ body: @escaping @Sendable (Pipeline) -> Void) {
        queue.async { [self] in
            let job: UInt64? = control.withLock { control in
                guard !control.retired, !control.stuck else { return nil }
                control.nextJob += 1
                control.running = control.nextJob
                return control.nextJob
            }
            guard let job else { return }
            // A timer cancelled when the call returns, so that an idle pipeline wakes nobody.
            let watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
            watchdog.schedule(deadline: .now() + stuckLimit.dispatchInterval)
            watchdog.setEventHandler { [weak self] in self?.checkProgress(of: job) }
            watchdog.resume()
            body(self)
            watchdog.cancel()
            control.withLock { $0.running = nil }
        }
    }

    private func checkProgress(of job: UInt64) {
        let stuck = control.withLock { control -> Bool in
            guard control.running == job, !control.stuck else { return false }
            control.stuck = true
            return !control.retired
        }
        if stuck { deliver(Delivery(load: loadNumberForWatchdog, event: .stuck)) }
    }

    /// The watchdog reports a stuck pipeline whatever load it was at.
    private var loadNumberForWatchdog: Int { .max }

    /// Reports an event from a streaming thread, outside the order of the bus and of any load.
    private func postFromStream(_ event: Event) {
        let silenced = control.withLock { $0.retired || $0.stuck }
        guard !silenced else { return }
        deliver(Delivery(load: loadNumberForWatchdog, event: event))
    }

    func post(_ event: Event) {
        let silenced = control.withLock { $0.retired || $0.stuck }
        guard !silenced else { return }
        deliver(Delivery(load: loadNumber, event: event))
    }

    private func tearDown(_ playbin: UnsafeMutablePointer<GstElement>, fresh: Bool) {
        gst_element_set_state(playbin, fresh ? GST_STATE_NULL : GST_STATE_READY)
        handoff.reset()
        loudness?.reset()
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

extension Pipeline {
    /// Whether an element path names the audio output: a sink (`GstPulseSink:…`,
    /// `GstAlsaSink:…`, a file sink) inside playbin's sink bin or the `audio-sink` given.
    /// A converter in front of it failing is the track's problem (a format it cannot take),
    /// not the output's.
    static func isOutput(_ source: String) -> Bool {
        let element = source.split(separator: "/").last.map { $0.prefix { $0 != ":" } } ?? ""
        return element.hasSuffix("Sink") && (source.contains("/GstPlaySink:") || source.contains(":quaver-audio-sink"))
    }

    /// What the log says of an error: GStreamer's message and, for a network source, the
    /// cause its debug string ends with ("Could not connect: Connection refused"), which the
    /// message ("Could not establish connection to server.") leaves out.
    static func reason(_ message: String, debug: String?, source: String) -> String {
        let element = source.split(separator: "/").last.map { $0.prefix { $0 != ":" } } ?? ""
        guard element.lowercased().hasSuffix("httpsrc"),
            let detail = debug?.split(separator: "\n").last?.trimmingSpaces(),
            !detail.isEmpty, detail.count <= 200,
            !detail.hasPrefix(message.trimming(while: \.isPunctuation))
        else { return message }
        return "\(message) (\(detail))"
    }
}

private let aboutToFinishThunk: cshims_element_callback = { element, data in
    guard let element, let data else { return }
    let handoff = Unmanaged<GaplessHandoff>.fromOpaque(data).takeUnretainedValue()
    if let uri = handoff.commit() {
        cshims_object_set_string(element, "uri", uri)
        let message = gst_message_new_application(
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self), gst_structure_new_empty(nextURITakenMessage))
        gst_element_post_message(element, message)
    }
}

/// The name of the application message that becomes `Pipeline.Event.nextURITaken`.
let nextURITakenMessage = "quaver-next-uri-taken"

private let releaseHandoffThunk: GClosureNotify = { data, _ in
    guard let data else { return }
    Unmanaged<GaplessHandoff>.fromOpaque(data).release()
}

extension OpaquePointer {
    var gObject: UnsafeMutablePointer<GObject> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GObject.self) }
    var bin: UnsafeMutablePointer<GstBin> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstBin.self) }
    var object: UnsafeMutablePointer<GstObject> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstObject.self) }
}

extension Duration {
    /// `m:ss` (`1:05`), as log lines give a place in a track.
    public var clock: String {
        let seconds = max(Int(components.seconds), 0)
        return "\(seconds / 60):" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)"
    }

    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The same length as Dispatch takes it (a deadline's offset, a timeout).
    var dispatchInterval: DispatchTimeInterval { .nanoseconds(Int(nanoseconds)) }
}
