#include "CGStreamerShims.h"
#include <errno.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Whether the audio entering the output keeps its pace, judged in the output's streaming
// thread, which wakes for every buffer anyway: no thread of the daemon's own wakes while it
// does. A deadline on a timerfd is pushed on each time a buffer shows the pace kept; only
// when it passes does the descriptor become readable, and the pipeline take a real sample.
struct cshims_pace {
    gint references;
    int timer;
    GMutex lock;
    // Under the lock, from here on.
    gboolean armed;
    double share;
    int64_t period;
    int64_t armed_at;
    int64_t deadline;
    GstSegment segment;
    gboolean has_segment;
    // The last buffer that showed the pace kept: when it came (-1: none since the watch
    // began or the stream changed), the running time its audio reaches, its stream time.
    int64_t kept_at;
    uint64_t kept_running;
    int64_t kept_stream;
};

int64_t cshims_pace_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

cshims_pace *cshims_pace_new(void) {
    int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer < 0) return NULL;
    cshims_pace *pace = g_new0(cshims_pace, 1);
    pace->references = 1;
    pace->timer = timer;
    g_mutex_init(&pace->lock);
    pace->kept_at = -1;
    return pace;
}

cshims_pace *cshims_pace_ref(cshims_pace *pace) {
    g_atomic_int_inc(&pace->references);
    return pace;
}

void cshims_pace_unref(cshims_pace *pace) {
    if (!pace || !g_atomic_int_dec_and_test(&pace->references)) return;
    close(pace->timer);
    g_mutex_clear(&pace->lock);
    g_free(pace);
}

int cshims_pace_descriptor(const cshims_pace *pace) { return pace->timer; }

// Under the lock. 0: stands still.
static void set_deadline(cshims_pace *pace, int64_t deadline) {
    pace->deadline = deadline;
    struct itimerspec when = {0};
    when.it_value.tv_sec = deadline / 1000000000;
    when.it_value.tv_nsec = deadline % 1000000000;
    timerfd_settime(pace->timer, deadline ? TFD_TIMER_ABSTIME : 0, &when, NULL);
}

static void pace_release(gpointer data) { cshims_pace_unref(data); }

static GstPadProbeReturn pace_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    cshims_pace *pace = data;
    if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
        GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
        if (GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT) {
            const GstSegment *segment = NULL;
            gst_event_parse_segment(event, &segment);
            g_mutex_lock(&pace->lock);
            gst_segment_copy_into(segment, &pace->segment);
            pace->has_segment = segment->format == GST_FORMAT_TIME;
            // A new stream (a gapless switch, or the data after a flush, which always
            // starts with a segment) is judged from its first buffer.
            pace->kept_at = -1;
            g_mutex_unlock(&pace->lock);
        }
        return GST_PAD_PROBE_OK;
    }
    GstBuffer *buffer = NULL;
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
        guint length = gst_buffer_list_length(list);
        if (length > 0) buffer = gst_buffer_list_get(list, length - 1);
    }
    if (!buffer || !GST_BUFFER_PTS_IS_VALID(buffer)) return GST_PAD_PROBE_OK;
    GstClockTime start = GST_BUFFER_PTS(buffer);
    GstClockTime length = GST_BUFFER_DURATION_IS_VALID(buffer) ? GST_BUFFER_DURATION(buffer) : 0;
    g_mutex_lock(&pace->lock);
    if (pace->armed && pace->has_segment) {
        guint64 running = gst_segment_to_running_time(&pace->segment, GST_FORMAT_TIME, start);
        if (running != GST_CLOCK_TIME_NONE) {
            // Running time moves with the clock at any rate: the pace is one of it a second.
            uint64_t reaches = running + length;
            int64_t now = cshims_pace_now();
            int64_t elapsed = now - pace->kept_at;
            gboolean kept = pace->kept_at < 0 ||
                            (elapsed >= pace->period / 2 &&
                             (double)(int64_t)(reaches - pace->kept_running) >= pace->share * (double)elapsed);
            if (kept) {
                guint64 stream = gst_segment_to_stream_time(&pace->segment, GST_FORMAT_TIME, start);
                pace->kept_at = now;
                pace->kept_running = reaches;
                pace->kept_stream = stream == GST_CLOCK_TIME_NONE ? -1 : (int64_t)stream;
                // The buffer just taken plays for its length: only past that and a period
                // more has the audio fallen behind.
                set_deadline(pace, now + pace->period + (int64_t)length);
            }
        }
    }
    g_mutex_unlock(&pace->lock);
    return GST_PAD_PROBE_OK;
}

gboolean cshims_pace_attach(cshims_pace *pace, GstElement *element, const char *pad_name) {
    GstPad *pad = gst_element_get_static_pad(element, pad_name);
    if (!pad) return FALSE;
    GstPadProbeType types =
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM;
    gst_pad_add_probe(pad, types, pace_probe, cshims_pace_ref(pace), pace_release);
    gst_object_unref(pad);
    return TRUE;
}

void cshims_pace_arm(cshims_pace *pace, double share, int64_t period) {
    g_mutex_lock(&pace->lock);
    pace->armed = TRUE;
    pace->share = share;
    pace->period = period;
    pace->kept_at = -1;
    pace->armed_at = cshims_pace_now();
    // Audio that never comes is off its pace a period from now.
    set_deadline(pace, pace->armed_at + period);
    g_mutex_unlock(&pace->lock);
}

void cshims_pace_disarm(cshims_pace *pace) {
    g_mutex_lock(&pace->lock);
    pace->armed = FALSE;
    set_deadline(pace, 0);
    g_mutex_unlock(&pace->lock);
}

gboolean cshims_pace_take_alarm(cshims_pace *pace, int64_t *kept_at, int64_t *stream_time) {
    uint64_t expirations;
    while (read(pace->timer, &expirations, sizeof expirations) < 0 && errno == EINTR) {
    }
    g_mutex_lock(&pace->lock);
    // Disarmed, or pushed on by a buffer since the descriptor became readable.
    gboolean off = pace->armed && pace->deadline != 0 && cshims_pace_now() >= pace->deadline;
    if (off) {
        *kept_at = pace->kept_at >= 0 ? pace->kept_at : pace->armed_at;
        *stream_time = pace->kept_at >= 0 ? pace->kept_stream : -1;
        pace->armed = FALSE;
        set_deadline(pace, 0);
    }
    g_mutex_unlock(&pace->lock);
    return off;
}
