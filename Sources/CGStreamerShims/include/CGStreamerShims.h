#ifndef QUAVER_CGSTREAMERSHIMS_H
#define QUAVER_CGSTREAMERSHIMS_H
// GStreamer and GObject shims for what Swift cannot call directly: variadic functions,
// function-like and casting macros, and macros whose values overflow Swift's importer.
// Only the Playback module imports them: the D-Bus and NowPlaying libraries link no GLib.
//
// The libraries are reached through their system-library umbrella headers, so each C
// header belongs to exactly one Clang module (including <gst/gst.h> here directly makes
// GLib's inline functions appear in two modules, which fails to build).
#include "../../CGStreamer/cgstreamer.h"
#include <stdint.h>

// g_object_set() is variadic. One typed setter per value kind. `object` is any GObject.
void cshims_object_set_string(gpointer object, const char *property, const char *value);
void cshims_object_set_boolean(gpointer object, const char *property, gboolean value);
void cshims_object_set_double(gpointer object, const char *property, double value);
void cshims_object_set_object(gpointer object, const char *property, gpointer value);
// g_object_get() is variadic.
double cshims_object_get_double(gpointer object, const char *property);

// g_signal_connect() is a macro. Connects a handler of signature
// void (*)(GstElement *element, gpointer data); `destroy` releases `data`.
typedef void (*cshims_element_callback)(GstElement *element, gpointer data);
gulong cshims_connect_element_signal(gpointer instance, const char *signal,
                                     cshims_element_callback callback, gpointer data,
                                     GClosureNotify destroy);
void cshims_disconnect(gpointer instance, gulong handler);

// GST_CLOCK_TIME_NONE is ((GstClockTime) -1): the importer rejects the cast.
GstClockTime cshims_clock_time_none(void);

// GST_ELEMENT_FACTORY_TYPE_* are 64-bit shifted casts the importer does not take.
// Decoders alone, and demuxers with parsers: what takes a codec's stream, and a container's.
GstElementFactoryListType cshims_factory_type_decoder(void);
GstElementFactoryListType cshims_factory_type_container(void);
GstElementFactoryListType cshims_factory_type_audio_decodable(void);

// GST_OBJECT_NAME() is a macro; returns a borrowed string.
const char *cshims_object_name(gpointer object);

// GST_MESSAGE_SRC() is a macro; returns a borrowed object.
gpointer cshims_message_source(GstMessage *message);

// The URI of the uridecodebin that `object` is inside (or is), to free with g_free; NULL
// when it is in none (the output, playbin itself).
char *cshims_decoder_uri(gpointer object);

// playbin's sink bin (its GstPlaySink child), with a reference, or NULL. Found among
// playbin's own children under playbin's object lock alone: asking playbin itself (a query,
// a search by name) goes through locks that the decoding side's streaming threads hold, for
// seconds when one is busy or stuck.
GstElement *cshims_playsink(GstElement *playbin);

// The queue in front of the audio sink inside `playsink` ("aqueue"), with a reference, or NULL.
GstElement *cshims_audio_sink_queue(GstElement *playsink);

// Signal handlers with return values and several arguments are written in C: makes every
// decodebin inside `playbin` skip the elements of video, image and subtitle streams, and
// gives playbin a video sink that takes nothing, so that it creates no real one.
void cshims_playbin_decode_audio_only(GstElement *playbin);
// Makes the decodebin of every file `discoverer` (a GstDiscoverer) reads skip the elements
// of video, image and subtitle streams, as playbin's do.
void cshims_discoverer_decode_audio_only(gpointer discoverer);
// Whether `factory` makes an element only video, images or subtitles need (a decoder, a
// parser, a converter or a sink of those; not a demuxer).
gboolean cshims_factory_is_non_audio(GstElementFactory *factory);
// Limits playsink's queue in front of the audio sink to `nanoseconds` of audio.
void cshims_playbin_limit_audio_queue(GstElement *playbin, uint64_t nanoseconds);

// Sets `properties` (a GstStructure in text form) as the `stream-properties` of every
// audio sink that has them (pulsesink, pipewiresink): `element` and the elements inside
// it now, and every sink added anywhere inside `playbin` later (autoaudiosink picks its
// sink only when it starts).
void cshims_set_stream_properties(GstElement *element, const char *properties);
void cshims_playbin_set_stream_properties(GstElement *playbin, const char *properties);

// The name of the application message posted on `playbin`'s bus whenever its volume
// changes, from whatever thread changed it (a mixer changing the stream's volume on the
// sound server, or Quaver itself): the owner of the bus reads the new value.
#define CSHIMS_VOLUME_CHANGED_MESSAGE "quaver-volume-changed"
// Connects that notification; returns the handler id (for cshims_disconnect).
gulong cshims_playbin_watch_volume(GstElement *playbin);
// Whether `message` is an application message named `name`.
gboolean cshims_message_is_application(GstMessage *message, const char *name);

// A count of bytes, added to on streaming threads and read from any thread without a lock.
// Reference-counted: the pads that add to it may outlive the pipeline that made it.
typedef struct cshims_byte_counter cshims_byte_counter;
cshims_byte_counter *cshims_byte_counter_new(void);
cshims_byte_counter *cshims_byte_counter_ref(cshims_byte_counter *counter);
void cshims_byte_counter_unref(cshims_byte_counter *counter);
uint64_t cshims_byte_counter_read(const cshims_byte_counter *counter);
void cshims_byte_counter_reset(cshims_byte_counter *counter);
// Counts the bytes of every buffer that passes the static pad `pad_name` of `element`.
void cshims_count_pad_bytes(GstElement *element, const char *pad_name, cshims_byte_counter *counter);
// Adds to `counter` the size of every buffer each source of `playbin` sends on (the source of
// every URI it opens, from `source-setup` on): how much a server has sent, whatever the
// decoders make of it. Returns the handler id (for cshims_disconnect).
gulong cshims_playbin_count_source_bytes(GstElement *playbin, cshims_byte_counter *counter);
// gst_tag_list_new() is variadic: a new list of the four ReplayGain values.
GstTagList *cshims_replaygain_tags(double track_gain, double track_peak, double album_gain, double album_peak);
// A new TAG event like `event` without its ReplayGain values (the gains, the peaks and the
// reference level); NULL when it holds none, so that the event goes on as it is.
GstEvent *cshims_tag_event_without_replaygain(GstEvent *event);
// The Opus R128 gain named `key` ("R128_TRACK_GAIN") among the extended comments of
// `list`, as the Q7.8 integer the comment holds; FALSE when absent or not a number.
gboolean cshims_r128_gain(const GstTagList *list, const char *key, gint *value);

// Whether the audio entering an output keeps its pace, judged in the output's streaming
// thread as each buffer comes: no other thread wakes while it does. Reference-counted: the
// pad's probe may outlive the pipeline that made it. NULL when no timer can be made.
typedef struct cshims_pace cshims_pace;
cshims_pace *cshims_pace_new(void);
cshims_pace *cshims_pace_ref(cshims_pace *pace);
void cshims_pace_unref(cshims_pace *pace);
// Watches the buffers and stream changes that pass the static pad `pad_name` of `element`;
// FALSE when it has no such pad.
gboolean cshims_pace_attach(cshims_pace *pace, GstElement *element, const char *pad_name);
// The descriptor that becomes readable once the audio armed for fell off its pace: no
// buffer moved the running time on by `share` of the time since the last that did, within
// a `period` (ns) of the audio that one brought.
int cshims_pace_descriptor(const cshims_pace *pace);
void cshims_pace_arm(cshims_pace *pace, double share, int64_t period);
void cshims_pace_disarm(cshims_pace *pace);
// Once the descriptor is readable: clears it, and returns TRUE (disarmed) when the audio is
// off its pace, with when a buffer last kept it (CLOCK_MONOTONIC ns; the arming, when none
// did) and the stream time that buffer began at (-1: unknown, or none did).
gboolean cshims_pace_take_alarm(cshims_pace *pace, int64_t *kept_at, int64_t *stream_time);
// CLOCK_MONOTONIC, in ns: the clock of the times above.
int64_t cshims_pace_now(void);

#endif
