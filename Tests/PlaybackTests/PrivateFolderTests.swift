import Foundation
import Logging
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer
@testable import PlaybackVocabulary

@Suite("private folders")
struct PrivateFolderTests {
    static func mode(_ path: String) -> Int {
        var status = stat()
        guard lstat(path, &status) == 0 else { return -1 }
        return Int(status.st_mode & 0o777)
    }

    @Test("files are 0600 in a 0700 folder through every rewrite, whatever the folder's mode before")
    func modesThroughRewrites() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let url = temporary.path("state/quaver")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let folder = PrivateFolder(url)
        for round in 0..<3 {
            try folder.replace("state.json", with: Data("{\"round\": \(round)}".utf8))
            #expect(Self.mode(url.appendingPathComponent("state.json").path) == 0o600)
            #expect(Self.mode(url.path) == 0o700)
        }
        #expect(try String(contentsOf: url.appendingPathComponent("state.json"), encoding: .utf8) == "{\"round\": 2}")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: url.path) == ["state.json"], "no temporary file is left"
        )
    }

    @Test("a symbolic link in the place of an owned folder is refused: its target is neither written nor made 0700")
    func symbolicLinkIsRefused() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let target = temporary.path("elsewhere")
        try FileManager.default.createDirectory(
            at: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for (link, owned) in [("cache/quaver/art", 2), ("cache2/quaver", 2), ("state/quaver", 1)] {
            let url = temporary.path(link)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target.path)
            // The link is the folder itself, or the owned folder holding it (cache2/quaver/art).
            let folder = PrivateFolder(
                link == "cache2/quaver" ? url.appendingPathComponent("art") : url, ownedComponents: owned)
            #expect(folder.refusal()?.kind == .symbolicLink)
            #expect(folder.refusal()?.path == url.path)
            #expect(throws: PrivateFolder.Failure.self) { try folder.replace("file", with: Data("x".utf8)) }
            do {
                _ = try folder.open()
                Issue.record("\(link) was opened through the link")
            } catch {
                #expect(error.kind == .symbolicLink && error.path == url.path, "\(error)")
            }
        }
        #expect(Self.mode(target.path) == 0o755)
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path).isEmpty)
    }

    @Test("the folders above the owned ones are the user's and are followed")
    func userFoldersAboveAreFollowed() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let real = temporary.path("real-cache")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: temporary.path("cache").path, withDestinationPath: real.path)
        let folder = PrivateFolder(temporary.path("cache/quaver/art"), ownedComponents: 2)
        try folder.replace("a.png", with: Data("png".utf8))
        #expect(FileManager.default.fileExists(atPath: real.appendingPathComponent("quaver/art/a.png").path))
        #expect(Self.mode(real.appendingPathComponent("quaver/art").path) == 0o700)
        #expect(Self.mode(real.appendingPathComponent("quaver").path) == 0o700, "made 0700 when Quaver makes it")
    }

    @Test("a refusal is logged once per path")
    func refusalIsLoggedOnce() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let url = temporary.path("quaver")
        try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: temporary.url.path)
        let capture = LogCapture()
        for _ in 0..<3 {
            do {
                try PrivateFolder(url).replace("state.json", with: Data())
            } catch {
                #expect(PrivateFolder.reportOnce(error, logger: capture.logger, "not saved"))
            }
        }
        #expect(
            !PrivateFolder.reportOnce(CocoaError(.fileWriteUnknown), logger: capture.logger, "not saved"),
            "not a refusal")
        #expect(capture.lines(containing: url.path, "symbolic link", "not saved").count == 1, "\(capture.messages)")
        #expect(capture.messages.count == 1)
    }

    @Test("a file over the limit is refused by its size, at once, however large it claims to be")
    func largeFileIsNotRead() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let file = temporary.path("state.json")
        let fd = open(file.path, O_WRONLY | O_CREAT, 0o600)
        #expect(ftruncate(fd, 2 << 30) == 0)  // 2 GiB, sparse
        close(fd)
        let started = ContinuousClock.now
        #expect(throws: PrivateFolder.ReadFailure.self) { try PrivateFolder.read(file, limit: 1 << 20) }
        do {
            _ = try PrivateFolder.read(file, limit: 1 << 20)
        } catch {
            guard case .tooLarge(_, let size, let limit) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(size == 2 << 30 && limit == 1 << 20)
        }
        #expect(ContinuousClock.now - started < .milliseconds(500))
        try Data("{}".utf8).write(to: file)
        #expect(try PrivateFolder.read(file, limit: 2) == Data("{}".utf8))
        #expect(throws: PrivateFolder.ReadFailure.self) { try PrivateFolder.read(file, limit: 1) }
    }

    @Test("a pipe or a folder in the place of a file is refused without waiting on it")
    func notRegularFileIsRefused() throws {
        let temporary = try TemporaryFolder()
        defer { temporary.remove() }
        let pipe = temporary.path("queue.m3u8")
        #expect(mkfifo(pipe.path, 0o600) == 0)
        do {
            _ = try PrivateFolder.read(pipe, limit: 1 << 20)
            Issue.record("a pipe was read")
        } catch {
            guard case .notRegularFile = error else {
                Issue.record("\(error)")
                return
            }
        }
        do {
            _ = try PrivateFolder.read(temporary.path("missing"), limit: 1 << 20)
            Issue.record("a missing file was read")
        } catch {
            guard case .missing = error else {
                Issue.record("\(error)")
                return
            }
        }
    }
}
