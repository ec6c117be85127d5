import Foundation
import Glibc
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

@Suite("Stream tags")
struct StreamTagsTests {
    @Test func tagsMergeFieldByFieldAndAStationNamesTheStreamUntilATitleComes() {
        var base = TrackInfo()
        base.isLive = true
        base.audioStreams = 1

        var tags = StreamTags()
        var station = StreamTags()
        station.organization = "Radio One"
        station.genres = ["Jazz"]
        tags.merge(station)
        var info = tags.applied(to: base)
        #expect(info.title == "Radio One")
        #expect(info.album == "Radio One")
        #expect(info.artists == ["Radio One"], "the station stands for the artist the stream does not name")
        #expect(info.genres == ["Jazz"])
        #expect(info.isLive && info.audioStreams == 1, "what the pipeline said is kept")

        var song = StreamTags()
        song.title = "Someone - Something"
        tags.merge(song)
        info = tags.applied(to: base)
        #expect(info.title == "Someone - Something", "an ICY title is kept whole")
        #expect(info.artists == ["Radio One"], "an ICY title is not guessed apart into an artist")
        #expect(info.album == "Radio One" && info.genres == ["Jazz"], "fields a message does not carry stay")

        // The same title again changes nothing: the player compares and publishes nothing.
        tags.merge(song)
        #expect(tags.applied(to: base) == info)
        #expect(StreamTags().isEmpty && !song.isEmpty)
    }
}

@Suite("Player: network streams (real GStreamer, a socket that never answers)")
@MainActor
struct PlayerStreamTests {
    /// A TCP socket on 127.0.0.1 that takes connections (the kernel completes them) and
    /// never reads or answers.
    final class MuteServer {
        let fd: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw MediaError("socket: \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard bound, listen(fd, 8) == 0 else {
                close(fd)
                throw MediaError("bind/listen: \(errno)")
            }
            self.fd = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(fd) }
    }

    /// An HTTP server on 127.0.0.1 that serves one file to one client as an endless stream
    /// (no length): its first bytes a few at a time (`slowRate` bytes a second) for
    /// `slowFor` (for ever when nil), then the rest at once. It stands for a server that
    /// sends, but too slowly for the decoders to make audio within the stall limit.
    final class TrickleServer: @unchecked Sendable {
        let port: UInt16
        private let listener: MuteServer
        private let stopped = Locked(false)

        init(serving data: Data, contentType: String, slowRate: Int, slowFor: Duration?) throws {
            listener = try MuteServer()
            port = listener.port
            let fd = listener.fd
            let stopped = self.stopped
            Thread.detachNewThread {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                defer { close(client) }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = recv(client, &request, request.count, 0)
                func send(_ bytes: some Collection<UInt8>) -> Bool {
                    let array = Array(bytes)
                    return array.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        == array.count
                }
                guard send(Array("HTTP/1.0 200 OK\r\nContent-Type: \(contentType)\r\n\r\n".utf8)) else { return }
                let started = ContinuousClock.now
                var sent = 0
                let piece = max(slowRate / 10, 1)
                while !stopped.withLock({ $0 }) && sent < data.count {
                    if let slowFor, ContinuousClock.now - started >= slowFor { break }
                    guard send(data[data.startIndex + sent..<data.startIndex + min(sent + piece, data.count)]) else {
                        return
                    }
                    sent += piece
                    usleep(100_000)  // the slow pace is what this server is for, not a wait
                }
                if sent < data.count, !stopped.withLock({ $0 }) { _ = send(data[(data.startIndex + sent)...]) }
                // The client reads to the end; a closed connection ends the stream.
            }
        }

        deinit { stopped.withLock { $0 = true } }
    }

    /// A server that sends a few bytes a second for three times the stall limit, then the
    /// rest: it is not silent, so the stream is waited for, and plays once its data comes.
    @Test func aStreamThatSendsSlowlyAtFirstPlaysOnceItsDataComes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        // 2 KiB at 200 bytes a second: typefinding alone needs more than the stall limit.
        let server = try TrickleServer(
            serving: try Data(contentsOf: files[0]), contentType: "audio/flac", slowRate: 200, slowFor: .seconds(2.5))
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(1)
        let stream = "http://127.0.0.1:\(server.port)/slow.flac"
        let entries = player.enqueue([stream, files[1].absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0, upTo: .seconds(30)), "\(probe.log.messages)")
        #expect(probe.playedIDs.first == entries[0].id, "the stream played first: \(probe.playedIDs)")
        #expect(player.entries[0].failure == nil)
        #expect(probe.log.lines(containing: "skipping").isEmpty, "\(probe.log.messages)")
        player.stop()
    }

    /// A server that sends, but never enough to start: skipped once the start limit (three
    /// stall limits) has passed, with a reason that says the server does send.
    @Test func aStreamThatNeverSendsEnoughIsSkippedAfterTheStartLimit() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 2, in: folder)
        let server = try TrickleServer(
            serving: try Data(contentsOf: files[0]), contentType: "audio/flac", slowRate: 50, slowFor: nil)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(1)
        let stream = "http://127.0.0.1:\(server.port)/trickle.flac"
        let entries = player.enqueue([stream, files[1].absoluteString])
        let started = ContinuousClock.now
        player.play()
        #expect(await probe.waitFor(.playing, entry: 1, upTo: .seconds(30)), "\(probe.log.messages)")
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(3), "skipped before the start limit: \(elapsed)")
        #expect(probe.playedIDs == [entries[1].id], "the stream was never shown playing")
        #expect(player.entries[0].failure == "the stream did not start within 3 s, though the server sends")
        #expect(probe.log.lines(containing: "skipping", stream).count == 1, "\(probe.log.messages)")
        player.stop()
    }

    @Test func aStreamThatNeverAnswersIsSkippedAfterTheStallTimeout() async throws {
        let server = try MuteServer()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 2, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(1)
        let stream = "http://127.0.0.1:\(server.port)/mute.mp3"
        let entries = player.enqueue([stream, files[0].absoluteString])
        let started = ContinuousClock.now
        player.play()
        // A generous deadline for a loaded machine; the skip is the player's, not souphttpsrc's
        // own I/O timeout (15 s), by the reason recorded below.
        #expect(await probe.waitFor(.playing, entry: 1, upTo: .seconds(30)), "\(probe.log.messages)")
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(1), "skipped before the timeout: \(elapsed)")
        // As they were when the file started: the 2 s file may have ended since.
        #expect(
            probe.statusesUntilPlaying[entries[1].id] == [.stopped, .playing],
            "nothing paused or stopped on the way: \(probe.statuses)")
        #expect(probe.playedIDs == [entries[1].id], "the stream was never shown playing")
        #expect(player.entries[0].failure == "no audio from the server within 1 s")
        #expect(probe.log.lines(containing: "skipping", stream).count == 1, "\(probe.log.messages)")
        player.stop()
    }

    /// Next to a stream whose server takes long to answer, then the shown track (the one
    /// before) removed, then Pause: the removed track is no longer shown, and Pause is shown at
    /// once, not once the stream connects (nothing is heard meanwhile).
    @Test func aTrackRemovedWhileAStreamConnectsIsNotShownAndPauseIsAtOnce() async throws {
        let server = try MuteServer()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(30)
        let stream = "http://127.0.0.1:\(server.port)/mute.mp3"
        let entries = player.enqueue([files[0].absoluteString, stream, files[1].absoluteString])
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        player.next()
        #expect(player.remove(id: entries[0].id))
        #expect(player.current?.id != entries[0].id, "the removed track is not shown")
        #expect(player.current?.id == entries[1].id, "the stream on its way is shown")
        let paused = ContinuousClock.now
        player.pause()
        #expect(player.status == .paused, "Pause is shown at once while the stream connects")
        #expect(await probe.wait(upTo: .seconds(2)) { player.status == .paused && player.current?.id == entries[1].id })
        #expect(ContinuousClock.now - paused < .seconds(2))
        #expect(player.entries.map(\.id) == [entries[1].id, entries[2].id])
        player.stop()
    }

    /// A stream that cannot be reached (a closed port) as the only entry stays current and
    /// playable: it is shown, the log says why it failed, and Play tries it again.
    @Test func anUnreachableOnlyStreamStaysCurrentAndPlayTriesAgain() async throws {
        let probe = try PlayerProbe.make()
        let player = probe.player
        let stream = "http://127.0.0.1:9/quaver-test-closed.mp3"
        let entries = player.enqueue([stream])
        player.play()
        #expect(
            await probe.wait(upTo: .seconds(20)) { probe.log.lines(containing: "skipping", stream).count == 1 },
            "\(probe.log.messages)")
        #expect(await probe.wait { player.status == .stopped && player.ranOut })
        #expect(player.current?.id == entries[0].id, "still shown, by its URL")
        #expect(player.entries[0].failure == nil, "not marked unplayable for good")
        #expect(player.play(), "Play has something to try")
        #expect(
            await probe.wait(upTo: .seconds(20)) { probe.log.lines(containing: stream).count >= 2 },
            "tried again: \(probe.log.messages)")
        #expect(await probe.wait { player.status == .stopped && player.current?.id == entries[0].id })
        player.stop()
    }

    /// A server that takes the connection and never sends audio, as the last entry: skipped
    /// after the stall limit with its reason, and still the current entry afterwards.
    @Test func aMuteLastStreamStaysCurrentAfterTheStallLimit() async throws {
        let server = try MuteServer()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 0.5, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(1)
        let stream = "http://127.0.0.1:\(server.port)/mute.mp3"
        let entries = player.enqueue([files[0].absoluteString, stream])
        player.play()
        #expect(
            await probe.wait(upTo: .seconds(30)) {
                probe.log.lines(containing: "skipping", stream, "within 1 s").count == 1
            }, "\(probe.log.messages)")
        #expect(await probe.wait { player.status == .stopped })
        #expect(player.current?.id == entries[1].id)
        #expect(player.canGoPrevious)
        player.stop()
    }

    /// playbin takes the stream before the file ends (gapless) and would wait for it for ever:
    /// the wait counts from the handover.
    @Test func aStreamHandedOverAfterAFileIsSkippedWhenItNeverAnswers() async throws {
        let server = try MuteServer()
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(2, seconds: 1, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(1)
        let stream = "http://127.0.0.1:\(server.port)/mute.mp3"
        let entries = player.enqueue([files[0].absoluteString, stream, files[1].absoluteString])
        #expect(await probe.wait { player.current?.info != nil }, "the first entry is read ahead")
        player.play()
        #expect(await probe.waitFor(.playing, entry: 2, upTo: .seconds(30)), "\(probe.log.messages)")
        #expect(probe.playedIDs == [entries[0].id, entries[2].id])
        // As they were when the last file started (it lasts 1 s, and may have ended since).
        #expect(probe.statusesUntilPlaying[entries[2].id] == [.stopped, .playing], "\(probe.statuses)")
        #expect(player.entries[1].failure == "no audio from the server within 1 s")
        #expect(probe.log.lines(containing: "skipping", stream).count == 1, "\(probe.log.messages)")
        player.stop()
    }

    /// Each stream handed over that fails is skipped for its own error, at once: the echoes
    /// of the first failure do not swallow a later stream's.
    @Test func everyFailedHandOverIsSkippedForItsOwnError() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(3, seconds: 1, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        player.streamStallTimeout = .seconds(60)  // a skip for silence would come too late
        let streams = ["http://127.0.0.1:9/quaver-first.mp3", "http://127.0.0.1:9/quaver-second.mp3"]
        player.enqueue([
            files[0].absoluteString, streams[0], files[1].absoluteString, streams[1], files[2].absoluteString,
        ])
        #expect(await probe.wait { player.current?.info != nil }, "the first entry is read ahead")
        player.play()
        for stream in streams {
            #expect(
                await probe.wait(upTo: .seconds(20)) { probe.log.lines(containing: "skipping", stream).count == 1 },
                "\(stream): \(probe.log.messages)")
        }
        #expect(await probe.waitFor(.playing, entry: 4, upTo: .seconds(20)), "\(probe.log.messages)")
        player.stop()
    }
}
