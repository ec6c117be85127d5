import Glibc

/// The PCM format a Snapcast source reads, as its `sampleformat` says it: `rate:bits:channels`,
/// interleaved, signed, little-endian.
package struct SnapcastSampleFormat: Sendable, Equatable, CustomStringConvertible {
    /// Frames a second.
    package var rate: Int
    /// Bits a sample: 16, 24 (in a 4-byte container, as Snapcast reads it) or 32.
    package var bits: Int
    /// Channels, interleaved.
    package var channels: Int

    /// snapserver's default, `48000:16:2`.
    package static let standard = SnapcastSampleFormat(rate: 48000, bits: 16, channels: 2)

    /// A format of these parts.
    package init(rate: Int, bits: Int, channels: Int) {
        self.rate = rate
        self.bits = bits
        self.channels = channels
    }

    /// The format `text` (`48000:16:2`) names, or nil when it names none Quaver writes. The
    /// channels are 1, 2, 4 or 8: a frame then divides the pipe's 4 KiB pages, so that a write
    /// the full pipe cuts short still ends on a whole frame (snapserver 0.26 shifts every later
    /// sample after a read that ends inside one).
    package init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let rate = Int(parts[0]), let bits = Int(parts[1]), let channels = Int(parts[2]),
            (8000...384_000).contains(rate), [16, 24, 32].contains(bits), [1, 2, 4, 8].contains(channels)
        else { return nil }
        self.init(rate: rate, bits: bits, channels: channels)
    }

    /// `rate:bits:channels`, as snapserver's configuration writes it.
    package var description: String { "\(rate):\(bits):\(channels)" }

    /// The raw audio caps of this format. Snapcast takes 24-bit samples in 4 bytes, which is
    /// GStreamer's `S24_32LE`, not the packed `S24LE`.
    package var caps: String {
        let format =
            switch bits {
            case 24: "S24_32LE"
            case 32: "S32LE"
            default: "S16LE"
            }
        return "audio/x-raw,format=\(format),rate=\(rate),channels=\(channels),layout=interleaved"
    }

    /// Bytes a frame (a sample of every channel) takes.
    package var bytesPerFrame: Int { channels * (bits == 16 ? 2 : 4) }
    /// Bytes a second of audio in this format.
    package var bytesPerSecond: Int { rate * bytesPerFrame }
}

/// A Snapcast server's pipe source (snapserver's `source = pipe://PATH`), opened for Quaver to
/// render into.
///
/// The pipe is opened for reading and writing, which Linux allows on a FIFO without waiting
/// for a reader and without ever failing a write for want of one: while snapserver is not
/// running (or restarts), the pipe fills and the sink waits for room, so playback stands
/// where the audio is and goes on, nothing lost, when snapserver reads again. Opened without
/// blocking, so that a full pipe makes `fdsink` wait on a poll that a pause or a seek can
/// interrupt. The descriptor stays open for the daemon's life: every pipeline made, including
/// one that replaces a stuck pipeline, writes into the same pipe.
package final class SnapcastPipe: Sendable {
    /// The pipe's path.
    package let path: String
    /// The format snapserver reads from it.
    package let format: SnapcastSampleFormat
    /// The open descriptor the sink writes to.
    package let descriptor: Int32

    /// How far ahead of real time the sink writes. snapserver reads one chunk (20 ms) at a
    /// time and fills what it cannot read with silence, so the writer keeps some audio in the
    /// pipe; a little, since a pause or a seek is heard only after it.
    package static let lead = Duration.milliseconds(150)

    private init(path: String, format: SnapcastSampleFormat, descriptor: Int32) {
        self.path = path
        self.format = format
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Opens the pipe at `path`, which must exist and be a FIFO (snapserver's pipe source
    /// makes it when it starts).
    /// - Throws: ``Pipeline/SetupError`` naming the path and what is wrong with it.
    package static func open(path: String, format: SnapcastSampleFormat) throws(Pipeline.SetupError) -> SnapcastPipe {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            throw Pipeline.SetupError(
                description:
                    "cannot use the Snapcast pipe \(path): \(reason) (snapserver makes it when it starts with `source = pipe://\(path)?name=…`; start snapserver first, or make it with mkfifo)"
            )
        }
        guard status.st_mode & S_IFMT == S_IFIFO else {
            throw Pipeline.SetupError(
                description:
                    "cannot use \(path) as a Snapcast pipe: it is not a pipe (FIFO); name the path of snapserver's pipe source"
            )
        }
        let descriptor = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw Pipeline.SetupError(description: "cannot open the Snapcast pipe \(path): \(reason)")
        }
        return SnapcastPipe(path: path, format: format, descriptor: descriptor)
    }

    /// The sink that renders into the pipe (see ``sink(into:format:)``).
    package var sinkDescription: String { Self.sink(into: descriptor, format: format) }

    /// A sink that renders into `descriptor`, in real time by the pipeline's clock, ``lead``
    /// ahead, converted to `format`.
    package static func sink(into descriptor: Int32, format: SnapcastSampleFormat) -> String {
        let offset = -Int64(lead / .nanoseconds(1))
        return
            "audioconvert ! audioresample ! \(format.caps) ! fdsink name=snapcast-pipe fd=\(descriptor) sync=true ts-offset=\(offset)"
    }
}
