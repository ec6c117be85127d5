import Testing

@testable import Media

/// A demuxer can stop as the discoverer links it (plugins-bad's aiffparse in GStreamer 1.22):
/// a reading whose data stopped flowing is tried once more, and only a second such stop
/// fails the file.
@Suite("Discoverer: a reading whose data stopped flowing is tried once more")
struct DiscovererRetryTests {
    @Test func aReadingThatStoppedIsTriedOnceMore() throws {
        var readings = 0
        var track = TrackInfo()
        track.title = "Stall 2"
        let result = DiscovererReading.retryingOnce {
            readings += 1
            return readings == 1 ? .stoppedFlowing("Internal data stream error.") : .read(.success(track))
        }
        #expect(readings == 2)
        #expect(try result.get().title == "Stall 2")
    }

    @Test func aSecondStopFailsTheFileWithGStreamersWords() {
        var readings = 0
        let result = DiscovererReading.retryingOnce {
            readings += 1
            return .stoppedFlowing("Internal data stream error.")
        }
        #expect(readings == 2)
        guard case .failure(let error) = result else {
            Issue.record("read: \(result)")
            return
        }
        #expect(error.reason == "Internal data stream error.")
    }

    @Test func anyOtherResultIsFinal() {
        var readings = 0
        let result = DiscovererReading.retryingOnce {
            readings += 1
            return .read(.failure(MediaError("it has no audio stream")))
        }
        #expect(readings == 1)
        if case .failure(let error) = result { #expect(error.reason == "it has no audio stream") }
    }
}
