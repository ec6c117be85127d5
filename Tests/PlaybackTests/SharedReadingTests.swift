import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

@Suite("SharedReadings: a request for a file being read joins that reading")
@MainActor
struct SharedReadingTests {
    @Test func aRequestThatJoinsARunningReadingReturnsAtOnceAndGetsItsResult() async throws {
        // The server never answers: the first reading runs until its timeout.
        let server = try PlayerStreamTests.MuteServer()
        let uri = "http://127.0.0.1:\(server.port)/never.ogg"
        let first = Locked<Result<TrackInfo, MediaError>?>(nil)
        Thread {
            let result = Discoverer.discoverNow(uri, timeout: .seconds(5))
            first.withLock { $0 = result }
        }.start()
        #expect(
            try await Waiter.poll(timeout: .seconds(10), every: .milliseconds(20)) { SharedReadings.isReading(uri) })

        let joined = Locked<Result<TrackInfo, MediaError>?>(nil)
        let asked = ContinuousClock.now
        Discoverer.discover(uri, timeout: .seconds(5), artwork: nil) { result in joined.withLock { $0 = result } }
        #expect(ContinuousClock.now - asked < .seconds(1), "joining waits for nothing")
        #expect(joined.withLock { $0 } == nil, "the reading it joined still runs")

        #expect(
            try await Waiter.poll(timeout: .seconds(30), every: .milliseconds(50)) { joined.withLock { $0 } != nil })
        #expect(try await Waiter.poll(timeout: .seconds(5), every: .milliseconds(50)) { first.withLock { $0 } != nil })
        #expect(joined.withLock { $0 } == first.withLock { $0 }, "one reading, one result")
        #expect(joined.withLock { $0 }?.failure != nil, "a server that never answers gives no tags")
        #expect(!SharedReadings.isReading(uri))
    }
}
