import Foundation
import Glibc
import Logging
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// Watches a `PlaylistFolder` through `onChange`: conditions are re-checked on each change
/// (and, for `watchedPath`, which no callback announces, every 20 ms), for up to 5 s.
@MainActor
private final class PlaylistFolderProbe: MainActorWaiter {
    let folder: PlaylistFolder
    let log = LogCapture()
    /// The `retitled` argument of each `onChange` call, in order.
    private(set) var changes: [[PlaylistItem]] = []

    init(_ url: URL) {
        folder = PlaylistFolder(folder: url, logger: log.logger)
        super.init()
        folder.onChange = { [weak self] retitled in
            self?.changes.append(retitled)
            self?.recheck()
        }
    }

    var titles: [String] { folder.playlists.map(\.title) }
    var fileNames: [String] { folder.playlists.map(\.url.lastPathComponent) }

    func item(named name: String) -> PlaylistItem? {
        folder.playlists.first { $0.url.lastPathComponent == name }
    }

    func until(_ condition: @escaping @MainActor (PlaylistFolder) -> Bool) async -> Bool {
        // A generous deadline: a loaded machine can take seconds to run the main queue.
        await wait(upTo: .seconds(20), poll: .milliseconds(20)) { [folder] in condition(folder) }
    }

    var warnings: [String] { log.messages(atLeast: .warning) }
}

private func inode(_ url: URL) throws -> UInt64 {
    try #require(FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? UInt64)
}

private func setModified(_ url: URL, _ seconds: TimeInterval) throws {
    try FileManager.default.setAttributes(
        [.modificationDate: Date(timeIntervalSince1970: seconds)], ofItemAtPath: url.path)
}

@Suite("PlaylistFolder: scanning")
@MainActor
struct PlaylistFolderScanTests {
    @Test func findsOnlyPlaylistFilesDirectlyInside() throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let a = try temp.write("a.m3u", "one.flac\n")
        try temp.write("B.M3U8", "two.flac\n")
        try temp.write("c.Pls", "[playlist]\nFile1=three.flac\n")
        try temp.write("notes.txt", "#PLAYLIST:Not a playlist\n")
        try temp.write("a.m3u.bak")
        try temp.write("m3u")
        try temp.write(".hidden.m3u")
        try temp.write("sub/nested.m3u")
        try temp.makeFolder("folder.m3u")
        try setModified(a, 1_000_000)

        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        #expect(probe.fileNames == ["a.m3u", "B.M3U8", "c.Pls"])
        #expect(probe.folder.playlists.map(\.id).sorted() == [1, 2, 3])
        #expect(probe.folder.playlists.allSatisfy { $0.url.deletingLastPathComponent().path == temp.url.path })
        #expect(probe.item(named: "a.m3u")?.modified == Date(timeIntervalSince1970: 1_000_000))
        for item in probe.folder.playlists {
            #expect(probe.folder.playlist(id: item.id) == item)
        }
        #expect(probe.folder.playlist(id: 0) == nil)
        #expect(probe.folder.playlist(id: 4) == nil)
        #expect(probe.changes.isEmpty, "the first scan is read from `playlists`, not announced")
        #expect(probe.warnings.isEmpty)
    }

    @Test func titleComesFromThePlaylistDirectiveElseTheFileName() throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        try temp.write("road.m3u", "#EXTM3U\n#PLAYLIST: Road Trip \nsong.flac\n")
        try temp.write("bom.m3u8", "\u{FEFF}#playlist:Morning ☀︎\r\nsong.flac\r\n")
        try temp.write("blank.m3u", "#PLAYLIST:   \nsong.flac\n")
        try temp.write("My.Mix.m3u", "#EXTM3U\nsong.flac\n")
        try temp.write("radio.pls", "[playlist]\n#PLAYLIST:Not for pls\nFile1=song.flac\n")
        try temp.write("empty.m3u")

        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        #expect(probe.item(named: "road.m3u")?.title == "Road Trip")
        #expect(probe.item(named: "bom.m3u8")?.title == "Morning ☀︎")
        #expect(probe.item(named: "blank.m3u")?.title == "blank")
        #expect(probe.item(named: "My.Mix.m3u")?.title == "My.Mix")
        #expect(probe.item(named: "radio.pls")?.title == "radio")
        #expect(probe.item(named: "empty.m3u")?.title == "empty")
    }

    @Test func unusableEntriesAreLoggedOnceAndLeftOut() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let target = try temp.write("sub/real.m3u", "#PLAYLIST:Linked\n")
        try FileManager.default.createSymbolicLink(
            atPath: temp.path("linked.m3u").path, withDestinationPath: target.path)
        try FileManager.default.createSymbolicLink(atPath: temp.path("loop.m3u").path, withDestinationPath: "loop.m3u")
        try FileManager.default.createSymbolicLink(
            atPath: temp.path("dangling.m3u").path, withDestinationPath: "nowhere.m3u")
        #expect(mkfifo(temp.path("pipe.m3u").path, 0o600) == 0)

        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        #expect(probe.titles == ["Linked"])
        #expect(probe.log.lines(containing: temp.path("loop.m3u").path, "Too many levels of symbolic links").count == 1)
        #expect(probe.log.lines(containing: temp.path("dangling.m3u").path, "No such file or directory").count == 1)
        #expect(probe.log.lines(containing: temp.path("pipe.m3u").path, "not a regular file (a FIFO)").count == 1)

        // Another rescan does not repeat the warnings.
        try temp.write("more.m3u")
        #expect(await probe.until { $0.playlists.count == 2 })
        #expect(probe.warnings.count == 3)
    }
}

@Suite("PlaylistFolder: watching")
@MainActor
struct PlaylistFolderWatchTests {
    @Test func aNewFileIsNoticed() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        try temp.write("first.m3u")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let first = try #require(probe.item(named: "first.m3u"))

        try temp.write("second.m3u", "#PLAYLIST:Second\n")
        #expect(await probe.until { $0.playlists.count == 2 })
        #expect(probe.changes.count >= 1)
        #expect(probe.changes.last == [], "a new playlist is not a retitled one")
        let second = try #require(probe.item(named: "second.m3u"))
        #expect(second.title == "Second")
        #expect(second.id > first.id)
        #expect(probe.item(named: "first.m3u")?.id == first.id)
    }

    @Test func aBurstOfFilesGivesOneRescan() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        // Written while the main actor is busy here, so their events are all pending at once.
        for number in 1...20 { try temp.write("burst \(number).m3u") }
        #expect(await probe.until { $0.playlists.count == 20 })
        await probe.elapse(.milliseconds(200))
        #expect(probe.folder.scans == 2, "the first scan and one for the burst")
        #expect(probe.changes.count == 1)
        #expect(probe.titles.first == "burst 1" && probe.titles.last == "burst 20")
    }

    @Test func aDeletedFileIsNoticed() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let doomed = try temp.write("doomed.m3u")
        try temp.write("kept.m3u")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let kept = try #require(probe.item(named: "kept.m3u"))
        let doomedID = try #require(probe.item(named: "doomed.m3u")?.id)

        try FileManager.default.removeItem(at: doomed)
        #expect(await probe.until { $0.playlists.count == 1 })
        #expect(probe.changes.count >= 1)
        #expect(probe.folder.playlists == [kept])
        #expect(probe.folder.playlist(id: doomedID) == nil)
    }

    @Test func aRenamedFileKeepsItsIdAndIsReportedRetitled() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        try temp.write("Alpha.m3u", "a.flac\n")
        try temp.write("Fixed.m3u", "#PLAYLIST:Fixed Title\n")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let alpha = try #require(probe.item(named: "Alpha.m3u"))
        let fixed = try #require(probe.item(named: "Fixed.m3u"))

        #expect(rename(temp.path("Alpha.m3u").path, temp.path("Beta.M3U").path) == 0)
        #expect(await probe.until { _ in probe.item(named: "Beta.M3U") != nil })
        let beta = try #require(probe.item(named: "Beta.M3U"))
        #expect(beta.id == alpha.id)
        #expect(beta.title == "Beta")
        #expect(probe.fileNames == ["Beta.M3U", "Fixed.m3u"])
        #expect(probe.changes.last == [beta])

        // Renamed with its title kept by the directive: changed, but not retitled.
        let changesBefore = probe.changes.count
        #expect(rename(temp.path("Fixed.m3u").path, temp.path("Other.m3u").path) == 0)
        #expect(await probe.until { _ in probe.item(named: "Other.m3u") != nil })
        let other = try #require(probe.item(named: "Other.m3u"))
        #expect(other.id == fixed.id)
        #expect(other.title == "Fixed Title")
        #expect(probe.changes.count > changesBefore)
        #expect(probe.changes.last == [])
        #expect(probe.folder.playlists.count == 2)
    }

    @Test func aFileRewrittenInPlaceIsRetitled() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let file = try temp.write("mix.m3u", "#PLAYLIST:Old Name\n")
        try setModified(file, 1000)
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let before = try #require(probe.item(named: "mix.m3u"))
        let oldInode = try inode(file)

        let handle = try FileHandle(forWritingTo: file)  // the same file, truncated and written
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("#PLAYLIST:New Name\n".utf8))
        try handle.close()
        #expect(try inode(file) == oldInode)
        #expect(await probe.until { $0.playlists.first?.title == "New Name" })
        let after = try #require(probe.item(named: "mix.m3u"))
        #expect(after.id == before.id)
        #expect(after.modified > before.modified)
        #expect(probe.changes.last == [after])
    }

    @Test func aHardLinkUnderANewNameIsANewPlaylist() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let original = try temp.write("original.m3u")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let before = try #require(probe.item(named: "original.m3u"))

        // The same file under a second name while the first still exists: not a rename.
        #expect(link(original.path, temp.path("copy.m3u").path) == 0)
        #expect(await probe.until { $0.playlists.count == 2 })
        #expect(probe.item(named: "original.m3u")?.id == before.id)
        let copy = try #require(probe.item(named: "copy.m3u"))
        #expect(copy.id != before.id)
    }

    @Test func anAtomicallyReplacedFileKeepsItsId() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let saved = try temp.write("Saved.m3u", "#PLAYLIST:First\na.flac\n")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        let before = try #require(probe.item(named: "Saved.m3u"))
        #expect(before.title == "First")
        let oldInode = try inode(saved)

        // An editor's save: a new file written beside it, then renamed over it.
        try temp.write(".Saved.m3u.swp", "#PLAYLIST:Second\na.flac\nb.flac\n")
        #expect(rename(temp.path(".Saved.m3u.swp").path, saved.path) == 0)
        #expect(try inode(saved) != oldInode, "the test must replace the file, not rewrite it")
        #expect(await probe.until { $0.playlists.first?.title == "Second" })
        let after = try #require(probe.item(named: "Saved.m3u"))
        #expect(after.id == before.id)
        #expect(after.created == before.created, "the replacement is not a new playlist")
        #expect(probe.folder.playlists.count == 1)
        #expect(probe.changes.last == [after])

        // Again with a temporary file that is itself named like a playlist.
        try temp.write("tmp-1234.m3u", "#PLAYLIST:Third\n")
        #expect(rename(temp.path("tmp-1234.m3u").path, saved.path) == 0)
        #expect(await probe.until { $0.playlists.map(\.title) == ["Third"] })
        #expect(probe.folder.playlists.first?.id == before.id)
    }

    @Test func stopEndsWatchingAndStartRescans() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        try temp.write("one.m3u")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        #expect(probe.folder.watchedPath == temp.url.path)
        probe.folder.stop()
        #expect(probe.folder.watchedPath == nil)

        try temp.write("two.m3u")
        await probe.elapse(.milliseconds(300))
        #expect(probe.titles == ["one"])
        #expect(probe.changes.isEmpty)

        probe.folder.start()
        defer { probe.folder.stop() }
        #expect(probe.titles == ["one", "two"])
        try temp.write("three.m3u")
        #expect(await probe.until { $0.playlists.count == 3 })
    }

    @Test func stoppingOrReleasingClosesTheInotifyDescriptor() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        func isInotify(_ descriptor: Int32) -> Bool {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"))
                == "anon_inode:inotify"
        }
        // Few: inotify instances are limited per user (128 by default).
        var folders = (0..<6).map { _ in PlaylistFolder(folder: temp.url, logger: LogCapture().logger) }
        folders.forEach { $0.start() }
        let descriptors = folders.map(\.inotifyDescriptor)
        #expect(descriptors.allSatisfy(isInotify))
        folders[..<3].forEach { $0.stop() }
        folders = []
        // Closed by the sources' cancel handlers, on the main queue. A number may meanwhile be
        // reused by another test's folder: a descriptor still watching this test's folder
        // (its inode in /proc/self/fdinfo) is one of ours left open.
        var folderStatus = stat()
        stat(temp.url.path, &folderStatus)
        let watchedInode = "ino:" + String(UInt64(folderStatus.st_ino), radix: 16)
        func watchesThisFolder(_ descriptor: Int32) -> Bool {
            guard isInotify(descriptor),
                let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(descriptor)", encoding: .utf8)
            else { return false }
            return info.split(separator: " ").contains { $0 == watchedInode }
        }
        #expect(
            await MainActorWaiter().wait(upTo: .seconds(20), poll: .milliseconds(20)) {
                !descriptors.contains(where: watchesThisFolder)
            })
    }

    @Test func aFileInPlaceOfTheFolderIsReportedUntilReplaced() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let playlists = try temp.write("Playlists", "not a folder")
        let probe = PlaylistFolderProbe(playlists)
        probe.folder.start()
        defer { probe.folder.stop() }
        #expect(probe.folder.playlists.isEmpty)
        #expect(probe.log.lines(containing: playlists.path, "not a folder").count == 1)
        #expect(probe.folder.watchedPath == temp.url.path)

        try FileManager.default.removeItem(at: playlists)
        try temp.write("Playlists/found.m3u")
        #expect(await probe.until { $0.playlists.map(\.title) == ["found"] })
        #expect(probe.warnings.count == 1)
    }

    @Test func aFolderDeletedAndMadeAgainAtOnceIsStillWatched() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let playlists = try temp.makeFolder("Playlists")
        let probe = PlaylistFolderProbe(playlists)
        probe.folder.start()
        defer { probe.folder.stop() }

        // Both before the events are read; the file system may well give the new folder the
        // old one's inode number.
        for round in 1...3 {
            try FileManager.default.removeItem(at: playlists)
            try temp.write("Playlists/round \(round).m3u")
            #expect(await probe.until { $0.playlists.map(\.title) == ["round \(round)"] })
            try temp.write("Playlists/more.m3u")
            #expect(await probe.until { $0.playlists.count == 2 }, "round \(round): the new folder is watched")
        }
    }

    @Test func aFolderCreatedLaterIsPickedUpAndFollowedWhenRemoved() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let music = temp.path("Music")
        let playlists = music.appendingPathComponent("Playlists")
        let probe = PlaylistFolderProbe(playlists)
        probe.folder.start()
        defer { probe.folder.stop() }
        #expect(probe.folder.playlists.isEmpty)
        #expect(probe.folder.watchedPath == temp.url.path, "the nearest existing parent")
        #expect(probe.warnings.isEmpty, "a missing folder is not a problem")

        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: false)
        #expect(await probe.until { $0.watchedPath == music.path })

        try FileManager.default.createDirectory(at: playlists, withIntermediateDirectories: false)
        try temp.write("Music/Playlists/late.m3u")
        #expect(await probe.until { $0.playlists.map(\.title) == ["late"] })
        #expect(probe.folder.watchedPath == playlists.path)
        #expect(probe.changes.count >= 1)
        let late = try #require(probe.folder.playlists.first)

        // Moved away: back to waiting for it.
        #expect(rename(playlists.path, temp.path("Music/Old").path) == 0)
        #expect(await probe.until { $0.playlists.isEmpty && $0.watchedPath == music.path })

        // Made again (intermediate folders at once), then deleted.
        try temp.write("Music/Playlists/again.m3u")
        #expect(await probe.until { $0.playlists.map(\.title) == ["again"] })
        #expect(probe.folder.playlists.first?.id != late.id, "ids are never reused")
        try FileManager.default.removeItem(at: playlists)
        #expect(await probe.until { $0.playlists.isEmpty && $0.watchedPath == music.path })

        // The whole chain removed: up to the temporary folder again.
        try FileManager.default.removeItem(at: music)
        #expect(await probe.until { $0.watchedPath == temp.url.path })
        try temp.write("Music/Playlists/third.m3u")
        #expect(await probe.until { $0.playlists.map(\.title) == ["third"] })
        #expect(probe.warnings.isEmpty)
    }
}

@Suite("PlaylistFolder: ordering")
@MainActor
struct PlaylistFolderOrderingTests {
    @Test func alphabeticalIsNaturalAndCaseInsensitiveWithTiesByPath() throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        for name in ["10 Rock", "2 Jazz", "apple", "Banana"] { try temp.write("\(name).m3u") }
        try temp.write("y.m3u", "#PLAYLIST:Same\n")
        try temp.write("x.m3u", "#PLAYLIST:Same\n")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        let expected = ["2 Jazz.m3u", "10 Rock.m3u", "apple.m3u", "Banana.m3u", "x.m3u", "y.m3u"]
        #expect(probe.folder.sorted(by: .alphabetical, reversed: false).map(\.url.lastPathComponent) == expected)
        #expect(
            probe.folder.sorted(by: .alphabetical, reversed: true).map(\.url.lastPathComponent) == expected.reversed())
        #expect(probe.fileNames == expected, "`playlists` is kept in alphabetical order")
    }

    @Test func modifiedRunsOldestFirstWithTiesByTitle() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let times: [(String, TimeInterval)] = [
            ("10 Rock", 3000), ("2 Jazz", 3000), ("apple", 2000), ("Banana", 1000), ("x", 500), ("y", 4000),
        ]
        for (name, seconds) in times { try setModified(try temp.write("\(name).m3u"), seconds) }
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }

        let expected = ["x", "Banana", "apple", "2 Jazz", "10 Rock", "y"]
        #expect(probe.folder.sorted(by: .modified, reversed: false).map(\.title) == expected)
        #expect(probe.folder.sorted(by: .modified, reversed: true).map(\.title) == expected.reversed())

        // A new modification time alone (IN_ATTRIB) is noticed.
        try setModified(temp.path("apple.m3u"), 5000)
        #expect(await probe.until { $0.sorted(by: .modified, reversed: false).last?.title == "apple" })
        #expect(probe.changes.last == [])
        #expect(probe.item(named: "apple.m3u")?.modified == Date(timeIntervalSince1970: 5000))
    }

    @Test func createdPutsALaterFileLast() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        try temp.write("b.m3u")
        try temp.write("c.m3u")
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        await probe.elapse(.milliseconds(50))  // the clock moves on (file system timestamps are coarse)

        try temp.write("a.m3u")
        #expect(await probe.until { $0.playlists.count == 3 })
        #expect(probe.folder.sorted(by: .created, reversed: false).last?.title == "a")
        #expect(probe.folder.sorted(by: .created, reversed: true).first?.title == "a")
        #expect(probe.folder.sorted(by: .alphabetical, reversed: false).first?.title == "a")
        let created = probe.folder.playlists.map(\.created)
        #expect(created.allSatisfy { abs($0.timeIntervalSinceNow) < 60 })
    }

    @Test(
        .enabled(
            if: PlaylistFolder.birthTime(FileManager.default.temporaryDirectory.path) != nil, "no birth times here"))
    func createdIsTheBirthTimeWhereRecorded() async throws {
        let temp = try TemporaryFolder()
        defer { temp.remove() }
        let file = try temp.write("born.m3u")
        let birth = try #require(PlaylistFolder.birthTime(file.path))
        // Neither a change of attributes (ctime) nor of contents (mtime) moves it.
        let waiter = MainActorWaiter()
        await waiter.elapse(.milliseconds(50))
        try setModified(file, 1000)
        #expect(chmod(file.path, 0o600) == 0)
        #expect(PlaylistFolder.birthTime(file.path) == birth)

        await waiter.elapse(.milliseconds(50))
        let probe = PlaylistFolderProbe(temp.url)
        probe.folder.start()
        defer { probe.folder.stop() }
        #expect(probe.folder.playlists.first?.created == birth, "not the time the folder was scanned")
        #expect(probe.folder.playlists.first?.modified == Date(timeIntervalSince1970: 1000))
    }
}
