import Dispatch
import Foundation
import Glibc
import TestKit
import Testing
import ToneGenerator

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

/// Files no reader should open: made in a folder with a short name (a socket's path is
/// limited to 107 bytes).
struct TrapFolder {
    let folder: TemporaryFolder
    var url: URL { folder.url }

    init() throws { folder = try TemporaryFolder("traps") }

    func remove() { folder.remove() }

    func path(_ name: String) -> URL { folder.path(name) }

    @discardableResult
    func fifo(_ name: String) throws -> URL {
        let file = path(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard mkfifo(file.path, 0o600) == 0 else { throw MediaError("mkfifo \(file.path): \(errno)") }
        return file
    }

    /// A Unix socket bound at `name` and closed: its file stays, and nobody answers at it.
    @discardableResult
    func socket(_ name: String) throws -> URL {
        let file = path(name)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw MediaError("socket: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(file.path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw MediaError("socket path too long: \(file.path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw MediaError("bind \(file.path): \(errno)") }
        return file
    }

    @discardableResult
    func link(_ name: String, to target: String) throws -> URL {
        let file = path(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: target)
        return file
    }
}

/// Runs `body` on a thread of its own and gives its result, or nil when it has not returned
/// within `limit`: a call blocked for good (in `open` on a FIFO) fails the test rather than
/// hanging it.
func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + limit.inSeconds) == .success else { return nil }
    return result.withLock { $0 }
}

@Suite("files that are not regular: FIFOs, sockets, devices, /proc, link loops")
struct SpecialFileTests {
    @Test func theFolderScanSkipsEachWithOneLineNamingItAndWhy() throws {
        let traps = try TrapFolder()
        defer { traps.remove() }
        try traps.fifo("music/01 song.mp3")
        try traps.socket("music/02 socket.flac")
        try traps.link("music/03 zero.flac", to: "/dev/zero")
        try traps.link("music/04 loop.flac", to: "04 loop.flac")
        try traps.link("music/05 status.flac", to: "/proc/self/status")
        try traps.link("music/06 proc", to: "/proc/self")
        try traps.link("music/06 root", to: "/proc/self/root")  // the whole file system
        try traps.folder.write("elsewhere/real.flac", "x")
        try traps.link("music/07 linked.flac", to: traps.path("elsewhere/real.flac").path)
        try traps.folder.write("music/08 good.flac", "x")
        try traps.fifo("music/notes.txt")  // not named as audio: not looked at
        let log = LogCapture()
        let files = within(.seconds(10)) { MediaSources.mediaFiles(in: traps.path("music"), logger: log.logger) }
        #expect(files?.map(\.lastPathComponent) == ["07 linked.flac", "08 good.flac"])
        let expected = [
            "01 song.mp3": "not a regular file (a FIFO)",
            "02 socket.flac": "not a regular file (a socket)",
            "03 zero.flac": "not a regular file (a character device)",
            "04 loop.flac": "a loop of symbolic links",
            "05 status.flac": "a file of the kernel's /proc or /sys",
            "06 proc": "a folder of the kernel's /proc or /sys",
            "06 root": "a folder of the kernel's /proc or /sys",
        ]
        for (name, reason) in expected {
            let lines = log.lines(containing: traps.path("music/" + name).path)
            #expect(lines.count == 1 && lines.first?.contains(reason) == true, "\(name): \(lines)")
        }
        #expect(log.messages(atLeast: .warning).count == expected.count, "\(log.messages)")
    }

    @Test func pathsAndURIsNamingThemAreSkippedAndTheRestKept() throws {
        let traps = try TrapFolder()
        defer { traps.remove() }
        let fifo = try traps.fifo("fifo.flac")
        let socket = try traps.socket("socket.flac")
        let loop = try traps.link("loop.flac", to: "loop.flac")
        try traps.folder.write("good.flac", "x")
        let arguments = [
            fifo.path, fifo.absoluteString, socket.path, loop.path, "/dev/null", "/dev/zero", "file:///dev/urandom",
            "/proc/self/status", "/proc/self/root", "/proc/self/cwd", "/sys/kernel", traps.path("good.flac").path,
        ]
        let log = LogCapture()
        let result = within(.seconds(10)) { MediaSources.expand(arguments, logger: log.logger) }
        #expect(result == [traps.folder.uri("good.flac")])
        for argument in arguments.dropLast() {
            #expect(log.lines(containing: "skipping \(argument): ").count == 1, "\(argument): \(log.messages)")
        }
        #expect(log.lines(containing: "not a regular file (a FIFO)").count == 2)
        #expect(log.lines(containing: "a loop of symbolic links").count == 1)
        #expect(log.lines(containing: "not a regular file (a character device)").count == 3)
    }

    @Test func theDiscovererFailsAtOnceNamingWhatTheFileIs() throws {
        let traps = try TrapFolder()
        defer { traps.remove() }
        let cases = [
            (try traps.fifo("fifo.flac").absoluteString, "not a regular file (a FIFO)"),
            (try traps.socket("socket.flac").absoluteString, "not a regular file (a socket)"),
            (try traps.link("zero.flac", to: "/dev/zero").absoluteString, "not a regular file (a character device)"),
            (try traps.link("loop.flac", to: "loop.flac").absoluteString, "a loop of symbolic links"),
            ("file:///proc/self/status", "a file of the kernel's /proc or /sys"),
            (
                try traps.link("status.flac", to: "/proc/self/status").absoluteString,
                "a file of the kernel's /proc or /sys"
            ),
        ]
        for (uri, reason) in cases {
            let result = within(.seconds(10)) { Discoverer.discoverNow(uri, timeout: .seconds(2)) }
            #expect(result?.failure?.reason.hasPrefix(reason) == true, "\(uri): \(String(describing: result))")
        }
    }

    @Test func aLinkToATrackPlaysLikeTheTrack() async throws {
        let traps = try TrapFolder()
        defer { traps.remove() }
        let track = try await Media.tracks(1, seconds: 0.3, in: traps.folder)[0]
        let link = try traps.link("link.flac", to: track.path)
        let info = try Discoverer.discoverNow(link.absoluteString).get()
        #expect(info.title == "Track 1")
        #expect(MediaSources.expand([link.path], logger: LogCapture().logger) == [link.absoluteString])
    }

    @Test func readersOfOneFileAtOnceShareOneReading() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let track = try await Media.tracks(1, seconds: 0.3, in: folder)[0].absoluteString
        let results = Locked<[Result<TrackInfo, MediaError>]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let result = Discoverer.discoverNow(track)
            results.withLock { $0.append(result) }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 6)
        #expect(all.allSatisfy { (try? $0.get())?.title == "Track 1" })
        #expect(Set(all.map { try? $0.get() }.map { $0?.duration }).count == 1)
    }

    @Test func aRequestIsAnsweredByAReadingBegunSinceNeverByAnOlderOne() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cover = try TrackGenerator.image(color: 0x70_1020)
        var track = TrackGenerator.numbered(count: 1, seconds: 0.3)[0]
        track.pictures = [.init(cover)]
        let uri = try TrackGenerator.generate([track], into: folder.url)[0].absoluteString
        let cache = ArtworkCache(folder: folder.path("art"), logger: LogCapture().logger)
        let asked = ContinuousClock.now
        let first = try Discoverer.discoverNow(uri, timeout: .seconds(5), artwork: cache, askedAt: nil).get()
        let image = try #require(first.artworkURL.flatMap(URL.init(string:)))
        try FileManager.default.removeItem(at: image)
        // Asked before the first reading began: it answers, and nothing is stored again.
        let second = try Discoverer.discoverNow(uri, timeout: .seconds(5), artwork: cache, askedAt: asked).get()
        #expect(second == first)
        #expect(!FileManager.default.fileExists(atPath: image.path))
        // Asked after it began: the file is read again, and the image stored again.
        let third = try Discoverer.discoverNow(uri, timeout: .seconds(5), artwork: cache, askedAt: .now).get()
        #expect(third == first)
        #expect(FileManager.default.fileExists(atPath: image.path))
    }

    @MainActor
    @Test func requestsForAFileQueuedBehindItsReadingAreAnsweredByIt() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let tracks = try await Media.tracks(2, seconds: 0.3, in: folder).map(\.absoluteString)
        let discoverer = Discoverer()
        var answered: [String] = []
        // The readings wait until every request is made: on a busy machine the first one
        // could otherwise end before the later requests for its file come.
        let gate = DispatchSemaphore(value: 0)
        discoverer.queue.async { gate.wait() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let order = [tracks[0], tracks[1], tracks[0], tracks[0]]
            for (number, uri) in order.enumerated() {
                discoverer.discover(uri) { result in
                    answered.append("\(number): \((try? result.get())?.title ?? "-")")
                    if answered.count == order.count { done.resume() }
                }
            }
            gate.signal()
        }
        // The two later requests for the first track join its reading, in the order asked.
        #expect(answered == ["0: Track 1", "2: Track 1", "3: Track 1", "1: Track 2"])
    }
}

@Suite("MediaSources: playlists that never end")
struct HostilePlaylistTests {
    @Test(.timeLimit(.minutes(1)))
    func aPlaylistNamingItselfTenTimesIsReadOnceAndTheRestFollows() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("after.flac", "x")
        let bomb = try folder.write("bomb.m3u", String(repeating: "bomb.m3u\n", count: 10))
        let log = LogCapture()
        let result = MediaSources.expand([bomb.path, folder.path("after.flac").path], logger: log.logger)
        #expect(result == [folder.uri("after.flac")])
        #expect(log.lines(containing: "bomb.m3u").count == 1, "\(log.messages)")
        #expect(log.lines(containing: "bomb.m3u", "read already").count == 1)
        #expect(log.messages.count == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func playlistsNamingEachOtherAreEachReadOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b.flac", "x")
        try folder.write("ring-a.m3u", "a.flac\nring-b.m3u\n")
        try folder.write("ring-b.m3u", "ring-a.m3u\nb.flac\nsub/../ring-a.m3u\n")
        let log = LogCapture()
        let result = MediaSources.expand([folder.path("ring-a.m3u").path], logger: log.logger)
        #expect(result == [folder.uri("a.flac"), folder.uri("b.flac")])
        #expect(
            log.lines(containing: "ring-a.m3u", "read already").count == 1, "one line however often: \(log.messages)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aChainOfPlaylistsEachNamingTheNextTenTimesQueuesItsTrackOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("track.flac", "x")
        for level in 0..<6 {
            try folder.write("fan-\(level).m3u", String(repeating: "fan-\(level + 1).m3u\n", count: 10))
        }
        try folder.write("fan-6.m3u", "track.flac\n")
        let log = LogCapture()
        let started = ContinuousClock.now
        let result = MediaSources.expand([folder.path("fan-0.m3u").path], logger: log.logger)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(result == [folder.uri("track.flac")])
        #expect(log.messages.count == 6, "one line per playlist named again: \(log.messages)")
    }

    @Test func aPlaylistNamedTwiceInOneLoadIsReadOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        let list = try folder.write("list.m3u", "a.flac\n")
        let log = LogCapture()
        // Through a link: the same file, by device and inode.
        try FileManager.default.createSymbolicLink(
            atPath: folder.path("alias.m3u").path, withDestinationPath: list.path)
        #expect(
            MediaSources.expand([list.path, folder.path("alias.m3u").path], logger: log.logger) == [
                folder.uri("a.flac")
            ])
        #expect(log.lines(containing: "read already").count == 1)
        // Each load reads it anew.
        #expect(MediaSources.expand([list.path], logger: log.logger) == [folder.uri("a.flac")])
    }

    @Test func playlistsOfFIFOsSocketsDevicesAndProcAreSkippedEntryByEntry() throws {
        let traps = try TrapFolder()
        defer { traps.remove() }
        try traps.fifo("fifo.flac")
        try traps.fifo("fifo.m3u")
        try traps.socket("socket.m3u")
        try traps.link("zero.m3u", to: "/dev/zero")
        try traps.link("urandom.pls", to: "/dev/urandom")
        try traps.link("loop.m3u8", to: "loop.m3u8")
        try traps.folder.write("good.flac", "x")
        let entries = [
            "fifo.flac", "fifo.m3u", "socket.m3u", "zero.m3u", "urandom.pls", "loop.m3u8", "/dev/zero", "/dev/stdin",
            "/dev/fd/",
            "/proc/self/status", "/proc/self/root/", "/proc/kmsg", "/sys/power/state", "good.flac",
        ]
        let playlist = try traps.folder.write("traps.m3u", entries.joined(separator: "\n"))
        let log = LogCapture()
        let result = within(.seconds(20)) { MediaSources.expand([playlist.path], logger: log.logger) }
        #expect(result == [traps.folder.uri("good.flac")])
        #expect(log.messages(atLeast: .warning).count == entries.count - 1, "one line per trap: \(log.messages)")
        #expect(
            log.lines(containing: "zero.m3u", "not a regular file (a character device)").count == 1, "\(log.messages)")
        #expect(log.lines(containing: "fifo.m3u", "not a regular file (a FIFO)").count == 1, "\(log.messages)")
    }

    @Test func linesOverTheLimitAreSkippedWithOneWarningForTheFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b.flac", "x")
        let huge = String(repeating: "y", count: 10 << 20)
        let long = String(repeating: "t", count: 1 << 20)
        let text =
            "[playlist]\nFile1=a.flac\nFile2=\(huge).flac\nTitle2=\(long)\nFile3=b.flac\n; \(String(repeating: "z", count: 9 << 10))\n"
        let playlist = try folder.write("long.pls", text)
        let log = LogCapture()
        let started = ContinuousClock.now
        let result = MediaSources.expand([playlist.path], logger: log.logger)
        let elapsed = ContinuousClock.now - started
        #expect(result == [folder.uri("a.flac"), folder.uri("b.flac")])
        #expect(log.messages == ["playlist \(playlist.path): skipped 3 lines longer than 8 KiB"])
        #expect(elapsed < .seconds(3), "read in \(elapsed)")
        // A line of exactly the limit is kept.
        let name = String(repeating: "n", count: MediaSources.maximumLineBytes - 5) + ".flac"
        let edge = try folder.write("edge.m3u", name + "\n")
        #expect(MediaSources.playlistEntries(edge, logger: LogCapture().logger) == [name])
    }

    @Test func aPlaylistOverTheSizeLimitIsReadUpToIt() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try folder.write("a.flac", "x")
        try folder.write("b.flac", "x")
        try folder.write("c.flac", "x")
        // Sparse, 40 MiB: a track first, one whose line the limit cuts, one past the limit.
        let limit = MediaSources.maximumPlaylistBytes
        let playlist = try folder.write("huge.pls", "[playlist]\nFile1=a.flac\n")
        let handle = try FileHandle(forWritingTo: playlist)
        try handle.seek(toOffset: UInt64(limit - 8))
        try handle.write(contentsOf: Data("\nFile2=b.flac\n".utf8))
        try handle.seek(toOffset: UInt64(limit + (1 << 20)))
        try handle.write(contentsOf: Data("\nFile3=c.flac\n".utf8))
        try handle.truncate(atOffset: 40 << 20)
        try handle.close()
        let log = LogCapture()
        #expect(MediaSources.expand([playlist.path], logger: log.logger) == [folder.uri("a.flac")])
        #expect(
            log.lines(containing: playlist.path, "is 40 MiB: only its first 16 MiB are read").count == 1,
            "\(log.messages)")
        #expect(log.messages(atLeast: .warning).count == 2, "the limit, and the NUL bytes' line: \(log.messages)")
    }
}
