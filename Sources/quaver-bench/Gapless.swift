import Foundation

/// 16-bit PCM WAV files: enough of the format to read what the players render and to split
/// the reference signal.
struct WAV {
    var sampleRate: Int
    var channels: Int
    var bitsPerSample: Int
    /// Interleaved samples (the benchmark only uses mono).
    var samples: [Int16]
    /// Whether the header's data length matched the file (a writer that was not finalized
    /// leaves 0 or a placeholder there).
    var headerComplete = true

    init(sampleRate: Int, channels: Int, samples: [Int16]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = 16
        self.samples = samples
    }

    /// Reads a RIFF/WAVE file with a PCM (or extensible PCM) `fmt ` chunk of 16-bit samples.
    init(contentsOf url: URL) throws {
        let data = try Data(contentsOf: url)
        let bytes = [UInt8](data)
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF",
            String(decoding: bytes[8..<12], as: UTF8.self) == "WAVE"
        else { throw BenchError("\(url.lastPathComponent) is not a WAV file (\(bytes.count) bytes)") }
        var offset = 12
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt ", body + 16 <= bytes.count {
                format = (u16(body), u16(body + 2), u32(body + 4), u16(body + 14))
            } else if id == "data" {
                guard let format else { throw BenchError("\(url.lastPathComponent): data before fmt") }
                guard format.tag == 1 || format.tag == 0xFFFE, format.bits == 16 else {
                    throw BenchError("\(url.lastPathComponent): not 16-bit PCM (format \(format.tag), \(format.bits) bits)")
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
                self.init(sampleRate: format.rate, channels: format.channels, samples: samples.map { Int16(littleEndian: $0) })
                headerComplete = complete
                return
            }
            offset = body + size + (size & 1)
        }
        throw BenchError("\(url.lastPathComponent) has no data chunk")
    }

    /// Writes a canonical 44-byte-header PCM WAV.
    func write(to url: URL) throws {
        var data = Data()
        func append32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        func append16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { data.append(contentsOf: $0) } }
        let dataBytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8)); append32(36 + dataBytes)
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append32(16)
        append16(1); append16(channels); append32(sampleRate); append32(sampleRate * channels * 2); append16(channels * 2); append16(16)
        data.append(contentsOf: Array("data".utf8)); append32(dataBytes)
        samples.withUnsafeBytes { data.append(contentsOf: $0) }  // little-endian host
        try data.write(to: url)
    }
}

/// The gapless figure: one continuous sine split into two FLAC files at an exact sample,
/// rendered by each player into a WAV file, then compared with the original.
enum Gapless {
    static let sampleRate = 44100
    /// A period of exactly 100 samples: the phase at the joint is exact and easy to check.
    static let frequency = 441
    /// Quiet white noise mixed into the sine (−34 dBFS). A pure tone repeats every period, so
    /// aligning it with what a player rendered would only be known modulo 100 samples; the
    /// noise makes every stretch of the signal unique.
    static let noiseVolume = 0.02
    /// 6 s in all, split 0.3 ms past 3 s: not a multiple of any block or period size.
    static let samplesPerBuffer = 441
    static let buffers = 600
    static let firstPartSamples = 132_347

    /// The reference: every sample of the continuous signal, and the two FLAC parts.
    struct Source {
        var reference: [Int16]
        var parts: [URL]
        var splitAt: Int
    }

    /// What a rendered file shows against the reference.
    struct Analysis {
        var renderedSamples: Int
        var expectedSamples: Int
        /// Samples before the reference's first (positive) or missing from its start (negative).
        var leading: Int
        /// Samples inserted (positive) or lost (negative) between the two parts.
        var inserted: Int
        /// The reference index where the rendered signal first departs from it, if it does.
        var firstDeparture: Int?
        /// Largest difference from the reference over the aligned first part, in LSB.
        var largestDifference: Int
        var headerComplete: Bool

        var summary: String {
            var text = "\(renderedSamples) samples rendered for \(expectedSamples) (\(renderedSamples - expectedSamples >= 0 ? "+" : "")\(renderedSamples - expectedSamples)); "
            text += "\(inserted >= 0 ? "+" : "")\(inserted) at the joint, \(leading >= 0 ? "+" : "")\(leading) at the start"
            if let firstDeparture { text += "; first departs from the original at sample \(firstDeparture) (joint at \(Gapless.firstPartSamples))" }
            else { text += "; follows the original sample for sample throughout" }
            text += "; largest sample difference \(largestDifference) LSB"
            text += headerComplete ? "; WAV header finalized" : "; WAV header not finalized (length taken from the file size)"
            return text
        }
    }

    /// Makes the continuous sine (with its quiet noise) with `gst-launch-1.0 audiotestsrc`, splits it at
    /// `firstPartSamples`, encodes both parts to FLAC, and checks that GStreamer decodes each
    /// back to exactly its own samples (so that any gap found later is the player's).
    @MainActor
    static func prepare(programs: Programs, folder: URL) async throws -> Source {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let full = folder.appendingPathComponent("sine.wav")
        let log = folder.appendingPathComponent("gst-launch.log")
        let caps = "audio/x-raw,rate=\(sampleRate),channels=1,format=S16LE"
        let length = ["samplesperbuffer=\(samplesPerBuffer)", "num-buffers=\(buffers)"]
        let made = try await runProgram(
            [programs.gstLaunch, "-q", "audiomixer", "name=mix", "!", caps, "!", "wavenc", "!", "filesink", "location=\(full.path)"]
                + ["audiotestsrc", "wave=sine", "freq=\(frequency)", "volume=0.5"] + length + ["!", caps, "!", "mix."]
                + ["audiotestsrc", "wave=white-noise", "volume=\(noiseVolume)"] + length + ["!", caps, "!", "mix."],
            log: log)
        guard made.status == 0 else { throw BenchError("gst-launch-1.0 could not make the sine: \(made.output)") }
        let reference = try WAV(contentsOf: full).samples
        guard reference.count == samplesPerBuffer * buffers else {
            throw BenchError("the sine has \(reference.count) samples, not \(samplesPerBuffer * buffers)")
        }
        let pieces = [Array(reference[..<firstPartSamples]), Array(reference[firstPartSamples...])]
        var parts: [URL] = []
        for (index, piece) in pieces.enumerated() {
            let wav = folder.appendingPathComponent("part\(index + 1).wav")
            let flac = folder.appendingPathComponent("part\(index + 1).flac")
            let check = folder.appendingPathComponent("part\(index + 1)-decoded.wav")
            try WAV(sampleRate: sampleRate, channels: 1, samples: piece).write(to: wav)
            let encoded = try await runProgram([
                programs.gstLaunch, "-q", "filesrc", "location=\(wav.path)", "!", "wavparse", "!", "audioconvert",
                "!", "flacenc", "!", "filesink", "location=\(flac.path)",
            ], log: log)
            guard encoded.status == 0 else { throw BenchError("flacenc failed: \(encoded.output)") }
            let decoded = try await runProgram([
                programs.gstLaunch, "-q", "filesrc", "location=\(flac.path)", "!", "flacparse", "!", "flacdec",
                "!", "wavenc", "!", "filesink", "location=\(check.path)",
            ], log: log)
            guard decoded.status == 0, try WAV(contentsOf: check).samples == piece else {
                throw BenchError("part \(index + 1) does not decode back to its own \(piece.count) samples")
            }
            parts.append(flac)
        }
        let source = Source(reference: reference, parts: parts, splitAt: firstPartSamples)
        try selfCheck(source)
        return source
    }

    /// Checks the analysis on renderings damaged on purpose: silence inserted at the joint,
    /// samples dropped there, padding at the start. Throws when it misreads any of them.
    static func selfCheck(_ source: Source) throws {
        let reference = source.reference, split = source.splitAt
        let cases: [(name: String, samples: [Int16], inserted: Int, leading: Int)] = [
            ("1105 samples of silence at the joint",
             Array(reference[..<split]) + [Int16](repeating: 0, count: 1105) + Array(reference[split...]), 1105, 0),
            ("57 samples dropped at the joint", Array(reference[..<split]) + Array(reference[(split + 57)...]), -57, 0),
            ("100 samples dropped at the joint", Array(reference[..<split]) + Array(reference[(split + 100)...]), -100, 0),
            ("2112 samples of padding at the start", [Int16](repeating: 0, count: 2112) + reference, 0, 2112),
        ]
        for check in cases {
            let analysis = try analyse(WAV(sampleRate: sampleRate, channels: 1, samples: check.samples), source: source)
            guard analysis.inserted == check.inserted, analysis.leading == check.leading,
                check.inserted == 0 || analysis.firstDeparture.map({ abs($0 - split) <= 1 }) == true
            else {
                throw BenchError("the gapless analysis misreads a rendering with \(check.name): \(analysis.summary)")
            }
        }
    }

    /// Renders both parts through Quaver into `output`: a WAV sink in place of the sound
    /// card, so it renders as fast as it decodes. Waits for the end of the queue (Stopped),
    /// then quits Quaver, which closes the file.
    @MainActor
    static func renderQuaver(_ session: PlayerSession, programs: Programs, source: Source, output: URL) async throws {
        try? FileManager.default.removeItem(at: output)
        let sink = "audioconvert ! audio/x-raw,format=S16LE,rate=\(sampleRate),channels=1 ! wavenc ! filesink location=\(output.path)"
        let stopped = session.events.expect("PlaybackStatus Stopped at the end of the queue") { $0.playbackStatus == "Stopped" }
        try await session.start([programs.quaver, "--audio-sink", sink, "--no-resume"] + source.parts.map(\.path))
        do {
            _ = try await session.events.wait(stopped, timeout: .seconds(30))
        } catch {
            // Rendering may have ended before the first PropertiesChanged went out, in which
            // case Stopped was never a change a client could be told about.
            guard try await session.playbackStatus() == "Stopped" else { throw error }
        }
        await session.stop()
    }

    /// Renders both parts through mpv with its PCM file output, gapless, and waits for it to
    /// exit at the end of the playlist (which finalizes the file).
    @MainActor
    static func renderMPV(programs: Programs, environment: [String: String], source: Source, output: URL, log: URL) async throws {
        try? FileManager.default.removeItem(at: output)
        let result = try await runProgram([
            programs.mpv, "--no-config", "--no-video", "--ao=pcm", "--ao-pcm-file=\(output.path)", "--gapless-audio=yes",
            "--audio-format=s16", "--audio-samplerate=\(sampleRate)", "--audio-channels=mono", "--idle=no", "--no-terminal",
            "--",
        ] + source.parts.map(\.path), environment: environment, log: log, timeout: .seconds(60))
        guard result.status == 0 else { throw BenchError("mpv exited with status \(result.status); see \(log.path)") }
    }

    /// Aligns the rendered samples with the reference near the start and near the end; the
    /// difference of the two alignments is what was inserted or lost at the joint.
    static func analyse(_ wav: WAV, source: Source) throws -> Analysis {
        guard wav.sampleRate == sampleRate, wav.channels == 1 else {
            throw BenchError("rendered \(wav.sampleRate) Hz, \(wav.channels) channels; expected \(sampleRate) Hz mono")
        }
        let reference = source.reference, rendered = wav.samples
        let window = 2048, maxShift = 22050
        let headStart = 4096, tailStart = reference.count - 4096 - window
        guard let head = bestShift(rendered, reference, at: headStart, window: window, maxShift: maxShift),
            let tail = bestShift(rendered, reference, at: tailStart, window: window, maxShift: maxShift)
        else { throw BenchError("the rendered signal (\(rendered.count) samples) does not match the sine anywhere near its start or end") }

        // Walk the first alignment until the signal departs from the original: a sample off by
        // more than dithering could explain, followed by mostly more of them (one isolated
        // sample, or a zero crossing that happens to agree, decides nothing).
        let tolerance = 8
        func differs(_ index: Int) -> Bool {
            let renderedIndex = index + head
            guard renderedIndex >= 0 else { return false }
            guard renderedIndex < rendered.count else { return true }
            return abs(Int(rendered[renderedIndex]) - Int(reference[index])) > tolerance
        }
        var largest = 0
        var departure: Int?
        for index in 0..<reference.count {
            if differs(index) {
                let following = (index..<min(index + 16, reference.count)).filter(differs).count
                if following >= 8 { departure = index; break }
            } else if index + head >= 0 && index + head < rendered.count {
                largest = max(largest, abs(Int(rendered[index + head]) - Int(reference[index])))
            }
        }
        return Analysis(
            renderedSamples: rendered.count, expectedSamples: reference.count, leading: head, inserted: tail - head,
            firstDeparture: departure, largestDifference: largest, headerComplete: wav.headerComplete)
    }

    /// The shift `s` (rendered index = reference index + s) within ±`maxShift` for which the
    /// rendered samples best match `reference[start..<start+window]`, if the match is close.
    static func bestShift(_ rendered: [Int16], _ reference: [Int16], at start: Int, window: Int, maxShift: Int) -> Int? {
        var best: (shift: Int, error: Int)?
        rendered.withUnsafeBufferPointer { r in
            reference.withUnsafeBufferPointer { e in
                for shift in -maxShift...maxShift {
                    let from = start + shift
                    guard from >= 0, from + window <= r.count else { continue }
                    var error = 0
                    let limit = best?.error ?? Int.max
                    for index in 0..<window {
                        error += abs(Int(r[from + index]) - Int(e[start + index]))
                        if error >= limit { break }
                    }
                    if error < limit { best = (shift, error) }
                }
            }
        }
        guard let best, best.error <= window * 4 else { return nil }  // within 4 LSB per sample on average
        return best.shift
    }
}
