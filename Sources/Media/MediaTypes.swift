internal import CGStreamer
internal import CGStreamerShims
import PlaybackVocabulary

/// What the installed GStreamer plugins can decode.
public enum MediaTypes {
    /// MIME types of every audio format a decoder, demuxer or parser accepts.
    public static func supported() -> [String] {
        GStreamer.initialize()
        var types = Set<String>()
        guard
            let factories = gst_element_factory_list_get_elements(
                cshims_factory_type_audio_decodable(), GST_RANK_MARGINAL)
        else {
            return []
        }
        defer { gst_plugin_feature_list_free(factories) }
        var node: UnsafeMutablePointer<GList>? = factories
        while let current = node {
            if let data = current.pointee.data {
                let factory = OpaquePointer(data)
                var template = gst_element_factory_get_static_pad_templates(factory)
                while let item = template {
                    if let raw = item.pointee.data {
                        let padTemplate = raw.assumingMemoryBound(to: GstStaticPadTemplate.self)
                        if padTemplate.pointee.direction == GST_PAD_SINK,
                            let caps = gst_static_pad_template_get_caps(padTemplate)
                        {
                            for index in 0..<gst_caps_get_size(caps) {
                                if let name = gst_structure_get_name(gst_caps_get_structure(caps, index)) {
                                    types.formUnion(aliases(String(cString: name)))
                                }
                            }
                            gst_caps_unref(caps)
                        }
                    }
                    template = item.pointee.next.map { UnsafePointer($0) }
                }
            }
            node = current.pointee.next
        }
        return types.sorted()
    }

    static func aliases(_ name: String) -> [String] {
        switch name {
        case "audio/x-raw", "audio/x-unaligned-raw": []
        case "application/ogg", "application/x-ogg": ["application/ogg", "audio/ogg"]
        case "video/quicktime": ["audio/mp4", "audio/x-m4a"]
        case "audio/x-flac": ["audio/flac", "audio/x-flac"]
        case "audio/x-wav": ["audio/wav", "audio/x-wav"]
        case "audio/x-matroska", "video/x-matroska": ["audio/x-matroska"]
        case "video/webm": ["audio/webm"]
        default: name.hasPrefix("audio/") ? [name] : []
        }
    }
}
