import Foundation
import TestKit

/// One short tagged file of each format found in users' libraries, made with ffmpeg (and
/// mpcenc for Musepack), as a music folder holds them. The names are those `quaver doctor`
/// gives the formats, so that what it says of this machine can be checked against what plays.
struct FormatSample: Sendable {
    /// The format's name as `quaver doctor` gives it.
    var format: String
    var file: URL
    /// The title its tags give.
    var title: String
}

enum FormatLibrary {
    static let seconds = 3

    /// How each format is made: its file name, and the encoder's arguments after the input.
    /// Musepack and APE have no encoder in ffmpeg: Musepack is made by mpcenc from a WAV,
    /// and APE (Monkey's Audio, whose encoder Debian does not ship) cannot be made here.
    private static let recipes: [(format: String, file: String, arguments: [String])] = [
        ("MP3", "01 mp3.mp3", ["-c:a", "libmp3lame"]),
        ("FLAC", "02 flac.flac", ["-c:a", "flac"]),
        ("Ogg Vorbis", "03 vorbis.ogg", ["-c:a", "libvorbis"]),
        ("Opus", "04 opus.opus", ["-c:a", "libopus"]),
        ("M4A (AAC)", "05 aac.m4a", ["-c:a", "aac"]),
        ("M4A (ALAC)", "06 alac.m4a", ["-c:a", "alac"]),
        ("AIFF", "07 aiff.aiff", ["-write_id3v2", "1"]),
        ("WMA", "08 wma.wma", ["-c:a", "wmav2"]),
        ("WavPack", "09 wavpack.wv", ["-c:a", "wavpack"]),
        ("MKA", "11 mka.mka", ["-c:a", "libvorbis"]),
        ("WAV", "12 wav.wav", []),
        ("MP4 video (AAC)", "13 video.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac"]),
        ("MKV video (Opus)", "14 video.mkv", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-c:a", "libopus"]),
        ("Ogg video (Vorbis)", "15 video.ogv", ["-c:v", "libtheora", "-c:a", "libvorbis"]),
    ]

    /// Makes the folder; `skipped` says which formats could not be made here, and why.
    static func make(in folder: URL) async throws -> (samples: [FormatSample], skipped: [String]) {
        guard let ffmpeg = Tools.find("ffmpeg") else { throw HarnessError("ffmpeg is not installed (scripts/setup)") }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let environment = ProcessInfo.processInfo.environment
        let tone = ["-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds):sample_rate=44100"]
        let picture = ["-f", "lavfi", "-i", "testsrc=duration=\(seconds):size=160x120:rate=10"]
        var samples: [FormatSample] = []
        var skipped: [String] = []
        for recipe in recipes {
            let file = folder.appendingPathComponent(recipe.file)
            let title = "Format \(recipe.format)"
            let video = recipe.format.contains("video")
            let inputs = video ? picture + tone : tone
            let made = try await Tools.run(
                ffmpeg,
                ["-loglevel", "error", "-y"] + inputs + ["-ac", "2", "-shortest"]
                    + tags(title) + recipe.arguments + [file.path],
                environment: environment)
            guard made.status == 0 else { throw HarnessError("ffmpeg could not make \(recipe.format): \(made.error)") }
            samples.append(FormatSample(format: recipe.format, file: file, title: title))
        }
        if let mpcenc = Tools.find("mpcenc") {
            // mpcenc reads only files named .wav; made beside the folder, not in it.
            let wav = folder.deletingLastPathComponent().appendingPathComponent("musepack-source.wav")
            let file = folder.appendingPathComponent("10 musepack.mpc")
            let title = "Format Musepack"
            _ = try await Tools.run(
                ffmpeg, ["-loglevel", "error", "-y"] + tone + ["-ac", "2", "-f", "wav", wav.path],
                environment: environment)
            let made = try await Tools.run(
                mpcenc,
                [
                    "--silent", "--overwrite", "--title", title, "--artist", artist, "--album", album, wav.path,
                    file.path,
                ],
                environment: environment)
            try? FileManager.default.removeItem(at: wav)
            guard made.status == 0 else { throw HarnessError("mpcenc could not make Musepack: \(made.error)") }
            samples.append(FormatSample(format: "Musepack", file: file, title: title))
        } else {
            skipped.append("Musepack: mpcenc is not installed (musepack-tools)")
        }
        skipped.append("APE (Monkey's Audio): no encoder is packaged for Debian or Ubuntu")
        samples.sort { $0.file.lastPathComponent < $1.file.lastPathComponent }
        return (samples, skipped)
    }

    static let artist = "Quaver Formats"
    static let album = "Every Format"

    private static func tags(_ title: String) -> [String] {
        ["-metadata", "title=\(title)", "-metadata", "artist=\(artist)", "-metadata", "album=\(album)"]
    }
}
