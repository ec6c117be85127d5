import Glibc

/// The level of rendered audio, to check the gain a player applied.
public enum Level {
    /// The RMS level in dBFS (a full-scale square wave is 0 dBFS, a full-scale sine about
    /// -3.01) of `samples`; -infinity for silence or nothing.
    public static func rms(_ samples: some Collection<Int16>) -> Double {
        guard !samples.isEmpty else { return -.infinity }
        var sum = 0.0
        for sample in samples {
            let value = Double(sample) / 32768
            sum += value * value
        }
        let mean = sum / Double(samples.count)
        return mean > 0 ? 10 * log10(mean) : -.infinity
    }

    /// The RMS level of the first channel of `wav` between `start` and `end` seconds.
    public static func rms(of wav: WAV, from start: Double, to end: Double) -> Double {
        let channel = wav.firstChannel
        let first = max(0, min(channel.count, Int(start * Double(wav.sampleRate))))
        let last = max(first, min(channel.count, Int(end * Double(wav.sampleRate))))
        return rms(channel[first..<last])
    }

    /// The level in dBFS of a sine of `amplitude` (1: full scale).
    public static func sine(amplitude: Double) -> Double {
        20 * log10(amplitude / 2.0.squareRoot())
    }
}
