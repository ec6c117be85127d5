import DBus
import Dispatch
import TestKit
import Testing

@testable import NowPlaying

/// What a deferred target was handed: the event, and the completion to report through.
@MainActor
final class HeldCompletions<Event: Sendable> {
    var held: [(event: Event, completion: @MainActor (RemoteCommandHandlerStatus) -> Void)] = []

    /// A deferred handler that keeps each call for the test to complete.
    var handler: RemoteCommand<Event>.DeferredHandler {
        { [unowned self] event, completion in held.append((event, completion)) }
    }
}

/// The statuses a command reported, in order.
@MainActor
final class ReportedStatuses {
    var statuses: [RemoteCommandHandlerStatus] = []
}

extension RemoteCommand {
    /// Performs the command for a test whose targets all report at once: the status, nil
    /// when the command is not active (or a target has yet to report).
    func perform(_ event: Event) -> RemoteCommandHandlerStatus? {
        let reported = ReportedStatuses()
        guard perform(event, completion: { reported.statuses.append($0) }) else { return nil }
        return reported.statuses.first
    }
}

/// Targets that report their status later, through a completion: alone, beside others, and
/// through MPRIS, where the client's call is answered once the status is known.
@Suite("Commands answered later")
@MainActor
struct DeferredCommandTests {
    @Test("the status comes when the target reports it, once; a second report is ignored")
    func reportedLater() {
        let center = RemoteCommandCenter()
        let targets = HeldCompletions<OpenURICommandEvent>()
        center.openURICommand.addTarget(deferredHandler: targets.handler)
        #expect(center.openURICommand.isActive)

        let reported = ReportedStatuses()
        #expect(center.openURICommand.perform(OpenURICommandEvent(uri: "file:///a")) { reported.statuses.append($0) })
        #expect(targets.held.map(\.event.uri) == ["file:///a"])
        #expect(reported.statuses.isEmpty, "nothing is reported before the target does")

        targets.held[0].completion(.noSuchContent)
        targets.held[0].completion(.success)
        #expect(reported.statuses == [.noSuchContent])
    }

    @Test("with several targets, the status comes once all report: the first failure in target order")
    func severalTargets() {
        let center = RemoteCommandCenter()
        let targets = HeldCompletions<RemoteCommandEvent>()
        center.nextTrackCommand.addTarget(deferredHandler: targets.handler)
        center.nextTrackCommand.addTarget { _ in .noActionableNowPlayingItem }
        center.nextTrackCommand.addTarget(deferredHandler: targets.handler)

        let reported = ReportedStatuses()
        #expect(center.nextTrackCommand.perform(RemoteCommandEvent()) { reported.statuses.append($0) })
        #expect(targets.held.count == 2)
        targets.held[1].completion(.commandFailed(reason: "third"))
        #expect(reported.statuses.isEmpty, "the first target has not reported")
        targets.held[0].completion(.success)
        #expect(reported.statuses == [.noActionableNowPlayingItem])
    }

    @Test("a completion dropped without a report fails the command; an inactive command calls no target")
    func droppedAndInactive() async {
        let center = RemoteCommandCenter()
        let reported = ReportedStatuses()
        center.stopCommand.addTarget { _, _ in }
        #expect(center.stopCommand.perform(RemoteCommandEvent()) { reported.statuses.append($0) })
        // Reported on the next turn of the main queue.
        await withCheckedContinuation { done in DispatchQueue.main.async { done.resume() } }
        #expect(reported.statuses.count == 1)
        guard case .commandFailed? = reported.statuses.first else {
            Issue.record("expected commandFailed, got \(reported.statuses)")
            return
        }

        let targets = HeldCompletions<RemoteCommandEvent>()
        center.playCommand.addTarget(deferredHandler: targets.handler)
        center.playCommand.isEnabled = false
        #expect(!center.playCommand.perform(RemoteCommandEvent()) { reported.statuses.append($0) })
        #expect(targets.held.isEmpty && reported.statuses.count == 1)
        #expect(center.playCommand.perform(RemoteCommandEvent()) == nil)
    }

    // MARK: Through MPRIS

    func server(_ center: RemoteCommandCenter) -> MPRISServer {
        MPRISServer(
            commandCenter: center, infoCenter: NowPlayingInfoCenter(),
            configuration: .init(playerName: "test", identity: "Test"))
    }

    /// Dispatches a call and collects its answers (one expected).
    func call(
        _ server: MPRISServer, _ interface: String, _ member: String, _ arguments: [Value]
    ) -> AnswerLog {
        let log = AnswerLog()
        server.object.dispatch(interface: interface, member: member, arguments: arguments) { log.answers.append($0) }
        return log
    }

    @MainActor
    final class AnswerLog {
        var answers: [Result<[Value], BusError>] = []
    }

    @Test("OpenUri is answered when its target reports: success, or the status's error")
    func openURIAnsweredLater() {
        let center = RemoteCommandCenter()
        let targets = HeldCompletions<OpenURICommandEvent>()
        center.openURICommand.addTarget(deferredHandler: targets.handler)
        let server = server(center)

        let found = call(server, MPRISServer.playerInterface, "OpenUri", [.string("file:///found.flac")])
        let missing = call(server, MPRISServer.playerInterface, "OpenUri", [.string("file:///missing.flac")])
        #expect(targets.held.map(\.event.uri) == ["file:///found.flac", "file:///missing.flac"])
        #expect(found.answers.isEmpty && missing.answers.isEmpty)

        targets.held[1].completion(.noSuchContent)
        #expect(missing.answers.map(\.errorName) == ["org.mpris.MediaPlayer2.test.Error.NoSuchContent"])
        #expect(found.answers.isEmpty)
        targets.held[0].completion(.success)
        targets.held[0].completion(.commandFailed(reason: "too late"))
        #expect(found.answers.count == 1 && found.answers.allSatisfy(\.succeeded))

        // A bad URI is refused before any target runs.
        let refused = call(server, MPRISServer.playerInterface, "OpenUri", [.string("ftp://x/a.flac")])
        #expect(refused.answers.map(\.errorName) == [invalidArgs])
        #expect(targets.held.count == 2)
    }

    @Test("AddTrack is answered when its target reports")
    func addTrackAnsweredLater() {
        let center = RemoteCommandCenter()
        let targets = HeldCompletions<AddTrackCommandEvent>()
        center.addTrackCommand.addTarget(deferredHandler: targets.handler)
        center.removeTrackCommand.addTarget { _ in .success }
        let server = server(center)
        let queue = FakeQueue([1, 2])
        server.trackList = queue

        let added = call(
            server, MPRISServer.trackListInterface, "AddTrack",
            [.string("file:///a.flac"), .objectPath(server.trackID(for: 2)), .boolean(true)])
        #expect(
            targets.held.map(\.event) == [
                AddTrackCommandEvent(uri: "file:///a.flac", afterItemID: 2, setAsCurrent: true)
            ])
        #expect(added.answers.isEmpty)
        targets.held[0].completion(.commandFailed(reason: "disk on fire"))
        #expect(added.answers.map(\.errorName) == ["org.mpris.MediaPlayer2.test.Error.CommandFailed"])
        #expect(added.answers.first?.errorMessage?.contains("disk on fire") == true)
    }

    @Test("a property set answers at once; a status reported later is only logged")
    func propertySetAnswersAtOnce() {
        let center = RemoteCommandCenter()
        let targets = HeldCompletions<ChangeVolumeCommandEvent>()
        center.changeVolumeCommand.addTarget(deferredHandler: targets.handler)
        let server = server(center)

        let set = call(
            server, "org.freedesktop.DBus.Properties", "Set",
            [.string(MPRISServer.playerInterface), .string("Volume"), .variant(.double(0.5))])
        #expect(set.answers.count == 1 && set.answers.allSatisfy(\.succeeded))
        #expect(targets.held.map(\.event.volume) == [0.5])
        targets.held[0].completion(.commandFailed(reason: "no mixer"))
        #expect(set.answers.count == 1)

        // A target that reports before it returns still fails the Set.
        center.changeVolumeCommand.removeAllTargets()
        center.changeVolumeCommand.addTarget { _, completion in completion(.commandFailed(reason: "no mixer")) }
        let refused = call(
            server, "org.freedesktop.DBus.Properties", "Set",
            [.string(MPRISServer.playerInterface), .string("Volume"), .variant(.double(0.5))])
        #expect(refused.answers.map(\.errorName) == ["org.mpris.MediaPlayer2.test.Error.CommandFailed"])
    }
}
