import Dispatch
import Glibc

/// A Snapcast server's TCP source (snapserver's `source = tcp://HOST:PORT`, which listens),
/// for Quaver to render into.
///
/// The sink writes into a local pipe, and a relay of its own carries what it reads there on
/// to snapserver, connecting again whenever snapserver goes away. While it is not connected
/// it stops reading the pipe, so the pipe fills and the sink waits, as on a FIFO nobody
/// reads: playback stands where the audio is, and goes on, nothing lost, once snapserver
/// accepts again. A TCP peer that goes away would otherwise fail the sink. The pipe and the
/// relay live as long as the daemon: every pipeline made writes into the same pipe.
package final class SnapcastConnection: Sendable {
    /// snapserver's address: an IPv4 address, as its own `tcp://` source takes.
    package let host: String
    package let port: Int
    /// The format snapserver reads.
    package let format: SnapcastSampleFormat
    /// The pipe's end the sink writes to.
    package let descriptor: Int32

    /// How long the relay waits before it tries to connect again, at first and at most: a
    /// refused connection is answered at once, and a stopped snapserver is looked for a few
    /// times a second, then every two seconds.
    static let retry = (first: Duration.milliseconds(250), most: Duration.seconds(2))
    /// The socket's send buffer: small, so that audio waiting for snapserver stays in the
    /// pipe, where the sink's position stands with it, rather than seconds of it in the kernel.
    static let sendBuffer: Int32 = 16384

    private init(host: String, port: Int, format: SnapcastSampleFormat, descriptor: Int32) {
        self.host = host
        self.port = port
        self.format = format
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)  // the relay reads the end of the pipe and stops
    }

    /// The address `host` and `port` name, or why they name none.
    static func address(host: String, port: Int) -> sockaddr_in? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        guard (1...65535).contains(port), inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    /// Makes the pipe and starts the relay to snapserver at `host`:`port`, which need not
    /// listen yet.
    /// - Throws: ``Pipeline/SetupError`` when `host` is not an IPv4 address or the pipe
    ///   cannot be made.
    package static func open(host: String, port: Int, format: SnapcastSampleFormat) throws(Pipeline.SetupError)
        -> SnapcastConnection
    {
        guard let address = address(host: host, port: port) else {
            throw Pipeline.SetupError(
                description:
                    "cannot use snapcast:tcp://\(host):\(port): snapserver's TCP source takes an IPv4 address and a port, as in tcp://127.0.0.1:4953"
            )
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw Pipeline.SetupError(
                description: "cannot make a pipe for Snapcast: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The sink's end does not block: a full pipe makes fdsink wait on a poll that a pause
        // or a seek can interrupt.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let relay = Relay(source: ends[0], address: address, frame: format.bytesPerFrame)
        DispatchQueue(label: "quaver.snapcast-relay").async { relay.run() }
        return SnapcastConnection(host: host, port: port, format: format, descriptor: ends[1])
    }

    /// The sink that renders into the relay's pipe (see ``SnapcastPipe/sink(into:format:)``).
    package var sinkDescription: String { SnapcastPipe.sink(into: descriptor, format: format) }

    /// Reads the pipe and sends it on to snapserver, one thread of its own, for the daemon's
    /// life. A connection that fails is made again, and what it was sending is sent again from
    /// the start of the frame it was in, so that the new connection starts on a whole frame.
    private struct Relay: Sendable {
        let source: Int32
        let address: sockaddr_in
        let frame: Int

        func run() {
            var buffer: [UInt8] = []
            var start = 0  // the first byte of `buffer` not sent yet
            var sent = 0  // bytes sent since the last whole frame
            var socket: Int32 = -1
            defer {
                if socket >= 0 { close(socket) }
                close(source)
            }
            while true {
                if start == buffer.count {
                    // Keep the part of the frame under way: it is sent again on a new connection.
                    buffer.removeFirst(start - sent)
                    start = sent
                    var chunk = [UInt8](repeating: 0, count: 16384)
                    let count = read(source, &chunk, chunk.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { return }  // the daemon let go of the pipe
                    buffer += chunk[0..<count]
                }
                if socket < 0 {
                    socket = connectPatiently()
                    start -= sent
                    sent = 0
                }
                let count = buffer[start...].withUnsafeBytes {
                    send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count > 0 {
                    start += count
                    sent = (sent + count) % frame
                } else if !(count < 0 && errno == EINTR) {
                    close(socket)
                    socket = -1
                }
            }
        }

        /// A connection to snapserver, tried until one is made.
        private func connectPatiently() -> Int32 {
            var wait = SnapcastConnection.retry.first
            while true {
                let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                if fd >= 0 {
                    var size = SnapcastConnection.sendBuffer
                    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                    var on: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                    var address = address
                    let connected = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                        }
                    }
                    if connected { return fd }
                    close(fd)
                }
                usleep(useconds_t(wait / .microseconds(1)))
                wait = min(wait * 2, SnapcastConnection.retry.most)
            }
        }
    }
}
