#define _GNU_SOURCE
#include <sys/vfs.h>
#include "CLibcShims.h"
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

int32_t csystem_thread_id(void) { return (int32_t)gettid(); }

// The calling thread's CPUs before csystem_pin_thread pinned it, to let it go back to them.
static __thread cpu_set_t unpinned;
static __thread int pinned;

int csystem_pin_thread(int cpu) {
    if (cpu < 0) {
        if (!pinned) return 0;
        pinned = 0;
        return sched_setaffinity(0, sizeof unpinned, &unpinned);
    }
    if (!pinned && sched_getaffinity(0, sizeof unpinned, &unpinned) != 0) return -1;
    pinned = 1;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(cpu, &cpus);
    return sched_setaffinity(0, sizeof cpus, &cpus);
}

int csystem_last_allowed_cpu(void) {
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return -1;
    for (int each = CPU_SETSIZE - 1; each >= 0; each--) {
        if (CPU_ISSET(each, &cpus)) return each;
    }
    return -1;
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

// Called for the main program first (dl_iterate_phdr's order), and stops there.
static int page_out_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    int *error = data;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
        uintptr_t start = (info->dlpi_addr + segment->p_vaddr) & ~(uintptr_t)(page - 1);
        uintptr_t end = (info->dlpi_addr + segment->p_vaddr + segment->p_memsz + page - 1) & ~(uintptr_t)(page - 1);
        if (madvise((void *)start, end - start, MADV_PAGEOUT) != 0) *error = errno;
    }
    return 1;
}

int csystem_page_out_program(void) {
    int error = 0;
    dl_iterate_phdr(page_out_segments, &error);
    if (error == 0) return 0;
    errno = error;
    return -1;
}

int64_t csystem_resident_bytes(void) {
    FILE *statm = fopen("/proc/self/statm", "re");
    if (!statm) return -1;
    long long size, resident;
    int read = fscanf(statm, "%lld %lld", &size, &resident);
    fclose(statm);
    return read == 2 ? resident * (int64_t)sysconf(_SC_PAGESIZE) : -1;
}
