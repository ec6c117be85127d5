import FoundationEssentials
import Glibc
import Testing

@testable import PlaybackPipeline

/// The Snapcast pipe output, without snapserver: its formats, and what opening a path does.
@Suite("Snapcast pipe: formats and opening")
struct SnapcastPipeTests {
    @Test(arguments: [
        ("48000:16:2", "audio/x-raw,format=S16LE,rate=48000,channels=2,layout=interleaved"),
        ("44100:24:2", "audio/x-raw,format=S24_32LE,rate=44100,channels=2,layout=interleaved"),
        ("96000:32:1", "audio/x-raw,format=S32LE,rate=96000,channels=1,layout=interleaved"),
    ])
    func formatsSnapserverReads(_ text: String, _ caps: String) throws {
        let format = try #require(SnapcastSampleFormat(text))
        #expect(format.caps == caps)
        #expect(format.description == text)
    }

    @Test(arguments: [
        "", "48000", "48000:16", "48000:8:2", "48000:16:0", "48000:16:6", "0:16:2", "a:16:2", "48000:16:2:1",
    ])
    func formatsItDoesNot(_ text: String) {
        #expect(SnapcastSampleFormat(text) == nil, "\(text)")
    }

    /// A scratch folder of the test's own.
    static func folder() throws -> String {
        var template = Array("/tmp/quaver-snapcast-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: try #require(made))
    }

    @Test func aPipeIsOpenedWithoutAReaderAndTakesAudioUntilFull() throws {
        let folder = try Self.folder()
        defer { _ = try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let pipe = try SnapcastPipe.open(path: path, format: .standard)
        #expect(pipe.descriptor >= 0, "opened at once, with no reader")
        #expect(pipe.sinkDescription.contains("fdsink name=snapcast-pipe fd=\(pipe.descriptor) sync=true"))
        #expect(pipe.sinkDescription.contains("ts-offset=-150000000"))
        // With no reader, writes fill the pipe and then would wait: never an error for want
        // of a reader (no EPIPE, no SIGPIPE), which is what lets playback stand and go on.
        var written = 0
        let chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeBytes { write(pipe.descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                #expect(errno == EAGAIN, "a full pipe says 'try again', not \(errno)")
                break
            }
            written += count
        }
        #expect(written >= 4096)
    }

    @Test func aMissingPathOrAFileIsAClearError() throws {
        let folder = try Self.folder()
        defer { _ = try? FileManager.default.removeItem(atPath: folder) }
        let missing = folder + "/none"
        let error = #expect(throws: Pipeline.SetupError.self) {
            try SnapcastPipe.open(path: missing, format: .standard)
        }
        #expect(error?.description.contains(missing) == true)
        #expect(error?.description.contains("No such file or directory") == true)
        #expect(error?.description.contains("start snapserver first") == true)
        let file = folder + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let notPipe = #expect(throws: Pipeline.SetupError.self) { try SnapcastPipe.open(path: file, format: .standard) }
        #expect(notPipe?.description.contains("it is not a pipe (FIFO)") == true)
    }

    /// A listener on 127.0.0.1 at a port of the kernel's choosing, as snapserver's TCP source.
    static func listener() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 && listen(fd, 1) == 0
            }
        }
        try #require(ready)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The next connection to `listener`, waited for up to 10 s.
    static func accept(_ listener: Int32) throws -> Int32 {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        try #require(poll(&poller, 1, 10_000) == 1, "the relay connected")
        return Glibc.accept(listener, nil, nil)
    }

    /// Reads from `fd` until `count` bytes came or 10 s passed.
    static func read(_ fd: Int32, count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while received.count < count {
            var chunk = [UInt8](repeating: 0, count: count - received.count)
            let got = recv(fd, &chunk, chunk.count, 0)
            guard got > 0 else { break }
            received += chunk[0..<got]
        }
        return received
    }

    /// Frames numbered from `first`: four bytes each (48000:16:2), the frame's number.
    static func frames(_ range: Range<UInt32>) -> [UInt8] {
        range.flatMap { number in withUnsafeBytes(of: number.littleEndian) { Array($0) } }
    }

    @Test func theRelayCarriesThePipeToSnapserverAndConnectsAgainOnAWholeFrame() throws {
        let (listener, port) = try Self.listener()
        defer { close(listener) }
        let connection = try SnapcastConnection.open(host: "127.0.0.1", port: port, format: .standard)
        let first = Self.frames(0..<1000)
        #expect(first.withUnsafeBytes { write(connection.descriptor, $0.baseAddress, $0.count) } == first.count)
        let peer = try Self.accept(listener)
        #expect(Self.read(peer, count: first.count) == first, "what the sink wrote reaches snapserver, in order")
        close(peer)  // snapserver goes away
        // Written while it is away: the relay's sends fail, and it connects again.
        let second = Self.frames(1000..<3001)
        for start in stride(from: 0, to: second.count, by: 2004) {
            let part = Array(second[start..<min(start + 2004, second.count)])
            #expect(part.withUnsafeBytes { write(connection.descriptor, $0.baseAddress, $0.count) } == part.count)
            usleep(20_000)
        }
        let again = try Self.accept(listener)
        defer { close(again) }
        let received = Self.read(again, count: 4)
        try #require(received.count == 4)
        let number = received.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        #expect((1000..<3001).contains(number), "the new connection starts on a whole frame, \(number)")
        let rest = Self.read(again, count: Int(3001 - number - 1) * 4)
        #expect(rest == Self.frames((number + 1)..<3001), "and goes on from there to the last frame written")
    }

    @Test func aHostThatIsNoAddressIsAClearError() {
        let error = #expect(throws: Pipeline.SetupError.self) {
            try SnapcastConnection.open(host: "snapserver.local", port: 4953, format: .standard)
        }
        #expect(error?.description.contains("takes an IPv4 address and a port") == true)
    }
}
