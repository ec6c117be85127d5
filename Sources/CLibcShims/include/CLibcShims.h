#ifndef QUAVER_CSYSTEM_H
#define QUAVER_CSYSTEM_H
// Linux and glibc calls Swift's Glibc module does not bring in. No library besides libc.
#include <stdint.h>

/// The birth time `statx(2)` reports for `path`; -1 where the file system does not record it.
int csystem_birth_time(const char *path, int64_t *seconds, uint32_t *nanoseconds);

// mallopt() and M_ARENA_MAX live in <malloc.h>, which no Swift module brings in. Caps
// glibc's malloc arenas at `count` (before threads start); returns mallopt's result.
int csystem_limit_malloc_arenas(int count);

// Sets glibc's M_MMAP_THRESHOLD to `bytes`: every block of that size or more is a mapping
// of its own, handed back to the system when freed. Setting it turns off glibc's own
// raising of the threshold, which would otherwise, after the first such block is freed,
// place the next ones (up to 32 MiB each) in the heap, and keep them there once freed.
// Returns mallopt's result.
int csystem_set_mmap_threshold(int bytes);

// malloc_trim() (also in <malloc.h>): hands the free pages of the heap back to the system,
// including those between chunks still in use.
void csystem_trim_heap(void);

// The type of the file system `path` is on (statfs(2)'s f_type, such as 0x9fa0 for procfs);
// -1 when it cannot be told. <sys/vfs.h> is not in Swift's Glibc module.
int64_t csystem_file_system_type(const char *path);

// gettid(2): the calling thread's id, the name of its folder in /proc/self/task. Swift's
// Glibc module leaves out what <unistd.h> declares only under _GNU_SOURCE.
int32_t csystem_thread_id(void);

// Pins the calling thread to `cpu` (sched_setaffinity(2), also _GNU_SOURCE only); with -1,
// lets it run again on the CPUs it could before it was pinned. Returns 0, or -1 with errno.
int csystem_pin_thread(int cpu);

// The highest-numbered CPU the calling thread may run on; -1 when it cannot be told.
int csystem_last_allowed_cpu(void);

// The program's own pages that are never written (its code, and the tables the dynamic
// loader reads once) are handed back to the kernel with madvise(MADV_PAGEOUT): those in use
// come back at their next touch. Returns 0, or -1 with errno (EINVAL before Linux 5.4,
// which has no MADV_PAGEOUT).
int csystem_page_out_program(void);

// The process's resident set in bytes (/proc/self/statm); -1 when it cannot be read.
int64_t csystem_resident_bytes(void);

#endif
