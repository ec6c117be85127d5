// Umbrella header for GStreamer core, base audio, tags and pbutils; include paths come from
// pkg-config (gstreamer-pbutils-1.0, which pulls in gstreamer-1.0 and glib-2.0).
#include <gst/gst.h>
#include <gst/audio/audio.h>
#include <gst/audio/streamvolume.h>
#include <gst/pbutils/pbutils.h>
#include <gst/tag/tag.h>
