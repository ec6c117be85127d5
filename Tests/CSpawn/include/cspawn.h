#ifndef CSPAWN_H
#define CSPAWN_H

#include <sys/types.h>

/// Starts `path` with posix_spawn, its standard input, output and error on the descriptors
/// given (-1: /dev/null), every other descriptor of the caller closed in the child (also those
/// another thread opens meanwhile: glibc's closefrom action, not a list made beforehand), no
/// signal blocked and every signal's action the default. Returns 0 or an errno value.
int cspawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int in, int out, int err);

/// pipe2(fds, O_CLOEXEC): both ends stay out of every child unless handed over explicitly.
int cspawn_pipe(int fds[2]);

#endif
