public import Foundation

/// What went wrong reading or checking rendered audio, in one sentence.
public struct AudioCheckError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// 16-bit PCM WAV files: enough of the format to read what players render and to split a
/// reference signal.
public struct WAV: Sendable {
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    /// Interleaved samples.
    public var samples: [Int16]
    /// Whether the header's data length matched the file (a writer that was not finalized
    /// leaves 0 or a placeholder there).
    public var headerComplete = true

    public init(sampleRate: Int, channels: Int, samples: [Int16]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = 16
        self.samples = samples
    }

    /// Frames (samples per channel) in the file.
    public var frames: Int { channels > 0 ? samples.count / channels : 0 }

    /// Reads a RIFF/WAVE file with a PCM (or extensible PCM) `fmt ` chunk of 16-bit samples.
    public init(contentsOf url: URL) throws {
        let data = try Data(contentsOf: url)
        let bytes = [UInt8](data)
        func u32(_ at: Int) -> Int {
            Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
        }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF",
            String(decoding: bytes[8..<12], as: UTF8.self) == "WAVE"
        else { throw AudioCheckError("\(url.lastPathComponent) is not a WAV file (\(bytes.count) bytes)") }
        var offset = 12
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt ", body + 16 <= bytes.count {
                format = (u16(body), u16(body + 2), u32(body + 4), u16(body + 14))
            } else if id == "data" {
                guard let format else { throw AudioCheckError("\(url.lastPathComponent): data before fmt") }
                guard format.tag == 1 || format.tag == 0xFFFE, format.bits == 16 else {
                    throw AudioCheckError(
                        "\(url.lastPathComponent): not 16-bit PCM (format \(format.tag), \(format.bits) bits)")
                }
                // A finalized header holds the data's length (other chunks, such as wavenc's
                // LIST, may follow it); a writer that was not finalized leaves 0 or a
                // placeholder bigger than the file, and then the file's own length is taken.
                let available = bytes.count - body
                let complete = size > 0 && size <= available
                let length = (complete ? size : available) / 2 * 2
                var samples = [Int16](repeating: 0, count: length / 2)
                samples.withUnsafeMutableBytes { target in
                    data.copyBytes(to: target.bindMemory(to: UInt8.self), from: body..<body + length)
                }
                self.init(
                    sampleRate: format.rate, channels: format.channels, samples: samples.map { Int16(littleEndian: $0) }
                )
                headerComplete = complete
                return
            }
            offset = body + size + (size & 1)
        }
        throw AudioCheckError("\(url.lastPathComponent) has no data chunk")
    }

    /// Writes a canonical 44-byte-header PCM WAV.
    public func write(to url: URL) throws {
        var data = Data()
        func append32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        func append16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { data.append(contentsOf: $0) } }
        let dataBytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8))
        append32(36 + dataBytes)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append32(16)
        append16(1)
        append16(channels)
        append32(sampleRate)
        append32(sampleRate * channels * 2)
        append16(channels * 2)
        append16(16)
        data.append(contentsOf: Array("data".utf8))
        append32(dataBytes)
        samples.withUnsafeBytes { data.append(contentsOf: $0) }  // little-endian host
        try data.write(to: url)
    }

    /// The first channel's samples.
    public var firstChannel: [Int16] {
        guard channels > 1 else { return samples }
        return stride(from: 0, to: samples.count - channels + 1, by: channels).map { samples[$0] }
    }
}

/// The pitch of a steady tone, from how often it crosses zero.
public enum Tone {
    /// The frequency in Hz of a tone in `samples` (one channel at `sampleRate`): half the
    /// number of zero crossings per second between the first and the last crossing. Samples
    /// quieter than `threshold` are skipped (silence, or dithering around zero, would add
    /// crossings a tone does not have). Nil when fewer than two crossings are found.
    public static func frequency(of samples: some Collection<Int16>, sampleRate: Int, threshold: Int16 = 64) -> Double?
    {
        var lastSign = 0
        var first: Int?
        var last = 0
        var crossings = 0
        for (index, sample) in samples.enumerated() where abs(Int(sample)) >= Int(threshold) {
            let sign = sample > 0 ? 1 : -1
            if lastSign != 0 && sign != lastSign {
                crossings += 1
                if first == nil { first = index }
                last = index
            }
            lastSign = sign
        }
        guard let first, crossings >= 2, last > first else { return nil }
        return Double(crossings - 1) / 2 / (Double(last - first) / Double(sampleRate))
    }
}
