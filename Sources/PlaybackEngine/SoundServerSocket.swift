import Glibc
import Media

/// Where a PulseAudio client (pulsesink, and so `autoaudiosink`'s first choice) finds the
/// sound server, and whether one answers there: PulseAudio's own socket, or pipewire-pulse's
/// in its place.
///
/// The path is a decision from the environment, pure; whether something accepts a connection
/// there is one `connect` on a Unix socket, which returns at once.
enum SoundServerSocket {
    /// The Unix socket a PulseAudio client connects to: the first `unix:` (or absolute)
    /// entry of `PULSE_SERVER`, else `$XDG_RUNTIME_DIR/pulse/native`. Nil when the server is
    /// named otherwise (a TCP address) or there is no runtime folder.
    static func path(environment: [String: String]) -> String? {
        if let servers = environment["PULSE_SERVER"], !servers.isEmpty {
            for server in servers.split(separator: " ") {
                if server.hasPrefix("unix:") { return String(server.dropFirst(5)) }
                if server.hasPrefix("/") { return String(server) }
            }
            return nil
        }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime + "/pulse/native"
    }

    /// Whether a server accepts connections on the socket at `path` now (without waiting: a
    /// server too busy to take one at once counts as there).
    static func accepts(_ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
        }
        let socket = Glibc.socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // A server whose backlog is full is there all the same.
        return result == 0 || errno == EAGAIN
    }
}
