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
}
