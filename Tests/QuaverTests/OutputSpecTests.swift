import FoundationEssentials
import Testing

@testable import PlaybackPipeline
@testable import quaver

/// `--output` and `output =`: what each value names, and the error each wrong one gets.
@Suite("output: snapcast:PATH and its format")
struct OutputSpecTests {
    @Test func thePipeAndItsFormat() throws {
        #expect(
            try OutputSpec(parsing: "snapcast:/tmp/snapfifo") == .snapcastPipe(path: "/tmp/snapfifo", format: .standard)
        )
        #expect(
            try OutputSpec(parsing: "snapcast:///run/snap/fifo?sampleformat=44100:24:2")
                == .snapcastPipe(
                    path: "/run/snap/fifo", format: SnapcastSampleFormat(rate: 44100, bits: 24, channels: 2)))
        #expect(
            try OutputSpec(parsing: "snapcast:/a?sampleformat=44100:16:2").description
                == "snapcast:/a?sampleformat=44100:16:2")
        #expect(try OutputSpec(parsing: "snapcast:/a").description == "snapcast:/a")
        #expect(
            try OutputSpec(parsing: "snapcast:tcp://127.0.0.1:4953")
                == .snapcastTCP(host: "127.0.0.1", port: 4953, format: .standard))
        #expect(
            try OutputSpec(parsing: "snapcast:tcp://10.0.0.2:1705?sampleformat=44100:16:2").description
                == "snapcast:tcp://10.0.0.2:1705?sampleformat=44100:16:2")
    }

    @Test(arguments: [
        ("pulsesink", "names no output"),
        ("snapcast:fifo", "absolute path"),
        ("snapcast:/a?sampleformat=44100:12:2", "sampleformat=RATE:BITS:CHANNELS"),
        ("snapcast:/a?codec=flac", "not \"codec=flac\""),
        ("snapcast:tcp://127.0.0.1", "HOST:PORT"), ("snapcast:tcp://127.0.0.1:0", "HOST:PORT"),
    ])
    func wrongValuesSayWhy(_ value: String, _ said: String) {
        let error = #expect(throws: OutputSpec.ParseError.self) { try OutputSpec(parsing: value) }
        #expect(error?.description.contains(said) == true, "\(value): \(error?.description ?? "")")
    }

    @Test func theConfigurationTakesOneOfOutputAndAudioSink() throws {
        let home = URL(fileURLWithPath: "/home/someone")
        let config = try Config.parse("output = snapcast:/tmp/snapfifo\n", file: "quaver.conf", home: home)
        #expect(config.output == .snapcastPipe(path: "/tmp/snapfifo", format: .standard))
        #expect(throws: Config.ParseError.self) {
            try Config.parse(
                "audio-sink = pulsesink\noutput = snapcast:/tmp/snapfifo\n", file: "quaver.conf", home: home)
        }
        #expect(throws: Config.ParseError.self) {
            try Config.parse("output = snapcast:relative\n", file: "quaver.conf", home: home)
        }
    }
}
