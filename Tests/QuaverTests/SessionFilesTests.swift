import Testing

@testable import quaver

/// The saved session's file names: which are queue files, and which temporary files no
/// write will finish.
@Suite("session files: names in the state folder")
struct SessionFilesTests {
    typealias QueueFile = SessionFiles.QueueFile

    @Test(
        "queue files are queue.m3u8 and queue.<n>.m3u8 with n from 1, written one way",
        arguments: [
            ("queue.m3u8", QueueFile.unnumbered), ("queue.1.m3u8", .generation(1)),
            ("queue.672.m3u8", .generation(672)), ("queue.0.m3u8", nil), ("queue.07.m3u8", nil),
            ("queue.-1.m3u8", nil), ("queue.+1.m3u8", nil), ("queue..m3u8", nil), ("queue.1.m3u8.corrupt", nil),
            (".queue.1.m3u8.77.5.tmp", nil), ("queue.١.m3u8", nil), ("queue.99999999999999999999.m3u8", nil),
            ("state.json", nil), ("queue.m3u8.corrupt", nil),
        ] as [(String, QueueFile?)])
    func queueFileNames(name: String, file: QueueFile?) {
        #expect(QueueFile(name: name) == file)
        if let file { #expect(file.name == name) }
    }

    @Test("queue files are listed newest first, the unnumbered one last")
    func newestFirst() {
        let names = ["state.json", "queue.m3u8", "queue.10.m3u8", "problems.log", "queue.9.m3u8", "queue.2.m3u8"]
        #expect(SessionFiles.queueFiles(in: names) == [.generation(10), .generation(9), .generation(2), .unnumbered])
    }

    @Test("a temporary file names the process that writes it")
    func temporaryWriter() {
        #expect(SessionFiles.temporaryWriter(of: ".queue.m3u8.4242.3735928559.tmp") == 4242)
        #expect(SessionFiles.temporaryWriter(of: ".queue.12.m3u8.17.0.tmp") == 17)
        #expect(SessionFiles.temporaryWriter(of: ".state.json.1.2.tmp") == 1)
        #expect(SessionFiles.temporaryWriter(of: ".problems.log.99.5.tmp") == 99)
        for name in [
            "state.json", ".state.json.tmp", ".state.json.x.5.tmp", ".state.json.0.5.tmp", "a.1.2.tmp", ".1.2.tmp",
        ] {
            #expect(SessionFiles.temporaryWriter(of: name) == nil, "\(name)")
        }
    }

    @Test("temporary files of processes gone are stale; a running writer's, and other files, are kept")
    func staleTemporaries() {
        let names = [
            ".queue.m3u8.100.1.tmp", ".state.json.100.2.tmp", ".queue.3.m3u8.200.3.tmp", ".state.json.300.4.tmp",
            "state.json", "queue.3.m3u8", ".hidden", "notes.tmp",
        ]
        let stale = SessionFiles.staleTemporaries(in: names) { $0 == 300 }
        #expect(stale == [".queue.m3u8.100.1.tmp", ".state.json.100.2.tmp", ".queue.3.m3u8.200.3.tmp"])
    }
}
