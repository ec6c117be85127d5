import Foundation
import TestKit
import Testing

@testable import DBus

/// OpenUri and AddTrack look at the disk off the main actor and answer once the URI is
/// placed: calls a client sends one after the other, without waiting for the replies in
/// between, still take effect in the order sent, and each is answered for itself.
@Suite("OpenUri and AddTrack sent back to back")
@MainActor
struct CallOrderTests {
    /// One call to send.
    struct Call {
        var interface: String
        var member: String
        var arguments: [Value]
    }

    /// The replies to calls sent back to back, by the index of the call.
    final class Answers {
        var byIndex: [Int: Result<Message, BusError>] = [:]
    }

    /// Sends `calls` one after the other, each before any reply came, and returns the
    /// replies in the order the calls were sent: the values, or the error's name.
    func sendBackToBack(_ calls: [Call], on session: Session) async throws -> [String] {
        let answers = Answers()
        for (index, call) in calls.enumerated() {
            let message = try Message.methodCall(
                destination: session.busName, path: MPRISNames.path, interface: call.interface, member: call.member,
                arguments: call.arguments)
            session.client.send(message, timeout: .seconds(20)) { [waiter = session.waiter] result in
                answers.byIndex[index] = result
                waiter.poke()
            }
        }
        let all = await session.waiter.wait(timeout: .seconds(30)) { answers.byIndex.count == calls.count }
        #expect(all, "answers to \(answers.byIndex.count) of \(calls.count) calls: \(session.log())")
        return (0..<calls.count).map { index in
            switch answers.byIndex[index] {
            case .success(let reply)?: reply.error.map(\.name.rawValue) ?? "ok"
            case .failure(let error)?: error.name.rawValue
            case nil: "no answer"
            }
        }
    }

    /// Copies `tracks` into a folder (its album; a folder is read in the background, far
    /// slower than one file is found, so a file sent after it could overtake it), and starts
    /// Quaver paused on `current`. The folder and its files, in order.
    func album(of tracks: [URL], paused current: URL, _ session: Session, _ signals: TrackListSignals)
        async throws -> (folder: URL, files: [URL])
    {
        let folder = session.bus.directory.appendingPathComponent("album", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let files = tracks.indices.map { folder.appendingPathComponent("\($0 + 1) track.flac") }
        for (copy, source) in zip(files, tracks) { try FileManager.default.copyItem(at: source, to: copy) }
        try await session.launch(["--paused", current.path])
        try await session.waitForStatus("Paused")
        try await signals.waitForWindow(of: 1)
        return (folder, files)
    }

    func addTrack(_ uri: String, after: ObjectPath) -> Call {
        Call(
            interface: MPRISNames.trackList, member: "AddTrack",
            arguments: [.string(uri), .objectPath(after), .boolean(false)])
    }

    func openURI(_ uri: String) -> Call {
        Call(interface: MPRISNames.player, member: "OpenUri", arguments: [.string(uri)])
    }

    static let missing = "file:///nonexistent/quaver/missing.flac"

    @Test(
        "AddTrack of a folder, a missing file and a file, back to back: placed in that order; the missing one NoSuchContent"
    )
    func addTrackInOrder() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let signals = try TrackListSignals(session)
        defer { session.stop() }
        let (folder, inFolder) = try await album(of: [tracks[1], tracks[2]], paused: tracks[0], session, signals)
        let first = try #require(try await session.currentTrackID())

        let folderURI = URL(fileURLWithPath: folder.path, isDirectory: true).absoluteString
        let answers = try await sendBackToBack(
            [
                addTrack(folderURI, after: first), addTrack(Self.missing, after: first),
                addTrack(tracks[0].absoluteString, after: first),
            ], on: session)
        #expect(answers == ["ok", MPRISNames.noSuchContent, "ok"])

        // Each AddTrack goes right after the first track: what was placed last comes first.
        let ids = try await session.trackListTracks()
        let urls = try await session.trackURLs(ids)
        #expect(urls == [tracks[0], tracks[0], inFolder[0], inFolder[1]].map(\.absoluteString), "\(ids)")
        #expect(try await session.currentTrackID() == first)
        #expect(try await session.get("PlaybackStatus") == .string("Paused"))
    }

    @Test(
        "OpenUri of a folder, a missing file and a file, back to back: the last sent plays; the missing one NoSuchContent"
    )
    func openURIInOrder() async throws {
        let tracks = try await TestMedia.tracks(count: 3, seconds: 10)
        let session = try await Session()
        let signals = try TrackListSignals(session)
        defer { session.stop() }
        let (folder, album) = try await album(of: [tracks[1]], paused: tracks[0], session, signals)
        let inFolder = album[0]

        let mark = session.signals.count
        let folderURI = URL(fileURLWithPath: folder.path, isDirectory: true).absoluteString
        let answers = try await sendBackToBack(
            [openURI(folderURI), openURI(Self.missing), openURI(tracks[2].absoluteString)], on: session)
        #expect(answers == ["ok", MPRISNames.noSuchContent, "ok"])

        // Each goes after the current track and plays: the file after the folder's track.
        try await session.waitForPlayerChange(after: mark, "Track 3 playing") {
            $0["Metadata"]?.stringVariantDictionary?["xesam:title"] == .string("Track 3")
        }
        try await session.waitForStatus("Playing")
        let ids = try await session.trackListTracks()
        #expect(try await session.trackURLs(ids) == [tracks[0], inFolder, tracks[2]].map(\.absoluteString))
        #expect(try await session.currentTrackID() == ids.last)
    }
}
