import AudioCheck
import Foundation
import TestKit

/// The gapless figure (the reference signal and its analysis are in `AudioCheck`, shared with
/// the integration tests): how each player renders the two parts.
extension Gapless {
    /// The reference signal and its two FLAC parts, made in `folder` with the benchmark's
    /// gst-launch-1.0 (its output logged there).
    @MainActor
    static func prepare(programs: Programs, folder: URL) async throws -> Source {
        let log = folder.appendingPathComponent("gst-launch.log")
        do {
            return try await prepare(gstLaunch: programs.gstLaunch, folder: folder) { command in
                try await Tools.run(command, log: log)
            }
        } catch let error as AudioCheckError {
            throw HarnessError(error.description)
        }
    }

    /// Renders both parts through Quaver into `output`: a WAV sink in place of the sound
    /// card, so it renders as fast as it decodes. Waits for the end of the queue (Stopped),
    /// then quits Quaver, which closes the file.
    @MainActor
    static func renderQuaver(_ session: PlayerSession, programs: Programs, source: Source, output: URL) async throws {
        try? FileManager.default.removeItem(at: output)
        let sink = "audioconvert ! \(renderCaps) ! wavenc ! filesink location=\(output.path)"
        let stopped = session.events.expect("PlaybackStatus Stopped at the end of the queue") {
            $0.playbackStatus == "Stopped"
        }
        try await session.start([programs.quaver, "--audio-sink", sink, "--no-resume"] + source.parts.map(\.path))
        do {
            _ = try await session.events.wait(stopped, timeout: .seconds(30))
        } catch {
            // Rendering may have ended before the first PropertiesChanged went out, in which
            // case Stopped was never a change a client could be told about.
            guard try await session.playbackStatus() == "Stopped" else { throw error }
        }
        await session.stop()
    }

    /// Renders both parts through mpv with its PCM file output, gapless, and waits for it to
    /// exit at the end of the playlist (which finalizes the file).
    @MainActor
    static func renderMPV(programs: Programs, environment: [String: String], source: Source, output: URL, log: URL)
        async throws
    {
        try? FileManager.default.removeItem(at: output)
        let result = try await Tools.run(
            [
                programs.mpv, "--no-config", "--no-video", "--ao=pcm", "--ao-pcm-file=\(output.path)",
                "--gapless-audio=yes",
                "--audio-format=s16", "--audio-samplerate=\(sampleRate)", "--audio-channels=mono", "--idle=no",
                "--no-terminal",
                "--",
            ] + source.parts.map(\.path), environment: environment, log: log, timeout: .seconds(60))
        guard result.status == 0 else { throw HarnessError("mpv exited with status \(result.status); see \(log.path)") }
    }

    /// `analyse`, with its failure as the benchmark's.
    static func analyseRendering(_ output: URL, source: Source) throws -> Analysis {
        do {
            return try analyse(try WAV(contentsOf: output), source: source)
        } catch let error as AudioCheckError {
            throw HarnessError(error.description)
        }
    }
}

extension Benchmark {
    /// Figure 7: two halves of one sine rendered back to back; samples inserted or lost.
    func gapless() async throws {
        let folder = programs.workDir.appendingPathComponent("gapless")
        let source = try await Gapless.prepare(programs: programs, folder: folder)
        var joint = Row(
            figure: "gapless: samples inserted (+) or lost (−) at the joint", unit: "samples", better: .neither,
            decimals: 0, ratioOverride: "–")
        var length = Row(
            figure: "gapless: rendered length − expected length", unit: "samples", better: .neither, decimals: 0,
            ratioOverride: "–")
        for kind in PlayerKind.allCases {
            let output = folder.appendingPathComponent("rendered-\(kind.rawValue).wav")
            do {
                let session = try await PlayerSession(kind, programs: programs, label: "gapless")
                defer { session.close() }
                if kind == .quaver {
                    try await Gapless.renderQuaver(session, programs: programs, source: source, output: output)
                } else {
                    try await Gapless.renderMPV(
                        programs: programs, environment: session.environment, source: source, output: output,
                        log: session.logFile)
                }
                let analysis = try Gapless.analyseRendering(output, source: source)
                joint[kind] = .success(Measure(Double(analysis.inserted)))
                length[kind] = .success(Measure(Double(analysis.renderedSamples - analysis.expectedSamples)))
                report.note("Gapless, \(kind.title): \(analysis.summary).")
            } catch let error as HarnessError {
                joint[kind] = .failure(error)
                length[kind] = .failure(error)
                report.problem("gapless, \(kind.title): \(error)")
            }
        }
        report.add(joint)
        report.add(length)
        report.note(
            "Gapless: a \(Gapless.frequency) Hz sine with quiet white noise mixed in (so that aligning it is unambiguous), \(source.reference.count) samples (44.1 kHz mono, S16LE) made by gst-launch-1.0 audiotestsrc, split at sample \(source.splitAt) into two FLAC files (each checked to decode back to exactly its samples), rendered by Quaver into audioconvert ! wavenc ! filesink and by mpv with --ao=pcm --gapless-audio=yes; the rendered file is aligned with the sine near its start and near its end, and the difference of the two alignments is what was inserted or lost at the joint (the analysis is first checked on copies damaged on purpose: silence inserted, samples dropped, padding at the start). Whether each rendered WAV header was finalized is given above."
        )
    }
}
