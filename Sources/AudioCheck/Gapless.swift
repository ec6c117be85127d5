public import Foundation

/// The gapless check: one continuous sine split into two FLAC files at an exact sample,
/// rendered by a player into a WAV file, then compared with the original. Used by the
/// benchmark (Quaver against mpv) and by the integration tests (Quaver alone).
public enum Gapless {
    public static let sampleRate = 44100
    /// A period of exactly 100 samples: the phase at the joint is exact and easy to check.
    public static let frequency = 441
    /// Quiet white noise mixed into the sine (−34 dBFS). A pure tone repeats every period, so
    /// aligning it with what a player rendered would only be known modulo 100 samples; the
    /// noise makes every stretch of the signal unique.
    public static let noiseVolume = 0.02
    /// 6 s in all, split 0.3 ms past 3 s: not a multiple of any block or period size.
    public static let samplesPerBuffer = 441
    public static let buffers = 600
    public static let firstPartSamples = 132_347

    /// The caps a player's output is converted to before `wavenc`, so that it can be
    /// compared with the reference sample for sample.
    public static let renderCaps = "audio/x-raw,format=S16LE,rate=\(sampleRate),channels=1"

    /// The reference: every sample of the continuous signal, and the two FLAC parts.
    public struct Source: Sendable {
        public var reference: [Int16]
        public var parts: [URL]
        public var splitAt: Int

        /// The length of each part, in seconds.
        public var partSeconds: [Double] {
            [
                Double(splitAt) / Double(Gapless.sampleRate),
                Double(reference.count - splitAt) / Double(Gapless.sampleRate),
            ]
        }
    }

    /// What a rendered file shows against the reference.
    public struct Analysis: Sendable {
        public var renderedSamples: Int
        public var expectedSamples: Int
        /// Samples before the reference's first (positive) or missing from its start (negative).
        public var leading: Int
        /// Samples inserted (positive) or lost (negative) between the two parts.
        public var inserted: Int
        /// The reference index where the rendered signal first departs from it, if it does.
        public var firstDeparture: Int?
        /// Largest difference from the reference over the aligned first part, in LSB.
        public var largestDifference: Int
        public var headerComplete: Bool

        public var summary: String {
            var text =
                "\(renderedSamples) samples rendered for \(expectedSamples) (\(renderedSamples - expectedSamples >= 0 ? "+" : "")\(renderedSamples - expectedSamples)); "
            text +=
                "\(inserted >= 0 ? "+" : "")\(inserted) at the joint, \(leading >= 0 ? "+" : "")\(leading) at the start"
            if let firstDeparture {
                text +=
                    "; first departs from the original at sample \(firstDeparture) (joint at \(Gapless.firstPartSamples))"
            } else {
                text += "; follows the original sample for sample throughout"
            }
            text += "; largest sample difference \(largestDifference) LSB"
            text +=
                headerComplete
                ? "; WAV header finalized" : "; WAV header not finalized (length taken from the file size)"
            return text
        }
    }

    /// Runs a program to its end: its exit status and what it printed.
    public typealias Runner = @Sendable ([String]) async throws -> (status: Int32, output: String)

    /// Makes the continuous sine (with its quiet noise) with `gst-launch-1.0 audiotestsrc`,
    /// splits it at `firstPartSamples`, encodes both parts to FLAC, and checks that GStreamer
    /// decodes each back to exactly its own samples (so that any gap found later is the
    /// player's). `run` runs `gst-launch-1.0` (the program at `gstLaunch`).
    public static func prepare(gstLaunch: String, folder: URL, run: Runner) async throws -> Source {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let full = folder.appendingPathComponent("sine.wav")
        let caps = "audio/x-raw,rate=\(sampleRate),channels=1,format=S16LE"
        let length = ["samplesperbuffer=\(samplesPerBuffer)", "num-buffers=\(buffers)"]
        let made = try await run(
            [
                gstLaunch, "-q", "audiomixer", "name=mix", "!", caps, "!", "wavenc", "!", "filesink",
                "location=\(full.path)",
            ]
                + ["audiotestsrc", "wave=sine", "freq=\(frequency)", "volume=0.5"] + length + ["!", caps, "!", "mix."]
                + ["audiotestsrc", "wave=white-noise", "volume=\(noiseVolume)"] + length + ["!", caps, "!", "mix."])
        guard made.status == 0 else { throw AudioCheckError("gst-launch-1.0 could not make the sine: \(made.output)") }
        let reference = try WAV(contentsOf: full).samples
        guard reference.count == samplesPerBuffer * buffers else {
            throw AudioCheckError("the sine has \(reference.count) samples, not \(samplesPerBuffer * buffers)")
        }
        let pieces = [Array(reference[..<firstPartSamples]), Array(reference[firstPartSamples...])]
        var parts: [URL] = []
        for (index, piece) in pieces.enumerated() {
            let wav = folder.appendingPathComponent("part\(index + 1).wav")
            let flac = folder.appendingPathComponent("part\(index + 1).flac")
            let check = folder.appendingPathComponent("part\(index + 1)-decoded.wav")
            try WAV(sampleRate: sampleRate, channels: 1, samples: piece).write(to: wav)
            let encoded = try await run([
                gstLaunch, "-q", "filesrc", "location=\(wav.path)", "!", "wavparse", "!", "audioconvert",
                "!", "flacenc", "!", "filesink", "location=\(flac.path)",
            ])
            guard encoded.status == 0 else { throw AudioCheckError("flacenc failed: \(encoded.output)") }
            let decoded = try await run([
                gstLaunch, "-q", "filesrc", "location=\(flac.path)", "!", "flacparse", "!", "flacdec",
                "!", "wavenc", "!", "filesink", "location=\(check.path)",
            ])
            guard decoded.status == 0, try WAV(contentsOf: check).samples == piece else {
                throw AudioCheckError("part \(index + 1) does not decode back to its own \(piece.count) samples")
            }
            parts.append(flac)
        }
        let source = Source(reference: reference, parts: parts, splitAt: firstPartSamples)
        try selfCheck(source)
        return source
    }

    /// Checks the analysis on renderings damaged on purpose: silence inserted at the joint,
    /// samples dropped there, padding at the start. Throws when it misreads any of them.
    public static func selfCheck(_ source: Source) throws {
        let reference = source.reference
        let split = source.splitAt
        let cases: [(name: String, samples: [Int16], inserted: Int, leading: Int)] = [
            (
                "1105 samples of silence at the joint",
                Array(reference[..<split]) + [Int16](repeating: 0, count: 1105) + Array(reference[split...]), 1105, 0
            ),
            ("57 samples dropped at the joint", Array(reference[..<split]) + Array(reference[(split + 57)...]), -57, 0),
            (
                "100 samples dropped at the joint", Array(reference[..<split]) + Array(reference[(split + 100)...]),
                -100, 0
            ),
            ("2112 samples of padding at the start", [Int16](repeating: 0, count: 2112) + reference, 0, 2112),
        ]
        for check in cases {
            let analysis = try analyse(WAV(sampleRate: sampleRate, channels: 1, samples: check.samples), source: source)
            guard analysis.inserted == check.inserted, analysis.leading == check.leading,
                check.inserted == 0 || analysis.firstDeparture.map({ abs($0 - split) <= 1 }) == true
            else {
                throw AudioCheckError(
                    "the gapless analysis misreads a rendering with \(check.name): \(analysis.summary)")
            }
        }
    }

    /// Aligns the rendered samples with the reference near the start and near the end; the
    /// difference of the two alignments is what was inserted or lost at the joint.
    public static func analyse(_ wav: WAV, source: Source) throws -> Analysis {
        guard wav.sampleRate == sampleRate, wav.channels == 1 else {
            throw AudioCheckError(
                "rendered \(wav.sampleRate) Hz, \(wav.channels) channels; expected \(sampleRate) Hz mono")
        }
        let reference = source.reference
        let rendered = wav.samples
        let window = 2048
        let maxShift = 22050
        let headStart = 4096
        let tailStart = reference.count - 4096 - window
        guard let head = bestShift(rendered, reference, at: headStart, window: window, maxShift: maxShift),
            let tail = bestShift(rendered, reference, at: tailStart, window: window, maxShift: maxShift)
        else {
            throw AudioCheckError(
                "the rendered signal (\(rendered.count) samples) does not match the sine anywhere near its start or end"
            )
        }

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
                if following >= 8 {
                    departure = index
                    break
                }
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
    static func bestShift(_ rendered: [Int16], _ reference: [Int16], at start: Int, window: Int, maxShift: Int) -> Int?
    {
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
