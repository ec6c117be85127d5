import ChildProcess
public import Foundation

/// What a sink played, recorded from its monitor as 8 kHz mono samples: how much of it was
/// sound (not silence) tells how much of a track was heard.
public final class MonitorRecording: Sendable {
    /// Samples a second.
    public static let rate = 8000
    /// The raw recording.
    public let file: URL
    let process: ChildProcess

    init(file: URL, process: ChildProcess) {
        self.file = file
        self.process = process
    }

    /// Seconds of sound recorded so far: 10 ms blocks whose loudest sample is above silence.
    public func heardSeconds() -> Double {
        guard let data = try? Data(contentsOf: file) else { return 0 }
        let block = Self.rate / 100
        var sounding = 0
        data.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Int16.self)
            var start = 0
            while start + block <= samples.count {
                var loudest: Int32 = 0
                for index in start..<(start + block) { loudest = max(loudest, abs(Int32(samples[index]))) }
                if loudest > 300 { sounding += 1 }
                start += block
            }
        }
        return Double(sounding) / 100
    }

    /// Whether the recorder still runs (it ends when its sink goes).
    public var isRecording: Bool { process.isRunning }
}
