package import CGStreamer
internal import CGStreamerShims
import Dispatch
import Glibc

/// Starts GStreamer once per process. Safe to call repeatedly, from any thread.
public enum GStreamer {
    private static let started: Void = gst_init(nil, nil)

    /// Starts GStreamer if it is not started yet; call it before any other GStreamer use.
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
            let (parsed, error) = GStreamerError.catching { gst_parse_bin_from_description(description, 1, &$0) }
            guard let parsed else {
                let reason = error?.message ?? "unknown error"
                return .failure(MediaError("'\(description)' is not a valid sink: \(reason)"))
            }
            sink = UnsafeMutableRawPointer(parsed).assumingMemoryBound(to: GstElement.self)
        } else {
            guard let auto = gst_element_factory_make("autoaudiosink", nil) else {
                return .failure(
                    MediaError("the element 'autoaudiosink' is missing (install gstreamer1.0-plugins-good)"))
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
    package static func factoryNames(inBin bin: UnsafeMutablePointer<GstElement>) -> [String] {
        var names: [String] = []
        guard let iterator = gst_bin_iterate_recurse(OpaquePointer(bin).bin) else { return names }
        defer { gst_iterator_free(iterator) }
        var value = GValue()
        while gst_iterator_next(iterator, &value) == GST_ITERATOR_OK {
            if let object = g_value_get_object(&value) {
                let element = object.assumingMemoryBound(to: GstElement.self)
                if let factory = gst_element_get_factory(element),
                    let name = cshims_object_name(UnsafeMutableRawPointer(factory))
                {
                    names.append(String(cString: name))
                }
            }
            g_value_reset(&value)
        }
        g_value_unset(&value)
        return names
    }
}

extension OpaquePointer {
    package var gObject: UnsafeMutablePointer<GObject> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: GObject.self)
    }
    package var bin: UnsafeMutablePointer<GstBin> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstBin.self) }
    package var object: UnsafeMutablePointer<GstObject> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: GstObject.self)
    }
}

/// An error GStreamer or GLib reported (a `GError`), read into Swift: its text, domain and
/// code. The one owner of every `GError` Quaver receives: each is read here and freed here,
/// at once, so that no other code frees one (or forgets to).
package struct GStreamerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in GStreamer's words.
    package var message: String
    /// The name of the error's domain, such as `gst-stream-error-quark`.
    package var domain: String
    /// The error's code within its domain.
    package var code: Int32

    package var description: String { message }

    /// Reads `error` and frees it; nil when there is none.
    package init?(taking error: UnsafeMutablePointer<GError>?) {
        guard let error else { return nil }
        defer { g_error_free(error) }
        message = error.pointee.message.map { String(cString: $0) } ?? ""
        domain = g_quark_to_string(error.pointee.domain).map { String(cString: $0) } ?? ""
        code = error.pointee.code
    }

    /// Calls `body` with the place for an error that GLib's functions fill in, and gives what
    /// it returned with the error it reported, read and freed. A call that succeeds may
    /// report an error too (a warning): that one is freed all the same.
    package static func catching<Value>(
        _ body: (inout UnsafeMutablePointer<GError>?) -> Value
    ) -> (value: Value, error: GStreamerError?) {
        var error: UnsafeMutablePointer<GError>?
        let value = body(&error)
        return (value, GStreamerError(taking: error))
    }

    /// The error, warning or information a bus message carries, with its debug text, both
    /// freed; nil and nil for a message of another type.
    package static func of(
        _ message: UnsafeMutablePointer<GstMessage>
    ) -> (error: GStreamerError?, debug: String?) {
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        switch message.pointee.type {
        case GST_MESSAGE_ERROR: gst_message_parse_error(message, &error, &debug)
        case GST_MESSAGE_WARNING: gst_message_parse_warning(message, &error, &debug)
        case GST_MESSAGE_INFO: gst_message_parse_info(message, &error, &debug)
        default: return (nil, nil)
        }
        defer { g_free(debug) }
        return (GStreamerError(taking: error), debug.map { String(cString: $0) })
    }
}
