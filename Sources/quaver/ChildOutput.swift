import Glibc

/// Runs a program and collects its output, with posix_spawn(3): Foundation's `Process` is
/// in full Foundation, which the daemon does not link (it would map ICU with it).
enum ChildOutput {
    /// Runs the executable at `path` with `arguments` (its stdin inherited, its stderr on
    /// /dev/null) and returns what it wrote on stdout, once it has exited; nil when it
    /// cannot be started.
    static func run(_ path: String, _ arguments: [String]) -> [UInt8]? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        // Close-on-exec: the child holds neither end but the stdout made from one below.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: the child keeps its stdout only.
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(ends[1])
        defer { close(ends[0]) }
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += chunk[..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return output
    }
}
