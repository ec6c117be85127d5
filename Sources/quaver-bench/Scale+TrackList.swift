import ArgumentParser
import DBus
import Foundation
import TestKit

/// The TrackList figures of one run: Tracks, GetTracksMetadata and AddTrack.
extension ScaleBenchmark {

    func trackListFigures(_ session: PlayerSession, source: ScaleSource, round: Int) async {
        // The Tracks property: the id prefix, and the length of the list it shows.
        var prefix = Self.expectedPrefix
        do {
            let sent = ContinuousClock.now
            let reply = try await session.call(
                "Get", interface: MPRISNames.properties, [.string(Self.trackList), .string("Tracks")],
                timeout: .seconds(30))
            let took = ContinuousClock.now - sent
            guard case .array(.objectPath, let items) = reply.first?.unwrapped else {
                throw HarnessError(
                    "Tracks is not an array of object paths: \(reply.first.map { "\($0.unwrapped.type)" } ?? "no value")"
                )
            }
            let ids = items.compactMap(\.objectPath)
            guard let first = ids.first, let slash = first.rawValue.lastIndex(of: "/") else {
                throw HarnessError("Tracks is empty")
            }
            record(.tracksProperty, source, took.inMilliseconds)
            prefix = String(first.rawValue[..<slash])
            observe(
                "tracks",
                "Tracks (\(source.title), round \(round + 1), paused on the current track) lists \(ids.count) ids, from \(first) to \(ids.last!)."
            )
            if prefix != Self.expectedPrefix {
                problem(
                    source, round: round,
                    "track ids have the prefix \(prefix), not \(Self.expectedPrefix) (using \(prefix))")
            }
        } catch {
            fail([.tracksProperty], source, round: round, "Get(TrackList.Tracks): \(error)")
        }

        // GetTracksMetadata for ids from the middle of the queue.
        do {
            let batch = settings.metadataBatch
            let firstNumber = max(1, settings.tracks / 2 - batch / 2 + 1)
            let ids = try (firstNumber..<firstNumber + batch).map { number in
                guard let id = ObjectPath(prefix + "/\(number)") else {
                    throw HarnessError("\(prefix)/\(number) is not an object path")
                }
                return id
            }
            let argument = Value.array(.objectPath, ids.map(Value.objectPath))
            var times: [Double] = []
            for _ in 0..<settings.metadataCalls {
                let sent = ContinuousClock.now
                let reply = try await session.call(
                    "GetTracksMetadata", interface: Self.trackList, [argument], timeout: .seconds(30))
                times.append((ContinuousClock.now - sent).inMilliseconds)
                try checkMetadata(reply, asked: ids, source: source, round: round)
            }
            record(.metadata, source, times.median)
        } catch {
            fail([.metadata], source, round: round, "GetTracksMetadata: \(error)")
        }

        // AddTrack, alternately at the start and after the current track.
        do {
            guard let current = try await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath,
                current != Self.noTrack
            else { throw HarnessError("Metadata has no current mpris:trackid") }
            let uri = media.sampleTrack.absoluteString
            let run = try await addTracks(session, uri: uri, current: current)
            record(.addTrackRate, source, Double(settings.addTrackCalls) / run.elapsed.inSeconds)
            record(.addTrackP99, source, run.latencies.percentile(99), pooled: run.latencies)
            let after = try await session.get("Metadata").stringVariantDictionary?["mpris:trackid"]?.objectPath
            if after != current {
                problem(
                    source, round: round,
                    "the current track changed from \(current) to \(after.map { "\($0)" } ?? "none") during AddTrack with SetAsCurrent false"
                )
            }
            // Where the added tracks went: ids that go on counting would be the next ones.
            let next = (settings.tracks + 1...settings.tracks + settings.addTrackCalls).compactMap {
                ObjectPath(prefix + "/\($0)")
            }
            let reply = try await session.call(
                "GetTracksMetadata", interface: Self.trackList, [.array(.objectPath, next.map(Value.objectPath))],
                timeout: .seconds(30))
            if case .array(_, let maps) = reply.first {
                observe(
                    "added ids",
                    "After \(report.format(Double(settings.addTrackCalls), 0)) AddTrack calls (\(source.title), round \(round + 1)), GetTracksMetadata finds \(maps.count) of the ids \(next.first!)…\(settings.tracks + settings.addTrackCalls)."
                )
            }
        } catch {
            fail([.addTrackRate, .addTrackP99], source, round: round, "AddTrack: \(error)")
        }
    }

    /// Each reply must be one map per id asked for, each with `mpris:trackid`.
    func checkMetadata(_ reply: [Value], asked ids: [ObjectPath], source: ScaleSource, round: Int) throws {
        guard case .array(_, let maps) = reply.first else {
            throw HarnessError(
                "the reply is not an array of maps: \(reply.map { "\($0.type)" }.joined(separator: ", "))")
        }
        guard maps.count == ids.count else { throw HarnessError("\(maps.count) maps for \(ids.count) ids") }
        var returned: [ObjectPath] = []
        returned.reserveCapacity(maps.count)
        for (index, map) in maps.enumerated() {
            guard let dictionary = map.stringVariantDictionary else {
                throw HarnessError("item \(index) of the reply is not an a{sv} map (\(map.type))")
            }
            guard let id = dictionary["mpris:trackid"]?.unwrapped.objectPath else {
                throw HarnessError("map \(index) has no mpris:trackid object path")
            }
            returned.append(id)
            if index == 0 {
                observe(
                    "metadata keys",
                    "A GetTracksMetadata map carries: \(dictionary.keys.sorted().joined(separator: ", ")).")
            }
        }
        if returned != ids {
            let missing = Set(ids).subtracting(returned).count
            problem(
                source, round: round,
                missing == 0
                    ? "GetTracksMetadata returns the ids asked for in another order"
                    : "GetTracksMetadata returns \(missing) of the \(ids.count) ids asked for under other ids (first asked \(ids[0]), first returned \(returned[0]))"
            )
        }
    }

    /// Shared by the AddTrack workers.
    private final class AddTrackState {
        var next = 0
        var latencies: [Double] = []
        var failure: (any Error)?
    }

    func addTracks(_ session: PlayerSession, uri: String, current: ObjectPath) async throws
        -> (latencies: [Double], elapsed: Duration)
    {
        let calls = settings.addTrackCalls
        let state = AddTrackState()
        state.latencies.reserveCapacity(calls)
        let start = ContinuousClock.now
        let workers = (0..<settings.addTrackInFlight).map { _ in
            Task { @MainActor in
                while state.next < calls, state.failure == nil {
                    let index = state.next
                    state.next += 1
                    let after = index.isMultiple(of: 2) ? Self.noTrack : current
                    let sent = ContinuousClock.now
                    do {
                        _ = try await session.call(
                            "AddTrack", interface: Self.trackList, [.string(uri), .objectPath(after), .boolean(false)],
                            timeout: .seconds(30))
                    } catch {
                        if state.failure == nil {
                            state.failure = HarnessError(
                                "AfterTrack \(after == Self.noTrack ? "NoTrack" : "the current track"): \(error)")
                        }
                        return
                    }
                    state.latencies.append((ContinuousClock.now - sent).inMilliseconds)
                }
            }
        }
        for worker in workers { await worker.value }
        if let failure = state.failure { throw failure }
        return (state.latencies, ContinuousClock.now - start)
    }
}
