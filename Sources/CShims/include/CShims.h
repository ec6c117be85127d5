#ifndef QUAVER_CSHIMS_H
#define QUAVER_CSHIMS_H
// Reach the libraries through their system-library umbrella headers (so each C header
// belongs to exactly one Clang module; including <gst/gst.h> here directly makes GLib's
// inline functions appear in two modules and fails to build).
#include "../../CDBus/cdbus.h"
#include "../../CGStreamer/cgstreamer.h"
int cshims_probe(void);
#endif
