import DBus
import TestKit
import Testing

@testable import NowPlaying

/// One PropertiesChanged per transition and interface; Position never signalled.
@MainActor
@Suite struct MPRISSignalTests {
    @Test func trackChangeGoesOutInOneSignal() {
        let h = Harness()
        h.start(1, at: .seconds(30), state: .paused)

        // One turn: the engine moves to the last item and starts playing.
        h.engine.next()
        h.engine.play()
        let signals = h.flush()

        #expect(signals.count == 1, "\(signals)")
        let change = signals.first
        #expect(change?.interface == ExportedObject.propertiesInterface)
        #expect(change?.member == "PropertiesChanged")
        #expect(change?.changedInterface == Harness.player)
        #expect(Set(change?.changed.keys ?? [:].keys) == ["Metadata", "PlaybackStatus", "CanGoNext"])
        #expect(change?.changed["PlaybackStatus"] == .string("Playing"))
        #expect(change?.changed["CanGoNext"] == .boolean(false))
        let metadata = change?.changed["Metadata"]?.stringVariantDictionary
        #expect(metadata?["mpris:trackid"]?.unwrapped == h.trackID(103))
        #expect(metadata?["xesam:title"]?.unwrapped == .string("Three"))
    }

    @Test func trackChangeFromFirstItemCarriesCanGoPrevious() {
        let h = Harness()
        h.start(0)
        #expect(h.call("Next") == .success([]))
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(Set(signals.first?.changed.keys ?? [:].keys) == ["Metadata", "CanGoPrevious"])
        #expect(signals.first?.changed["CanGoPrevious"] == .boolean(true))
        #expect(signals.filter(\.isSeeked).isEmpty, "a track change is not a seek")
    }

    @Test func nothingChangedEmitsNothing() {
        let h = Harness()
        #expect(h.flush().isEmpty, "fresh server")
        h.start(0)
        #expect(h.flush().isEmpty, "second publication without changes")

        // Re-assigning identical values is not a change.
        h.info.nowPlayingInfo = h.info.nowPlayingInfo
        h.info.playbackState = .playing
        h.commands.playCommand.isEnabled = true
        h.info.volume = h.info.volume
        #expect(h.flush().isEmpty)
    }

    @Test func changeAndChangeBackEmitsNothing() {
        let h = Harness()
        h.start(0)
        h.commands.pauseCommand.isEnabled = false
        h.commands.pauseCommand.isEnabled = true
        #expect(h.flush().isEmpty)
    }

    @Test func positionNeverInPropertiesChanged() {
        let h = Harness()
        var all: [RecordedSignal] = []
        h.engine.load(0)
        h.engine.play()
        all += h.flush()
        h.clock.advance(by: .seconds(5))
        h.engine.pause()
        all += h.flush()
        _ = h.call("Seek", [.int64(20_000_000)])
        all += h.flush()
        _ = h.call("Play")
        all += h.flush()
        _ = h.call("Next")
        all += h.flush()
        _ = h.call("Stop")
        all += h.flush()

        let changes = all.filter(\.isPropertiesChanged)
        #expect(changes.count >= 5)
        for change in changes {
            #expect(change.changed["Position"] == nil)
            #expect(!change.invalidated.contains("Position"))
        }
    }

    @Test func pauseSignalsOnlyPlaybackStatus() {
        let h = Harness()
        h.start(0)
        h.clock.advance(by: .seconds(3))
        #expect(h.call("Pause") == .success([]))
        let signals = h.flush()
        #expect(signals.count == 1, "no Seeked on pause")
        #expect(signals.first?.changed == ["PlaybackStatus": .string("Paused")])
    }

    @Test func rootAndPlayerChangesUseTheirInterfaceNames() {
        let h = Harness()
        h.server.quitHandler = {}
        h.commands.playCommand.isEnabled = false
        h.info.volume = 0.25
        let signals = h.flush()

        #expect(signals.count == 2)
        #expect(signals.filter(\.isPropertiesChanged).count == 2)
        let root = signals.filter { $0.changedInterface == "org.mpris.MediaPlayer2" }
        let player = signals.filter { $0.changedInterface == "org.mpris.MediaPlayer2.Player" }
        #expect(root.count == 1)
        #expect(player.count == 1)
        #expect(root.first?.changed == ["CanQuit": .boolean(true)])
        #expect(player.first?.changed == ["Volume": .double(0.25)], "CanPlay was already false: nothing loaded")
    }

    @Test func seekedIsAPlayerSignal() {
        let h = Harness()
        h.start(0, state: .paused)
        _ = h.call("SetPosition", [h.trackID(101), .int64(5_000_000)])
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.interface == "org.mpris.MediaPlayer2.Player")
        #expect(signals.first?.member == "Seeked")
        #expect(signals.first?.arguments == [.int64(5_000_000)])
    }

    @Test func optionalPropertiesAppearWithTheirTargetsAndAreSignalled() {
        let h = Harness { commands in
            commands.changeRepeatModeCommand.removeAllTargets()
        }
        #expect(h.getAll()["LoopStatus"] == nil)
        h.commands.changeRepeatModeCommand.addTarget { _ in .success }
        #expect(h.getAll()["LoopStatus"] == .string("None"))
        let signals = h.flush()
        #expect(signals.count == 1)
        #expect(signals.first?.changed == ["LoopStatus": .string("None")])
    }

    /// Publication happens on the next main-queue turn, without `publishNow`.
    @Test func publicationIsDeferredToTheNextTurnAndCoalesced() async {
        let h = Harness()
        h.engine.load(0)
        h.engine.play()
        h.info.volume = 0.5
        #expect(h.recorder.signals.isEmpty, "nothing before the turn ends")

        for _ in 0..<100 where h.recorder.signals.isEmpty {
            await Task.yield()
        }
        let signals = h.recorder.signals
        #expect(signals.count == 1)
        #expect(
            Set(signals.first?.changed.keys ?? [:].keys)
                == ["Metadata", "PlaybackStatus", "CanPlay", "CanPause", "CanSeek", "CanGoNext", "Volume"])
    }
}
