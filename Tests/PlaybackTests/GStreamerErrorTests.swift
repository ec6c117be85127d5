import CGStreamer
import Testing

@testable import Media

@Suite("GStreamerError: the one owner of GErrors")
struct GStreamerErrorTests {
    /// A GError as GStreamer makes them: a decoder's failure in the stream domain.
    static func decodeError(_ text: String) -> UnsafeMutablePointer<GError>? {
        g_error_new_literal(gst_stream_error_quark(), gint(GST_STREAM_ERROR_DECODE.rawValue), text)
    }

    @Test("reads the message, domain and code of a GError")
    func readsAGError() throws {
        GStreamer.initialize()
        let error = try #require(GStreamerError(taking: Self.decodeError("cannot decode the frame")))
        #expect(error.message == "cannot decode the frame")
        #expect(error.domain == "gst-stream-error-quark")
        #expect(error.code == Int32(GST_STREAM_ERROR_DECODE.rawValue))
        #expect(error.description == "cannot decode the frame")
    }

    @Test("no GError reads as none")
    func noError() {
        #expect(GStreamerError(taking: nil) == nil)
    }

    @Test("a call that fails gives the error it reported")
    func catchingAFailure() throws {
        GStreamer.initialize()
        let (bin, error) = GStreamerError.catching { gst_parse_bin_from_description("quaver-no-such-element", 0, &$0) }
        if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
        let reported = try #require(error)
        #expect(reported.domain == String(cString: g_quark_to_string(gst_parse_error_quark())))
        #expect(reported.code == Int32(GST_PARSE_ERROR_NO_SUCH_ELEMENT.rawValue))
        #expect(reported.message.contains("quaver-no-such-element"))
    }

    @Test("a call that succeeds gives its value and no error")
    func catchingASuccess() {
        GStreamer.initialize()
        let (bin, error) = GStreamerError.catching { gst_parse_bin_from_description("identity", 0, &$0) }
        #expect(bin != nil)
        #expect(error == nil)
        if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
    }

    @Test("the error and warning of a bus message are read with their debug text")
    func busMessages() throws {
        GStreamer.initialize()
        let original = try #require(Self.decodeError("the stream is broken"))
        // The messages copy the error; ours is freed by its reading.
        let error = try #require(gst_message_new_error(nil, original, "in the decoder"))
        let warning = try #require(gst_message_new_warning(nil, original, nil))
        _ = GStreamerError(taking: original)
        defer {
            gst_message_unref(error)
            gst_message_unref(warning)
        }
        let fromError = GStreamerError.of(error)
        #expect(fromError.error?.message == "the stream is broken")
        #expect(fromError.error?.domain == "gst-stream-error-quark")
        #expect(fromError.debug == "in the decoder")
        let fromWarning = GStreamerError.of(warning)
        #expect(fromWarning.error?.code == Int32(GST_STREAM_ERROR_DECODE.rawValue))
        #expect(fromWarning.debug == nil)
    }

    @Test("a bus message of another type carries no error")
    func otherMessage() throws {
        GStreamer.initialize()
        let message = try #require(gst_message_new_eos(nil))
        defer { gst_message_unref(message) }
        let read = GStreamerError.of(message)
        #expect(read.error == nil)
        #expect(read.debug == nil)
    }
}
