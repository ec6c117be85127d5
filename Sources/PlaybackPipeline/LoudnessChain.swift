internal import CGStreamer
internal import CGStreamerShims
import Media
import PlaybackVocabulary

/// The audio filter playbin plays through: ReplayGain's `rgvolume` (and `rglimiter`, when
/// gains are limited rather than lowered to the peak) in front of `scaletempo`, and
/// `rganalysis` on a branch that only listens.
///
/// ```
/// tee ! audioconvert ! rgvolume [! rglimiter] ! audioconvert ! capsfilter ! scaletempo
/// tee ! audioconvert ! audioresample ! rganalysis   (its output unlinked)
/// ```
///
/// rglimiter takes only floats, and turning every sample into a float and back took about a
/// quarter of the CPU GStreamer itself spends playing a FLAC: a chain is made with it only
/// for plans that limit (``hasLimiter``); without it, rgvolume takes 16-bit samples as they
/// come. The samples leave the chain in the format they came in, when scaletempo takes it
/// (the capsfilter is set as each stream's caps arrive), converted back without dither: at
/// 0 dB a 16-bit track leaves it bit for bit as it came, and no converter after it adds noise.
///
/// Each stream's gain is set when it starts, in the streaming thread, before its first
/// sample: its plan (from ``GaplessHandoff``) sets `rgvolume`'s mode, preamp and headroom,
/// and hands it all four ReplayGain values, so that nothing of the previous stream's tags
/// applies (rgvolume keeps tags until an EOS, and a gapless switch sends none). The stream's
/// own ReplayGain tags follow with the same values, except when loudness is off, when they
/// are taken out.
///
/// The branch decodes nothing: it sees the buffers the tee hands it, in the same thread,
/// and drops them before any work unless the stream is to be measured. `rganalysis` takes
/// only mono or stereo at the usual rates, hence the converters (passthrough for most
/// files). It reports a track's gain at EOS: at a gapless switch, the chain sends the branch
/// an EOS of its own before the next stream starts. A stream that was seeked in is not
/// measured whole, and its result is dropped.
final class LoudnessChain: @unchecked Sendable {
    /// The filter bin, floating until playbin takes it.
    let bin: UnsafeMutablePointer<GstElement>
    // Borrowed: the bin holds them as long as the chain is used.
    private let volume: UnsafeMutablePointer<GstElement>
    private let limiter: UnsafeMutablePointer<GstElement>?
    private let formatFilter: UnsafeMutablePointer<GstElement>
    private let volumeSink: UnsafeMutablePointer<GstPad>
    private let measureSink: UnsafeMutablePointer<GstPad>
    private let handoff: GaplessHandoff
    private let report: @Sendable (Pipeline.Event) -> Void
    private let state = Locked(State())

    private struct State {
        /// What the stream playing now was given.
        var current: LoudnessPlan?
        /// The file the branch measures now.
        var measuring: TrackSignature?
        /// The stream was seeked in: its measurement is not of the whole track.
        var spoiled = false
        /// A stream has started in the branch since the pipeline left READY (before that,
        /// an EOS would come before any stream).
        var branchStarted = false
        /// The sample format the chain hands on (`S16LE`), as the capsfilter is set.
        var outputFormat: String?
    }

    /// Whether the chain has `rglimiter`, so that a plan that limits (``LoudnessPlan/limiter``)
    /// can play through it.
    var hasLimiter: Bool { limiter != nil }

    /// Builds the chain, with `rglimiter` when `limiter`; nil when an element is missing
    /// (gstreamer1.0-plugins-good), and playbin then plays through scaletempo alone.
    static func make(
        handoff: GaplessHandoff, limiter withLimiter: Bool, report: @escaping @Sendable (Pipeline.Event) -> Void
    ) -> LoudnessChain? {
        let limiting = withLimiter ? "! rglimiter name=loudness-limiter enabled=false " : ""
        let description = """
            tee name=loudness-split allow-not-linked=true ! audioconvert ! rgvolume name=loudness-volume \
            \(limiting)! audioconvert dithering=none ! capsfilter name=loudness-format \
            ! scaletempo name=loudness-tempo \
            loudness-split. ! audioconvert name=loudness-measure ! audioresample ! rganalysis name=loudness-analysis
            """
        // The chain is optional: why it cannot be made (a missing element) is not worth a line.
        guard let parsed = GStreamerError.catching({ gst_parse_bin_from_description(description, 0, &$0) }).value
        else { return nil }
        let bin = UnsafeMutableRawPointer(parsed).assumingMemoryBound(to: GstElement.self)
        func element(_ name: String) -> UnsafeMutablePointer<GstElement>? {
            guard let found = gst_bin_get_by_name(OpaquePointer(bin).bin, name) else { return nil }
            gst_object_unref(found)  // the bin keeps it
            return found
        }
        func pad(_ element: UnsafeMutablePointer<GstElement>?, _ name: String) -> UnsafeMutablePointer<GstPad>? {
            guard let element, let pad = gst_element_get_static_pad(element, name) else { return nil }
            gst_object_unref(pad)  // its element keeps it
            return pad
        }
        let limiter = element("loudness-limiter")
        guard let volume = element("loudness-volume"), limiter != nil || !withLimiter,
            let format = element("loudness-format"), let output = pad(element("loudness-tempo"), "src"),
            let split = pad(element("loudness-split"), "sink"), let volumeSink = pad(volume, "sink"),
            let measureSink = pad(element("loudness-measure"), "sink"),
            let analysed = pad(element("loudness-analysis"), "src")
        else {
            gst_object_unref(bin)
            return nil
        }
        gst_element_add_pad(bin, gst_ghost_pad_new("sink", split))
        gst_element_add_pad(bin, gst_ghost_pad_new("src", output))
        let chain = LoudnessChain(
            bin: bin, volume: volume, limiter: limiter, formatFilter: format, volumeSink: volumeSink,
            measureSink: measureSink, handoff: handoff,
            report: report)
        // Each probe holds the chain until the bin lets go of the probe.
        func retained() -> UnsafeMutableRawPointer { Unmanaged.passRetained(chain).toOpaque() }
        gst_pad_add_probe(split, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, streamEventProbe, retained(), releaseChain)
        gst_pad_add_probe(measureSink, GST_PAD_PROBE_TYPE_BUFFER, measureBufferProbe, retained(), releaseChain)
        gst_pad_add_probe(analysed, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, resultProbe, retained(), releaseChain)
        return chain
    }

    private init(
        bin: UnsafeMutablePointer<GstElement>, volume: UnsafeMutablePointer<GstElement>,
        limiter: UnsafeMutablePointer<GstElement>?,
        formatFilter: UnsafeMutablePointer<GstElement>, volumeSink: UnsafeMutablePointer<GstPad>,
        measureSink: UnsafeMutablePointer<GstPad>, handoff: GaplessHandoff,
        report: @escaping @Sendable (Pipeline.Event) -> Void
    ) {
        self.bin = bin
        self.volume = volume
        self.limiter = limiter
        self.formatFilter = formatFilter
        self.volumeSink = volumeSink
        self.measureSink = measureSink
        self.handoff = handoff
        self.report = report
    }

    /// Pipeline queue, after the pipeline went to READY or NULL: no stream is under way.
    func reset() {
        state.withLock { $0 = State() }
    }

    // MARK: - Streaming thread

    fileprivate func streamEvent(_ event: UnsafeMutablePointer<GstEvent>, info: UnsafeMutablePointer<GstPadProbeInfo>) {
        switch event.pointee.type {
        case GST_EVENT_STREAM_START:
            streamStarts()
        case GST_EVENT_EOS:
            // The branch hears the end first: the tee hands the EOS to the output before the
            // branch, and the output's end can stop Quaver before the measurement is reported.
            finishMeasurement()
        case GST_EVENT_FLUSH_START:
            state.withLock { $0.spoiled = true }
        case GST_EVENT_CAPS:
            keepFormat(of: event)
        case GST_EVENT_TAG:
            guard state.withLock({ $0.current?.ignoresStreamTags ?? false }) else { return }
            if let stripped = cshims_tag_event_without_replaygain(event) {
                info.pointee.data = UnsafeMutableRawPointer(stripped)
                gst_mini_object_unref(OpaquePointer(event).miniObject)
            }
        default:
            break
        }
    }

    /// Ends the measurement under way: the branch's own EOS makes rganalysis report it (see
    /// `result`) and start afresh. Outside the lock: the report comes back through the
    /// result probe, in this thread.
    private func finishMeasurement() {
        if state.withLock({ $0.branchStarted }) {
            gst_pad_send_event(measureSink, gst_event_new_eos())
        }
    }

    private func streamStarts() {
        // The stream that ends is measured to its last sample.
        finishMeasurement()
        let (known, given) = handoff.streamStarts()
        let plan = given ?? Loudness.neutralPlan
        state.withLock { state in
            state.branchStarted = true
            state.spoiled = false
            if known { state.current = plan }
            state.measuring = state.current?.measure
        }
        guard known else { return }
        cshims_object_set_boolean(volume, "album-mode", plan.albumMode ? 1 : 0)
        cshims_object_set_double(volume, "pre-amp", plan.preamp)
        cshims_object_set_double(volume, "headroom", plan.headroom)
        if let limiter { cshims_object_set_boolean(limiter, "enabled", plan.limiter ? 1 : 0) }
        if let tags = cshims_replaygain_tags(plan.trackGain, plan.trackPeak, plan.albumGain, plan.albumPeak) {
            // rgvolume takes every value it finds and drops the event: nothing goes downstream.
            gst_pad_send_event(volumeSink, gst_event_new_tag(tags))
        }
        // A stream given no plan is not the player's to log.
        if given != nil { report(.loudnessApplied(plan, gain: cshims_object_get_double(volume, "result-gain"))) }
    }

    /// Sets the capsfilter to the format of the caps arriving, before they reach the
    /// converters, so that they negotiate the way back to it.
    private func keepFormat(of event: UnsafeMutablePointer<GstEvent>) {
        var caps: UnsafeMutablePointer<GstCaps>?
        gst_event_parse_caps(event, &caps)
        guard let caps, gst_caps_get_size(caps) > 0, let structure = gst_caps_get_structure(caps, 0),
            let name = gst_structure_get_string(structure, "format")
        else { return }
        // scaletempo takes these three; anything else leaves the chain as floats, for the
        // converter after it.
        let given = String(cString: name)
        let format = ["S16LE", "F32LE", "F64LE"].contains(given) ? given : "F32LE"
        let changed = state.withLock { state -> Bool in
            defer { state.outputFormat = format }
            return state.outputFormat != format
        }
        if changed {
            gst_util_set_object_arg(OpaquePointer(formatFilter).gObject, "caps", "audio/x-raw,format=\(format)")
        }
    }

    fileprivate func shouldMeasureBuffer() -> Bool {
        state.withLock { $0.measuring != nil && !$0.spoiled }
    }

    fileprivate func result(_ event: UnsafeMutablePointer<GstEvent>) {
        guard event.pointee.type == GST_EVENT_TAG else { return }
        var list: UnsafeMutablePointer<GstTagList>?
        gst_event_parse_tag(event, &list)
        guard let list else { return }
        var gain = 0.0
        var peak = 0.0
        guard gst_tag_list_get_double(list, GST_TAG_TRACK_GAIN, &gain) != 0,
            gst_tag_list_get_double(list, GST_TAG_TRACK_PEAK, &peak) != 0
        else { return }
        let measured = state.withLock { state -> TrackSignature? in
            defer { state.measuring = nil }
            return state.spoiled ? nil : state.measuring
        }
        if let measured { report(.loudnessMeasured(measured, MeasuredGain(gain: gain, peak: peak))) }
    }
}

extension OpaquePointer {
    var miniObject: UnsafeMutablePointer<GstMiniObject> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstMiniObject.self)
    }
}

private func chain(_ data: UnsafeMutableRawPointer?) -> LoudnessChain? {
    data.map { Unmanaged<LoudnessChain>.fromOpaque($0).takeUnretainedValue() }
}

private let streamEventProbe: GstPadProbeCallback = { _, info, data in
    guard let info, let chain = chain(data), let event = info.pointee.data else { return GST_PAD_PROBE_OK }
    chain.streamEvent(event.assumingMemoryBound(to: GstEvent.self), info: info)
    return GST_PAD_PROBE_OK
}

private let measureBufferProbe: GstPadProbeCallback = { _, _, data in
    guard let chain = chain(data) else { return GST_PAD_PROBE_OK }
    return chain.shouldMeasureBuffer() ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP
}

private let resultProbe: GstPadProbeCallback = { _, info, data in
    guard let info, let chain = chain(data), let event = info.pointee.data else { return GST_PAD_PROBE_OK }
    chain.result(event.assumingMemoryBound(to: GstEvent.self))
    return GST_PAD_PROBE_OK
}

private let releaseChain: GDestroyNotify = { data in
    guard let data else { return }
    Unmanaged<LoudnessChain>.fromOpaque(data).release()
}
