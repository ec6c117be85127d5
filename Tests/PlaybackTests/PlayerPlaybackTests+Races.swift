import AudioCheck
import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

// `PlayerPlaybackTests` (declared in PlayerPlaybackTests.swift): which entry is current when
// GStreamer's events and the commands cross: quick Nexts during a preroll and tag reads, a
// track that fails on its way out, and the end of the queue.

extension PlayerPlaybackTests {
    /// Next to entries whose tags are read first, while the start of an earlier Next waits
    /// for a preroll: once that preroll ended, the waiting start used to run and take the
    /// selection back to its entry, and the Next after it moved on from there (ten quick
    /// Nexts ended two or three tracks short). The selection is only ever what the
    /// commands made it.
    @Test func nextsDuringAPrerollAndATagReadKeepTheSelection() async throws {
        let files = try await Media.tracks(12, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        // Entries 0 to 4 are read: their starts wait for the preroll in progress. The rest
        // are read when they are loaded.
        player.readInfoAhead(entries[0...4].map(\.id))
        #expect(
            await probe.wait(upTo: .seconds(15), poll: .milliseconds(20)) {
                entries[0...4].allSatisfy { player.entry(id: $0.id)?.info != nil }
            })
        #expect(entries[5...].allSatisfy { player.entry(id: $0.id)?.info == nil })

        player.play()
        // Starts that wait for the first preroll, then loads that wait for tag reads (one
        // at a time: the last one lands after the preroll has ended).
        for index in 1...8 {
            player.next()
            #expect(player.currentIndex == index)
        }
        var expected = 8
        var rewound: [String] = []
        for wait in [300, 30, 30] {
            // Between Nexts, watch the selection every millisecond: the window is what is
            // checked, and a selection that moves in it ends the wait early.
            let moved = await probe.wait(upTo: .milliseconds(wait), poll: .milliseconds(1)) { [expected] in
                player.currentIndex != expected
            }
            if moved { rewound.append("\(player.currentIndex ?? -1) after Next to \(expected)") }
            guard expected < 10 else { break }
            player.next()
            expected += 1
        }
        #expect(rewound.isEmpty, "the selection moved without a command: \(rewound.prefix(5))")
        #expect(
            await probe.waitFor(.playing, entry: 10),
            "ten Nexts end on entry 10, not \(player.current.flatMap { c in entries.firstIndex { $0.id == c.id } } ?? -1)"
        )
        player.stop()
    }

    /// The shown track removed while the selection has moved on to the next one (still
    /// loading): it is never shown again, and Pause settles on the selected track. Under the
    /// soak's load, a client's removal in that window left Metadata naming the removed entry,
    /// Paused, with Next and Previous enabled.
    @Test func aRemovedShownTrackIsNeverShownAgain() async throws {
        let files = try await Media.tracks(3, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        player.next()
        #expect(player.isSettling, "entry 1 is on its way")
        #expect(player.remove(id: entries[0].id))
        #expect(player.current?.id == entries[1].id, "the selected entry is shown in the removed one's place")
        player.pause()
        #expect(
            await probe.wait { player.status == .paused && !player.isSettling },
            "\(player.status), \(player.transport.state), shown \(player.current?.id ?? 0): \(probe.log.messages)")
        #expect(player.current?.id == entries[1].id)
        #expect(player.entries.map(\.id) == [entries[1].id, entries[2].id])
        #expect(!player.canGoPrevious && player.canGoNext)
        player.stop()
    }

    /// The loaded track fails while the selection has moved on to tracks whose tags are
    /// being read: the failed one is marked, the selection stays (it used to move on from
    /// the failed track), and its further errors do not stop playback.
    @Test func aTrackOnItsWayOutFailsWithoutMovingTheSelection() async throws {
        let files = try await Media.tracks(4, seconds: 10, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.readInfoAhead([entries[0].id])
        #expect(
            await probe.wait(upTo: .seconds(15), poll: .milliseconds(20)) {
                player.entry(id: entries[0].id)?.info != nil
            })
        // Read as a good track, then replaced: it fails in the pipeline, not before.
        try garbageBytes.write(to: files[0])

        player.play()
        player.next()
        player.next()
        #expect(player.currentIndex == 2)
        #expect(
            await probe.waitFor(.playing, entry: 2, upTo: .seconds(20)),
            "entry 2 plays; the current one is \(player.currentIndex ?? -1)")
        #expect(
            probe.playedIDs == [entries[2].id],
            "only the selected entry plays: \(probe.playedIDs) of \(entries.map(\.id))")
        #expect(player.entry(id: entries[0].id)?.failure != nil, "the track that failed is marked")
        #expect(player.entry(id: entries[1].id)?.failure == nil)
        #expect(probe.statuses == [.stopped, .playing], "\(probe.statuses)")
        #expect(probe.log.lines(containing: "playback error").isEmpty, "\(probe.log.messages)")
        player.stop()
    }

    // The first track lasts 2 s: a shorter one trips the stream-start race tested below.
    @Test func theQueueEndsStopped() async throws {
        let files = try await Media.tracks(durations: [2, 1], in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        player.play()
        #expect(await probe.waitFor(.playing, entry: 0))
        #expect(await probe.wait(upTo: .seconds(6)) { probe.statuses.last == .stopped && probe.statuses.count > 2 })
        #expect(probe.playedIDs == entries.map(\.id), "both tracks played, in order")
        #expect(probe.statuses == [.stopped, .playing, .stopped], "the switch between tracks is gapless")
        #expect(player.status == .stopped)
        #expect(player.current?.id == entries[1].id)
        #expect(player.current?.info?.title == "Track 2")
        #expect(player.position == .zero)
        #expect(
            player.entries.allSatisfy { $0.failure == nil },
            "\(player.entries.map { $0.failure ?? "-" }) \(probe.log.messages)")

        // Play again starts over from the selected (last) entry.
        #expect(player.play())
        #expect(await probe.waitFor(.playing, entry: 1))
        player.stop()
    }

    /// playbin asks for the next URI (about-to-finish) as soon as it has read a file, which for
    /// a short file is during its preroll. If the main actor is busy then, the first stream's
    /// STREAM_START is handled only after the next URI was handed over, and is taken for the
    /// gapless switch: the next entry is reported while the first one plays.
    @Test func aShortFirstTrackIsReportedWhileItPlaysEvenWhenTheMainActorIsBusy() async throws {
        let files = try await Media.tracks(2, seconds: 1, in: folder)
        let probe = try PlayerProbe.make()
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        #expect(await probe.wait { player.current?.info != nil }, "the first entry is read ahead")
        player.play()  // its tags are known: the pipeline starts now
        keepMainThreadBusy(seconds: 0.1)  // simulated load (not a wait for an event); 5 ms suffice here
        #expect(await probe.waitFor(.playing))
        #expect(await probe.wait(upTo: .seconds(20)) { player.status == .stopped }, "the queue still ends stopped")
        #expect(player.current?.id == entries[1].id)
        #expect(probe.playedIDs == entries.map(\.id), "the first track was never reported")
        #expect(probe.statuses == [.stopped, .playing, .stopped])
        #expect(probe.playedIDs.last == entries[1].id)
    }

    /// Into an output faster than real time (a file rendered with `wavenc ! filesink`),
    /// playbin reads a short track to its end, and asks what follows it, milliseconds after it
    /// starts. The main actor answers that once the track starts; busy then, it used to
    /// answer too late: the track ended, what followed was loaded afresh, and the reload
    /// opened the rendered file again, so that it held only the last tracks. playbin now
    /// waits for the answer, and every track is handed over. `readFirst` false: the tags are
    /// not read before Play, so Play itself waits for the first read, and playbin waits for
    /// the read of each track after it (the answer is pending until then).
    @Test(arguments: [true, false])
    func aRenderFasterThanRealTimeHandsEveryTrackOverWhileTheMainActorIsBusy(readFirst: Bool) async throws {
        let files = try await Media.tracks(5, seconds: 1, in: folder)
        let output = folder.url.appendingPathComponent("render.wav")
        let probe = try PlayerProbe.make(
            audioSink:
                "audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=44100,channels=1 ! wavenc ! filesink location=\(output.path)"
        )
        let player = probe.player
        let entries = player.enqueue(files.map(\.absoluteString))
        if readFirst {
            player.readInfoAhead(entries.map(\.id))
            #expect(await probe.wait { entries.allSatisfy { player.entry(id: $0.id)?.info != nil } })
        }
        player.play()
        keepMainThreadBusy(seconds: 0.5)  // simulated load: the whole render takes less
        #expect(await probe.wait(upTo: .seconds(20)) { player.status == .stopped && probe.statuses.count > 2 })
        #expect(probe.playedIDs.last == entries.last?.id)
        #expect(probe.log.lines(containing: "gapless switch").count == 4, "\(probe.log.messages)")
        #expect(probe.log.lines(containing: "loading what follows").isEmpty, "\(probe.log.messages)")
        let rendered = try WAV(contentsOf: output)
        #expect(rendered.headerComplete)
        #expect(
            abs(Double(rendered.frames) / 44_100 - 5) < 0.1,
            "the render holds \(Double(rendered.frames) / 44_100) s of the 5 s queued")
    }
}

/// Blocks the calling (main) thread, as a burst of work would: the block is what the test
/// applies, not a wait for something.
private func keepMainThreadBusy(seconds: Double) {
    Thread.sleep(forTimeInterval: seconds)
}
