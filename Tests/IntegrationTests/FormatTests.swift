import DBus
import Foundation
import TestKit
import Testing

/// A music folder with one short file of each format of users' libraries, played to its end
/// by the real binary under whichever GStreamer plugin set the run has (`scripts/test` runs
/// this suite under the minimal set and the desktop set). What `quaver doctor` says of this
/// machine decides what is expected: each format it says plays is shown with its tags and
/// its Position advances; each it says cannot play is skipped with the reason, and the queue
/// goes on. So the doctor's word is checked against real playback, both ways.
@Suite("every format of a music library")
@MainActor
struct FormatTests {
    @Test("a folder of every format plays to its end: what doctor says plays, plays; the rest is skipped")
    func everyFormatPlaysOrIsSkipped() async throws {
        let session = try await Session()
        defer { session.stop() }
        let folder = session.bus.directory.appendingPathComponent("music")
        let (samples, skipped) = try await FormatLibrary.make(in: folder)
        for reason in skipped { print("formats: not tested: \(reason)") }

        let doctor = try await Tools.run(
            Tools.quaver, ["doctor", "--name", session.name], environment: session.environment)
        let playable = Self.playable(in: doctor.output)
        let unplayable = Self.unplayable(in: doctor.output)
        for sample in samples {
            #expect(
                playable.contains(sample.format) != unplayable.contains(sample.format),
                "doctor names \(sample.format) neither as playable nor as not: \(doctor.output)")
        }

        try await session.launch(["--log-level", "info", folder.path])
        // Stopped until the first file is loaded; the end is the Stopped after that.
        try await session.waitForStatus("Playing")
        // Each file's Metadata and Position, read while it is current.
        var seen: [String: [Int64]] = [:]
        var titles: [String: String] = [:]
        let ended = try await Waiter.poll(
            timeout: .seconds(30 + samples.count * (FormatLibrary.seconds + 4)), every: .milliseconds(250)
        ) {
            guard let status = try? await session.get("PlaybackStatus").string else { return false }
            if status == "Stopped" { return true }
            // Metadata and Position in one read, so that a switch between two reads cannot
            // give one track's Position to the other.
            guard status == "Playing",
                let all = try? await session.call(
                    "GetAll", interface: "org.freedesktop.DBus.Properties", [.string(MPRISNames.player)]),
                let properties = all.first?.stringVariantDictionary,
                let metadata = properties["Metadata"]?.stringVariantDictionary,
                let url = metadata["xesam:url"]?.string, let position = properties["Position"]?.int64
            else { return false }
            seen[url, default: []].append(position)
            titles[url] = metadata["xesam:title"]?.string
            return false
        }
        #expect(ended, "the folder did not play to its end; log:\n\(session.log())")

        let log = session.log()
        for sample in samples {
            let url = sample.file.absoluteString
            let positions = seen[url] ?? []
            if playable.contains(sample.format) {
                #expect(
                    positions.count >= 2 && positions.max()! > positions.first!,
                    "\(sample.format) did not play with its Position advancing: \(positions)\nlog:\n\(log)")
                #expect(
                    titles[url] == sample.title,
                    "\(sample.format) shows the title \(titles[url] ?? "nil"), not its tag's \(sample.title)")
            } else {
                #expect(positions.isEmpty, "\(sample.format), which doctor says cannot play, was shown playing")
                #expect(
                    log.contains("\(sample.file.lastPathComponent)")
                        && log.contains("no GStreamer plugin can decode it"),
                    "\(sample.format) was not skipped with its reason; log:\n\(log)")
            }
        }
        print(
            "formats: played \(samples.filter { playable.contains($0.format) }.map(\.format)); skipped \(samples.filter { unplayable.contains($0.format) }.map(\.format))"
        )
    }

    /// The formats doctor's "GStreamer formats" line says play.
    static func playable(in output: String) -> Set<String> {
        guard let line = output.split(separator: "\n").first(where: { $0.contains("GStreamer formats") }),
            let range = line.range(of: " plays ")
        else { return [] }
        return Set(line[range.upperBound...].components(separatedBy: ", "))
    }

    /// The formats doctor says cannot play.
    static func unplayable(in output: String) -> Set<String> {
        var names: Set<String> = []
        for line in output.split(separator: "\n") {
            guard let range = line.range(of: "cannot play ") else { continue }
            let rest = line[range.upperBound...]
            // The name ends where the detail column begins: two spaces or more.
            names.insert(String(rest.components(separatedBy: "  ").first ?? String(rest)))
        }
        return names
    }
}
