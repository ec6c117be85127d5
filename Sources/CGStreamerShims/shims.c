#include "CGStreamerShims.h"
#include <string.h>

void cshims_object_set_string(gpointer object, const char *property, const char *value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_boolean(gpointer object, const char *property, gboolean value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_double(gpointer object, const char *property, double value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_object(gpointer object, const char *property, gpointer value) {
    g_object_set(object, property, value, NULL);
}

double cshims_object_get_double(gpointer object, const char *property) {
    double value = 0;
    g_object_get(object, property, &value, NULL);
    return value;
}

gulong cshims_connect_element_signal(gpointer instance, const char *signal,
                                     cshims_element_callback callback, gpointer data,
                                     GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(callback), data, destroy, 0);
}

void cshims_disconnect(gpointer instance, gulong handler) {
    g_signal_handler_disconnect(instance, handler);
}

GstClockTime cshims_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }

GstElementFactoryListType cshims_factory_type_audio_decodable(void) {
    return GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_DEMUXER |
           GST_ELEMENT_FACTORY_TYPE_PARSER;
}

GstElementFactoryListType cshims_factory_type_decoder(void) { return GST_ELEMENT_FACTORY_TYPE_DECODER; }

GstElementFactoryListType cshims_factory_type_container(void) {
    return GST_ELEMENT_FACTORY_TYPE_DEMUXER | GST_ELEMENT_FACTORY_TYPE_PARSER;
}

const char *cshims_object_name(gpointer object) { return GST_OBJECT_NAME(object); }

gpointer cshims_message_source(GstMessage *message) { return GST_MESSAGE_SRC(message); }

char *cshims_decoder_uri(gpointer object) {
    GstObject *current = object ? gst_object_ref(GST_OBJECT(object)) : NULL;
    char *uri = NULL;
    while (current && !uri) {
        if (g_str_equal(G_OBJECT_TYPE_NAME(current), "GstURIDecodeBin")) g_object_get(current, "uri", &uri, NULL);
        GstObject *parent = gst_object_get_parent(current);
        gst_object_unref(current);
        current = parent;
    }
    if (current) gst_object_unref(current);
    return uri;
}

GstElement *cshims_playsink(GstElement *playbin) {
    GstElement *playsink = NULL;
    GST_OBJECT_LOCK(playbin);
    for (GList *child = GST_BIN_CHILDREN(GST_BIN(playbin)); child; child = child->next) {
        if (g_str_equal(G_OBJECT_TYPE_NAME(child->data), "GstPlaySink")) {
            playsink = GST_ELEMENT(gst_object_ref(child->data));
            break;
        }
    }
    GST_OBJECT_UNLOCK(playbin);
    return playsink;
}

GstElement *cshims_audio_sink_queue(GstElement *playsink) {
    return gst_bin_get_by_name(GST_BIN(playsink), "aqueue");
}

// decodebin's "autoplug-select" handler: an element for video, images or subtitles (a
// decoder, a parser, a converter or a sink) is skipped, so those streams are never decoded
// nor parsed (playbin's flags only stop them being shown). Demuxers are kept: they carry the
// audio. Returns GstAutoplugSelectResult, whose type is private to the playback plugin:
// 0 = TRY, 2 = SKIP.
static gint skip_non_audio_element(GstElement *bin, GstPad *pad, GstCaps *caps,
                                   GstElementFactory *factory, gpointer data) {
    (void)bin; (void)pad; (void)caps; (void)data;
    return cshims_factory_is_non_audio(factory) ? 2 : 0;
}

gboolean cshims_factory_is_non_audio(GstElementFactory *factory) {
    const char *klass = gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS);
    if (!klass || strstr(klass, "Demuxer") || strstr(klass, "Audio")) return FALSE;
    return strstr(klass, "Video") || strstr(klass, "Image") || strstr(klass, "Subtitle");
}

// playbin's "element-setup": fires for every element added to it or to its sub-bins.
static void on_element_setup(GstElement *playbin, GstElement *element, gpointer data) {
    (void)playbin; (void)data;
    GstElementFactory *factory = gst_element_get_factory(element);
    // uridecodebin re-adds the same decodebin for every new URI, and element-setup fires
    // each time: connect once, or the handlers (and their memory) pile up per track.
    if (factory && g_strcmp0(GST_OBJECT_NAME(factory), "decodebin") == 0 &&
        !g_object_get_data(G_OBJECT(element), "quaver-audio-only")) {
        g_object_set_data(G_OBJECT(element), "quaver-audio-only", GINT_TO_POINTER(1));
        g_signal_connect(element, "autoplug-select", G_CALLBACK(skip_non_audio_element), NULL);
    }
}

void cshims_playbin_decode_audio_only(GstElement *playbin) {
    g_signal_connect(playbin, "element-setup", G_CALLBACK(on_element_setup), NULL);
    // playbin picks a video sink for a video stream whatever its flags, and with none set it
    // makes every video sink the registry has (kmssink, dfbvideosink, ...) to try each: their
    // plugins load into this process, and DirectFB's leaves a thread behind that crashes it.
    // A video sink set here, which takes no caps at all, stops that: playbin then tries no
    // other, and skips every video decoder as incompatible with it.
    GstElement *none = gst_parse_bin_from_description("capsfilter caps=video/x-quaver-none ! fakesink sync=false", TRUE, NULL);
    if (none) g_object_set(playbin, "video-sink", none, NULL);
}

// The discoverer's "source-setup": its source's parent is the uridecodebin that reads the
// file, whose decodebin then skips the same elements as playbin's (connected once: a
// discoverer reuses its uridecodebin for every file).
static void on_discoverer_source_setup(GstElement *discoverer, GstElement *source, gpointer data) {
    (void)discoverer; (void)data;
    GstObject *parent = gst_object_get_parent(GST_OBJECT(source));
    if (!parent) return;
    if (g_signal_lookup("autoplug-select", G_OBJECT_TYPE(parent)) &&
        !g_object_get_data(G_OBJECT(parent), "quaver-audio-only")) {
        g_object_set_data(G_OBJECT(parent), "quaver-audio-only", GINT_TO_POINTER(1));
        g_signal_connect(parent, "autoplug-select", G_CALLBACK(skip_non_audio_element), NULL);
    }
    gst_object_unref(parent);
}

void cshims_discoverer_decode_audio_only(gpointer discoverer) {
    g_signal_connect(discoverer, "source-setup", G_CALLBACK(on_discoverer_source_setup), NULL);
}

// playbin's "element-setup" again: playsink's queue before the audio sink ("aqueue") gets
// its limit as it is created, on the thread that creates it.
static void on_audio_queue_setup(GstElement *playbin, GstElement *element, gpointer data) {
    (void)playbin;
    GstElementFactory *factory = gst_element_get_factory(element);
    if (factory && g_strcmp0(GST_OBJECT_NAME(factory), "queue") == 0 &&
        g_strcmp0(GST_OBJECT_NAME(element), "aqueue") == 0) {
        g_object_set(element, "max-size-time", (guint64)GPOINTER_TO_SIZE(data), NULL);
    }
}

void cshims_playbin_limit_audio_queue(GstElement *playbin, uint64_t nanoseconds) {
    g_signal_connect(playbin, "element-setup", G_CALLBACK(on_audio_queue_setup), GSIZE_TO_POINTER((gsize)nanoseconds));
}

static void set_stream_properties_on(GstElement *element, const gchar *properties) {
    if (!g_object_class_find_property(G_OBJECT_GET_CLASS(element), "stream-properties")) return;
    GstStructure *structure = gst_structure_from_string(properties, NULL);
    if (!structure) return;
    g_object_set(element, "stream-properties", structure, NULL);
    gst_structure_free(structure);
}

void cshims_set_stream_properties(GstElement *element, const char *properties) {
    set_stream_properties_on(element, properties);
    if (!GST_IS_BIN(element)) return;
    GstIterator *children = gst_bin_iterate_recurse(GST_BIN(element));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(children, &item) == GST_ITERATOR_OK) {
        set_stream_properties_on(GST_ELEMENT(g_value_get_object(&item)), properties);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(children);
}

static void on_deep_element_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer properties) {
    (void)bin;
    (void)sub_bin;
    set_stream_properties_on(element, (const gchar *)properties);
}

void cshims_playbin_set_stream_properties(GstElement *playbin, const char *properties) {
    g_signal_connect_data(playbin, "deep-element-added", G_CALLBACK(on_deep_element_added),
                          g_strdup(properties), (GClosureNotify)(void (*)(void))g_free, 0);
}

static void on_volume_notify(GObject *playbin, GParamSpec *spec, gpointer data) {
    (void)spec; (void)data;
    GstStructure *structure = gst_structure_new_empty(CSHIMS_VOLUME_CHANGED_MESSAGE);
    gst_element_post_message(GST_ELEMENT(playbin), gst_message_new_application(GST_OBJECT(playbin), structure));
}

gulong cshims_playbin_watch_volume(GstElement *playbin) {
    return g_signal_connect(playbin, "notify::volume", G_CALLBACK(on_volume_notify), NULL);
}

gboolean cshims_message_is_application(GstMessage *message, const char *name) {
    if (GST_MESSAGE_TYPE(message) != GST_MESSAGE_APPLICATION) return FALSE;
    const GstStructure *structure = gst_message_get_structure(message);
    return structure && gst_structure_has_name(structure, name);
}

struct cshims_byte_counter {
    gint references;
    uint64_t bytes;
};

cshims_byte_counter *cshims_byte_counter_new(void) {
    cshims_byte_counter *counter = g_new0(cshims_byte_counter, 1);
    counter->references = 1;
    return counter;
}

cshims_byte_counter *cshims_byte_counter_ref(cshims_byte_counter *counter) {
    g_atomic_int_inc(&counter->references);
    return counter;
}

void cshims_byte_counter_unref(cshims_byte_counter *counter) {
    if (counter && g_atomic_int_dec_and_test(&counter->references)) g_free(counter);
}

uint64_t cshims_byte_counter_read(const cshims_byte_counter *counter) {
    return __atomic_load_n(&counter->bytes, __ATOMIC_RELAXED);
}

static void byte_counter_release(gpointer data) { cshims_byte_counter_unref(data); }

static void byte_counter_release_closure(gpointer data, GClosure *closure) {
    (void)closure;
    cshims_byte_counter_unref(data);
}

static GstPadProbeReturn count_bytes(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    gsize size = 0;
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        size = gst_buffer_get_size(GST_PAD_PROBE_INFO_BUFFER(info));
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        size = gst_buffer_list_calculate_size(GST_PAD_PROBE_INFO_BUFFER_LIST(info));
    }
    __atomic_fetch_add(&((cshims_byte_counter *)data)->bytes, (uint64_t)size, __ATOMIC_RELAXED);
    return GST_PAD_PROBE_OK;
}

void cshims_byte_counter_reset(cshims_byte_counter *counter) {
    __atomic_store_n(&counter->bytes, 0, __ATOMIC_RELAXED);
}

void cshims_count_pad_bytes(GstElement *element, const char *pad_name, cshims_byte_counter *counter) {
    GstPad *pad = gst_element_get_static_pad(element, pad_name);
    if (!pad) return;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, count_bytes,
                      cshims_byte_counter_ref(counter), byte_counter_release);
    gst_object_unref(pad);
}

static void on_source_setup(GstElement *playbin, GstElement *source, gpointer data) {
    (void)playbin;
    // A source bin with sometimes pads (rtspsrc) has no static "src": it is not counted,
    // and the player falls back on the buffering level alone.
    GstPad *pad = gst_element_get_static_pad(source, "src");
    if (!pad) return;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, count_bytes,
                      cshims_byte_counter_ref(data), byte_counter_release);
    gst_object_unref(pad);
}

gulong cshims_playbin_count_source_bytes(GstElement *playbin, cshims_byte_counter *counter) {
    return g_signal_connect_data(playbin, "source-setup", G_CALLBACK(on_source_setup), cshims_byte_counter_ref(counter),
                                 byte_counter_release_closure, 0);
}

GstTagList *cshims_replaygain_tags(double track_gain, double track_peak, double album_gain, double album_peak) {
    return gst_tag_list_new(GST_TAG_TRACK_GAIN, track_gain, GST_TAG_TRACK_PEAK, track_peak,
                            GST_TAG_ALBUM_GAIN, album_gain, GST_TAG_ALBUM_PEAK, album_peak, NULL);
}

static const char *const replaygain_tags[] = {
    GST_TAG_TRACK_GAIN, GST_TAG_TRACK_PEAK, GST_TAG_ALBUM_GAIN, GST_TAG_ALBUM_PEAK, GST_TAG_REFERENCE_LEVEL,
};

GstEvent *cshims_tag_event_without_replaygain(GstEvent *event) {
    GstTagList *list = NULL;
    gst_event_parse_tag(event, &list);
    if (!list) return NULL;
    gboolean found = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(replaygain_tags); i++) {
        if (gst_tag_list_get_tag_size(list, replaygain_tags[i]) > 0) found = TRUE;
    }
    if (!found) return NULL;
    GstTagList *copy = gst_tag_list_copy(list);
    for (size_t i = 0; i < G_N_ELEMENTS(replaygain_tags); i++) gst_tag_list_remove_tag(copy, replaygain_tags[i]);
    return gst_event_new_tag(copy);
}

gboolean cshims_r128_gain(const GstTagList *list, const char *key, gint *value) {
    size_t key_length = strlen(key);
    guint count = gst_tag_list_get_tag_size(list, GST_TAG_EXTENDED_COMMENT);
    for (guint i = 0; i < count && i < 64; i++) {
        const gchar *comment = NULL;
        if (!gst_tag_list_peek_string_index(list, GST_TAG_EXTENDED_COMMENT, i, &comment) || !comment) continue;
        // Vorbis comment keys are case-insensitive.
        if (g_ascii_strncasecmp(comment, key, key_length) != 0 || comment[key_length] != '=') continue;
        const char *number = comment + key_length + 1;
        char *end = NULL;
        gint64 parsed = g_ascii_strtoll(number, &end, 10);
        if (end == number || *end != '\0' || parsed < G_MININT16 || parsed > G_MAXINT16) return FALSE;
        *value = (gint)parsed;
        return TRUE;
    }
    return FALSE;
}
