#include "CShims.h"
int cshims_probe(void) { return GST_SECOND > 0; }
