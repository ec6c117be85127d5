#define _GNU_SOURCE
#include <sys/vfs.h>
#include "CLibcShims.h"
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>

int csystem_birth_time(const char *path, int64_t *seconds, uint32_t *nanoseconds) {
    struct statx info;
    if (statx(AT_FDCWD, path, 0, STATX_BTIME, &info) != 0 || !(info.stx_mask & STATX_BTIME)) return -1;
    *seconds = info.stx_btime.tv_sec;
    *nanoseconds = info.stx_btime.tv_nsec;
    return 0;
}

int csystem_limit_malloc_arenas(int count) {
#ifdef M_ARENA_MAX
    return mallopt(M_ARENA_MAX, count);
#else
    (void)count;
    return 0;
#endif
}

int csystem_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

void csystem_trim_heap(void) { malloc_trim(0); }

int64_t csystem_file_system_type(const char *path) {
    struct statfs info;
    return statfs(path, &info) == 0 ? (int64_t)info.f_type : -1;
}
