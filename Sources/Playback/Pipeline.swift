internal import CGStreamer
internal import CShims
import Dispatch
import Glibc

/// Starts GStreamer once per process. Safe to call repeatedly, from any thread.
public enum GStreamer {
    private static let started: Void = gst_init(nil, nil)

    public static func initialize() { _ = started }

    /// The GStreamer version in use, e.g. "1.22.0".
    public static var version: String {
        initialize()
        guard let raw = gst_version_string() else { return "unknown" }
        defer { g_free(raw) }
        return String(cString: raw)
    }

    /// Whether an element factory (a decoder, a demuxer, a sink) is installed.
    public static func hasElement(_ factoryName: String) -> Bool {
        initialize()
        guard let factory = gst_element_factory_find(factoryName) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(factory))
        return true
    }

    /// What an audio sink description (nil: the system output) opens to: the factory names
    /// of the elements it ends up with once READY (for `autoaudiosink`, the sink it chose),
    /// or why it cannot open.
    public static func probeAudioOutput(_ description: String?) -> Result<[String], MediaError> {
        initialize()
        let sink: UnsafeMutablePointer<GstElement>
        if let description {
            var error: UnsafeMutablePointer<GError>?
            guard let parsed = gst_parse_bin_from_description(description, 1, &error) else {
                let reason = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
                if let error { g_error_free(error) }
                return .failure(MediaError("'\(description)' is not a valid sink: \(reason)"))
            }
            sink = UnsafeMutableRawPointer(parsed).assumingMemoryBound(to: GstElement.self)
        } else {
            guard let auto = gst_element_factory_make("autoaudiosink", nil) else {
                return .failure(MediaError("the element 'autoaudiosink' is missing (install gstreamer1.0-plugins-good)"))
            }
            sink = auto
        }
        gst_object_ref_sink(sink)
        defer {
            gst_element_set_state(sink, GST_STATE_NULL)
            gst_object_unref(sink)
        }
        guard gst_element_set_state(sink, GST_STATE_READY) != GST_STATE_CHANGE_FAILURE else {
            return .failure(MediaError("the sink could not open its device or server"))
        }
        return .success(factoryNames(inBin: sink))
    }

    /// The factory names of the elements in a bin, recursively.
    static func factoryNames(inBin bin: UnsafeMutablePointer<GstElement>) -> [String] {
        var names: [String] = []
        guard let iterator = gst_bin_iterate_recurse(OpaquePointer(bin).bin) else { return names }
        defer { gst_iterator_free(iterator) }
        var value = GValue()
        while gst_iterator_next(iterator, &value) == GST_ITERATOR_OK {
            if let object = g_value_get_object(&value) {
                let element = object.assumingMemoryBound(to: GstElement.self)
                if let factory = gst_element_get_factory(element), let name = cshims_object_name(UnsafeMutableRawPointer(factory)) {
                    names.append(String(cString: name))
                }
            }
            g_value_reset(&value)
        }
        g_value_unset(&value)
        return names
    }
}

/// The next URI for gapless playback, prepared by the main actor and read by GStreamer's
/// `about-to-finish` handler on a streaming thread. The lock is the only shared state.
final class GaplessHandoff: Sendable {
    struct Item: Sendable, Equatable {
        var entryID: UInt64
        var uri: String
    }
    private struct State {
        var prepared: Item?
        var committed: Item?
    }
    private let state = Locked(State())

    /// Main actor: what should follow the current stream (nil: nothing, let it end).
    func prepare(_ item: Item?) { state.withLock { $0.prepared = item } }

    /// Streaming thread: hands over the prepared URI and remembers it was handed over.
    func commit() -> String? {
        state.withLock { state in
            guard let item = state.prepared else { return nil }
            state.committed = item
            state.prepared = nil
            return item.uri
        }
    }

    /// Main actor, on stream start: the item that playbin switched to gaplessly, if any.
    func takeCommitted() -> Item? {
        state.withLock { state in
            defer { state.committed = nil }
            return state.committed
        }
    }

    /// Main actor: whether playbin already took the prepared URI and has not started it yet.
    var hasCommitted: Bool { state.withLock { $0.committed != nil } }

    /// Main actor: the entry whose URI playbin took and has not started yet.
    var committedEntryID: UInt64? { state.withLock { $0.committed?.entryID } }

    /// Main actor: forget everything (a new track is loaded by hand).
    func reset() { state.withLock { $0 = State() } }
}

/// A GStreamer `playbin` configured for audio only, whose bus messages arrive on the main
/// queue through a dispatch source on the bus's file descriptor (nothing polls).
@MainActor
final class Pipeline {
    enum State: Int, Sendable, Comparable {
        case voidPending = 0, null, ready, paused, playing
        static func < (a: State, b: State) -> Bool { a.rawValue < b.rawValue }
        init(_ state: GstState) { self = State(rawValue: Int(state.rawValue)) ?? .voidPending }
        var gst: GstState { GstState(rawValue: UInt32(rawValue)) }
    }

    enum Event: Sendable {
        /// The whole pipeline's state changed (not one of its elements').
        case stateChanged(old: State, new: State, pending: State)
        case asyncDone
        case endOfStream
        /// `source` is the path of the element that failed, e.g.
        /// `/GstPlayBin:quaver-playbin/GstURIDecodeBin:uridecodebin1/GstSoupHTTPSrc:source`.
        /// `inOutput`: the audio output failed (the sound server went away, the device was
        /// removed), not the track.
        case error(message: String, debug: String?, source: String, inOutput: Bool)
        case warning(message: String, source: String)
        case streamStart
        case durationChanged
        case buffering(percent: Int)
        case clockLost
        /// An element asks the application to change the pipeline's state: the sound server
        /// corks the stream (PAUSED) for a call or an alarm, and uncorks it (PLAYING) after.
        case requestState(State)
        /// The output's volume changed: a mixer changed the stream's volume on the sound
        /// server, or Quaver did (`outputVolume` says what it is now).
        case outputVolumeChanged
        /// Tags reached the sink (what is heard now): a stream's ICY title, a file's own tags.
        /// Lists with nothing a listener sees (a bit rate, a codec) are not reported.
        case tags(StreamTags)
        /// playbin took the prepared next URI (`about-to-finish`): it starts once the current
        /// stream ends. Posted from the streaming thread, so it arrives in order with the rest.
        case nextURITaken
    }

    enum StateChange {
        case success, async, noPreroll, failure
        /// GStreamer did not return within `stuckLimit`: the pipeline is stuck for good
        /// (`isStuck`), and must be replaced.
        case stuck
    }

    private let playbin: UnsafeMutablePointer<GstElement>
    private let bus: UnsafeMutablePointer<GstBus>
    private var busSource: (any DispatchSourceRead)?
    let handoff = GaplessHandoff()
    private var aboutToFinishHandler: gulong = 0
    private var volumeHandler: gulong = 0
    var onEvent: (@MainActor (Event) -> Void)?

    /// Where every call into the playbin runs (state changes, seeks, queries, properties),
    /// so that the main actor waits for one at most `stuckLimit`. GStreamer 1.22's playbin2
    /// can deadlock, in a state change or in a streaming thread that then holds playbin's
    /// lock for good (README, "Known limits"); a daemon waiting for that would stop answering.
    private let worker = DispatchQueue(label: "quaver.pipeline")
    /// How long a call into the playbin may take before the pipeline counts as stuck.
    let stuckLimit: Duration
    /// A call into GStreamer did not return within `stuckLimit`. Every call after it is a
    /// no-op (queries answer nil): the stuck one may hold locks that any of them would wait
    /// for. The pipeline is freed once that call returns, if it ever does.
    private(set) var isStuck = false
    /// Told (on the main queue, after the call that found it) that the pipeline got stuck.
    var onStuck: (@MainActor () -> Void)?
    /// The last position a query answered: where a stuck pipeline's stream was.
    private(set) var lastPosition: Duration?

    struct SetupError: Error, CustomStringConvertible {
        var description: String
    }

    /// - Parameter audioSink: a GStreamer bin description (`fakesink sync=true`), or nil for
    ///   the system's audio output (`autoaudiosink`, which falls back to a null sink).
    /// - Parameter stuckLimit: how long any call into the playbin may take (see `isStuck`).
    init(audioSink: String?, stuckLimit: Duration = .seconds(3)) throws(SetupError) {
        GStreamer.initialize()
        self.stuckLimit = stuckLimit
        guard let element = gst_element_factory_make("playbin", "quaver-playbin") else {
            throw SetupError(description: "the GStreamer element 'playbin' is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(element)
        playbin = element
        // Audio only: video and subtitle streams are never shown (the flags) nor decoded (the
        // decoders are skipped when decodebin picks them).
        gst_util_set_object_arg(OpaquePointer(element).gObject, "flags", "audio+soft-volume")
        cshims_playbin_decode_audio_only(element)
        // playsink's queue in front of the audio sink holds a second of decoded audio by
        // default, refilled after every seek; a fifth of a second is ample ahead of a sink
        // that buffers on its own, and makes each seek decode less.
        cshims_playbin_limit_audio_queue(element, 200_000_000)

        if let scaletempo = gst_element_factory_make("scaletempo", nil) {
            cshims_object_set_object(element, "audio-filter", scaletempo)  // keeps pitch when the rate changes
        }
        let sink: UnsafeMutablePointer<GstElement>?
        if let audioSink {
            var error: UnsafeMutablePointer<GError>?
            sink = gst_parse_bin_from_description(audioSink, 1, &error).map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: GstElement.self) }
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

        bus = gst_element_get_bus(element)
        var pollFD = GPollFD()
        gst_bus_get_pollfd(bus, &pollFD)
        // The source watches a duplicate that only its cancellation closes: the bus closes its
        // own descriptor when the pipeline goes, and a new pipeline can get the same number
        // before the old source is unregistered, which would leave the new one deaf.
        let watched = dup(pollFD.fd)
        let source = DispatchSource.makeReadSource(fileDescriptor: watched >= 0 ? watched : pollFD.fd, queue: .main)
        source.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.drainBus() }
        }
        if watched >= 0 { source.setCancelHandler { close(watched) } }
        source.resume()
        busSource = source

        let handoffPointer = Unmanaged.passRetained(handoff).toOpaque()
        aboutToFinishHandler = cshims_connect_element_signal(
            element, "about-to-finish", aboutToFinishThunk, handoffPointer, releaseHandoffThunk)
        volumeHandler = cshims_playbin_watch_volume(element)
    }

    static let streamProperties =
        "props, media.role=(string)music, application.name=(string)Quaver, application.id=(string)quaver, application.icon_name=(string)quaver"

    isolated deinit {
        busSource?.cancel()
        let parts = Parts(playbin: playbin, bus: bus, handlers: [aboutToFinishHandler, volumeHandler])
        let freed = DispatchSemaphore(value: 0)
        // After a stuck call this waits behind it on the worker: the pipeline is freed when
        // GStreamer lets go of it, and never while it holds it.
        worker.async {
            for handler in parts.handlers where handler != 0 { cshims_disconnect(parts.playbin, handler) }
            gst_element_set_state(parts.playbin, GST_STATE_NULL)
            gst_object_unref(parts.bus)
            gst_object_unref(parts.playbin)
            freed.signal()
        }
        if !isStuck { _ = freed.wait(timeout: .now() + stuckLimit.dispatchInterval) }
    }

    /// What a pipeline is made of, handed to its worker to be freed.
    private struct Parts: @unchecked Sendable {
        let playbin: UnsafeMutablePointer<GstElement>
        let bus: UnsafeMutablePointer<GstBus>
        let handlers: [gulong]
    }

    /// The playbin, for a call made on the worker.
    private struct Element: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<GstElement>
    }

    /// Runs `call` on the worker and waits for it at most `stuckLimit`; nil when it did not
    /// return by then (the pipeline is stuck from then on) or the pipeline was stuck already.
    @discardableResult
    private func guarded<Result: Sendable>(_ call: @escaping @Sendable (UnsafeMutablePointer<GstElement>) -> Result) -> Result? {
        guard !isStuck else { return nil }
        let element = Element(pointer: playbin)
        let outcome = Locked<Result?>(nil)
        let returned = DispatchSemaphore(value: 0)
        worker.async {
            let result = call(element.pointer)
            outcome.withLock { $0 = result }
            returned.signal()
        }
        guard returned.wait(timeout: .now() + stuckLimit.dispatchInterval) == .success else {
            isStuck = true
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated { self?.onStuck?() }
            }
            return nil
        }
        return outcome.withLock { $0 }
    }

    /// Calls `body` on the main actor once the stuck call returns (never, should it not).
    func whenLetGo(_ body: @escaping @MainActor @Sendable () -> Void) {
        worker.async { DispatchQueue.main.async { MainActor.assumeIsolated(body) } }
    }

    // MARK: Control

    var uri: String? {
        didSet {
            let uri = uri
            guarded { cshims_object_set_string($0, "uri", uri) }
        }
    }

    @discardableResult
    func setState(_ state: State) -> StateChange {
        let target = state.gst
        guard let result = guarded({ gst_element_set_state($0, target) }) else { return .stuck }
        switch result {
        case GST_STATE_CHANGE_SUCCESS: return .success
        case GST_STATE_CHANGE_ASYNC: return .async
        case GST_STATE_CHANGE_NO_PREROLL: return .noPreroll
        default: return .failure
        }
    }

    /// The state reached and the one pending, without waiting.
    var currentState: (current: State, pending: State) {
        let states = guarded { element in
            var current = GST_STATE_VOID_PENDING
            var pending = GST_STATE_VOID_PENDING
            gst_element_get_state(element, &current, &pending, 0)
            return (State(current), State(pending))
        }
        return states ?? (.voidPending, .voidPending)
    }

    enum SeekResult { case started, refused, stuck }

    /// A flushing, accurate seek that also sets the playback rate; it completes with the
    /// next ASYNC_DONE.
    func seek(to position: Duration, rate: Double) -> SeekResult {
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        let start = gint64(position.nanoseconds)
        let accepted = guarded {
            gst_element_seek($0, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, start, GST_SEEK_TYPE_NONE, -1) != 0
        }
        guard let accepted else { return .stuck }
        return accepted ? .started : .refused
    }

    var position: Duration? {
        let answer = guarded { element -> Int64? in
            var value: gint64 = -1
            return gst_element_query_position(element, GST_FORMAT_TIME, &value) != 0 && value >= 0 ? Int64(value) : nil
        }
        guard let nanoseconds = answer ?? nil else { return nil }
        lastPosition = .nanoseconds(nanoseconds)
        return lastPosition
    }

    var duration: Duration? {
        let answer = guarded { element -> Int64? in
            var value: gint64 = -1
            return gst_element_query_duration(element, GST_FORMAT_TIME, &value) != 0 && value > 0 ? Int64(value) : nil
        }
        return (answer ?? nil).map { .nanoseconds($0) }
    }

    /// Whether the current stream can seek (false for live streams).
    var isSeekable: Bool {
        let answer = guarded { element -> Bool in
            guard let query = gst_query_new_seeking(GST_FORMAT_TIME) else { return false }
            defer { gst_query_unref(query) }
            guard gst_element_query(element, query) != 0 else { return false }
            var seekable: gboolean = 0
            gst_query_parse_seeking(query, nil, &seekable, nil, nil)
            return seekable != 0
        }
        return answer ?? false
    }

    /// Volume on the cubic scale used by PulseAudio and desktop mixers (0...1).
    var volume: Double = 1 {
        didSet {
            let linear = gst_stream_volume_convert_volume(GST_STREAM_VOLUME_FORMAT_CUBIC, GST_STREAM_VOLUME_FORMAT_LINEAR, volume)
            guarded { cshims_object_set_double($0, "volume", linear) }
        }
    }

    /// The volume the output has now, on the same cubic scale: where the sink has a volume of
    /// its own (pulsesink, pipewiresink), the stream's volume on the sound server, which a
    /// mixer may have changed; otherwise the one last set.
    var outputVolume: Double {
        guard let linear = guarded({ cshims_object_get_double($0, "volume") }) else { return volume }
        return gst_stream_volume_convert_volume(GST_STREAM_VOLUME_FORMAT_LINEAR, GST_STREAM_VOLUME_FORMAT_CUBIC, linear)
    }

    /// The names of the elements inside the pipeline, recursively (for tests and doctor).
    var elementFactoryNames: [String] { guarded { GStreamer.factoryNames(inBin: $0) } ?? [] }

    // MARK: Bus

    /// Drops the messages still queued: after a reload they describe the stream before it
    /// (a second error of a failure already handled, say).
    func discardQueuedMessages() {
        gst_bus_set_flushing(bus, 1)
        gst_bus_set_flushing(bus, 0)
    }

    /// Handles the messages queued on the bus now, before returning (after a state change
    /// failed at once: the error queued says why).
    func drainBus() {
        while let message = gst_bus_pop(bus) {
            let event = translate(message)
            gst_message_unref(message)
            if let event { onEvent?(event) }
        }
    }

    private func translate(_ message: UnsafeMutablePointer<GstMessage>) -> Event? {
        let fromPipeline = cshims_message_source(message) == UnsafeMutableRawPointer(playbin)
        switch message.pointee.type {
        case GST_MESSAGE_STATE_CHANGED:
            guard fromPipeline else { return nil }
            var old = GST_STATE_VOID_PENDING, new = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(message, &old, &new, &pending)
            return .stateChanged(old: State(old), new: State(new), pending: State(pending))
        case GST_MESSAGE_ASYNC_DONE:
            return fromPipeline ? .asyncDone : nil
        case GST_MESSAGE_EOS:
            return .endOfStream
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            defer {
                if let error { g_error_free(error) }
                g_free(debug)
            }
            var source = "?"
            if let object = cshims_message_source(message), let path = gst_object_get_path_string(object.assumingMemoryBound(to: GstObject.self)) {
                source = String(cString: path)
                g_free(path)
            }
            return .error(
                message: error.map { String(cString: $0.pointee.message) } ?? "unknown error",
                debug: debug.map { String(cString: $0) }, source: source, inOutput: Self.isOutput(source))
        case GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_warning(message, &error, &debug)
            defer {
                if let error { g_error_free(error) }
                g_free(debug)
            }
            let source = cshims_message_source(message).flatMap { cshims_object_name($0) }.map { String(cString: $0) } ?? "?"
            return .warning(message: error.map { String(cString: $0.pointee.message) } ?? "unknown warning", source: source)
        case GST_MESSAGE_STREAM_START:
            return .streamStart
        case GST_MESSAGE_DURATION_CHANGED:
            return .durationChanged
        case GST_MESSAGE_BUFFERING:
            // A queue of a stream already taken out of the pipeline can still report (0%, as it
            // is reset): that is no reason to pause what plays now.
            guard let source = cshims_message_source(message),
                gst_object_has_as_ancestor(source.assumingMemoryBound(to: GstObject.self), OpaquePointer(playbin).object) != 0
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
            defer { gst_tag_list_unref(list) }
            let tags = StreamTags(list)
            return tags.isEmpty ? nil : .tags(tags)
        case GST_MESSAGE_APPLICATION:
            if cshims_message_is_application(message, CSHIMS_VOLUME_CHANGED_MESSAGE) != 0 { return .outputVolumeChanged }
            if cshims_message_is_application(message, nextURITakenMessage) != 0 { return .nextURITaken }
            return nil
        default:
            return nil
        }
    }
}

extension Pipeline {
    /// Whether an element path names the audio output: a sink (`GstPulseSink:…`,
    /// `GstAlsaSink:…`, a file sink) inside playbin's sink bin or the `audio-sink` given.
    /// A converter in front of it failing is the track's problem (a format it cannot take),
    /// not the output's.
    nonisolated static func isOutput(_ source: String) -> Bool {
        let element = source.split(separator: "/").last.map { $0.prefix { $0 != ":" } } ?? ""
        return element.hasSuffix("Sink") && (source.contains("/GstPlaySink:") || source.contains(":quaver-audio-sink"))
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
private let nextURITakenMessage = "quaver-next-uri-taken"

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
