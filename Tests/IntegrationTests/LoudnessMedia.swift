import AudioCheck
import FoundationEssentials
import TestKit

/// Tones tagged with known ReplayGain values in each way a file can hold them, made with
/// `gst-launch-1.0`; the tag formats GStreamer's muxers do not write (ID3 TXXX frames, MP4
/// freeform atoms) are written here, byte by byte.
enum LoudnessMedia {
    /// The tones' amplitude: a quarter of full scale, leaving room for the positive gains tested.
    static let amplitude = 0.25
    static var level: Double { Level.sine(amplitude: amplitude) }

    /// How a file holds its gains.
    enum Container: String, CaseIterable, Sendable {
        /// FLAC, Vorbis comments.
        case flac
        /// Ogg Vorbis, Vorbis comments.
        case vorbis
        /// Ogg Opus, `REPLAYGAIN_*` Vorbis comments.
        case opus
        /// Ogg Opus, `R128_TRACK_GAIN` / `R128_ALBUM_GAIN` (Q7.8 against -23 LUFS).
        case opusR128 = "opus-r128"
        /// MP3 with an APEv2 tag.
        case ape
        /// MP3 with ID3v2.4 TXXX frames.
        case id3
        /// MP3 in MP4 with iTunes freeform (`----`) atoms.
        case mp4

        var fileExtension: String {
            switch self {
            case .flac: "flac"
            case .vorbis: "ogg"
            case .opus, .opusR128: "opus"
            case .ape, .id3: "mp3"
            case .mp4: "m4a"
            }
        }
    }

    /// The ReplayGain values to tag; nil ones are left out.
    struct Gains: Sendable {
        var track: Double?
        var trackPeak: Double?
        var album: Double?
        var albumPeak: Double?
    }

    /// A tone of `seconds` at `frequency` on `album`, tagged with `gains` as `container` holds
    /// them (Opus R128: the gains rounded to Q7.8 and moved to R128's reference).
    static func make(
        _ name: String, _ container: Container, gains: Gains, album: String, frequency: Int, seconds: Double,
        in folder: URL
    ) async throws -> URL {
        guard let gstLaunch = Tools.find("gst-launch-1.0") else {
            throw HarnessError("gst-launch-1.0 is not installed (gstreamer1.0-tools)")
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(name).\(container.fileExtension)")
        var tags = ["title=\"\(name)\"", "album=\"\(album)\""]
        switch container {
        case .opusR128:
            // One extended comment per file from taginject: the track's gain, else the album's.
            if let track = gains.track {
                tags.append("extended-comment=\"R128_TRACK_GAIN=\(r128(track))\"")
            } else if let album = gains.album {
                tags.append("extended-comment=\"R128_ALBUM_GAIN=\(r128(album))\"")
            }
        case .id3, .mp4:
            break  // written after encoding
        default:
            if let value = gains.track { tags.append("replaygain-track-gain=(double)\(value)") }
            if let value = gains.trackPeak { tags.append("replaygain-track-peak=(double)\(value)") }
            if let value = gains.album { tags.append("replaygain-album-gain=(double)\(value)") }
            if let value = gains.albumPeak { tags.append("replaygain-album-peak=(double)\(value)") }
        }
        let encoder: [String] =
            switch container {
            case .flac: ["flacenc"]
            case .vorbis: ["vorbisenc", "quality=0.8", "!", "oggmux"]
            case .opus, .opusR128: ["audioresample", "!", "opusenc", "bitrate=128000", "!", "oggmux"]
            case .ape: ["lamemp3enc", "target=bitrate", "bitrate=192", "!", "apev2mux"]
            case .id3: ["lamemp3enc", "target=bitrate", "bitrate=192"]
            case .mp4: ["lamemp3enc", "target=bitrate", "bitrate=192", "!", "mpegaudioparse", "!", "mp4mux"]
            }
        let buffers = Int((seconds * 44100 / 4410).rounded())
        let arguments =
            [
                "-q", "audiotestsrc", "wave=sine", "volume=\(amplitude)", "freq=\(frequency)", "samplesperbuffer=4410",
                "num-buffers=\(buffers)",
                "!", "audio/x-raw,rate=44100,channels=2", "!", "audioconvert",
            ]
            + (container == .id3 || container == .mp4 ? [] : ["!", "taginject", "tags=\(tags.joined(separator: ","))"])
            + ["!"] + encoder + ["!", "filesink", "location=\(file.path)"]
        let environment = ProcessInfo.processInfo.environment.merging(["GST_REGISTRY": Session.sharedRegistry]) { $1 }
        let result = try await Tools.run(gstLaunch, arguments, environment: environment)
        guard result.status == 0 else {
            throw HarnessError(
                "gst-launch-1.0 could not make \(file.lastPathComponent): \(result.output)\(result.error)")
        }
        var fields = [("TITLE", name), ("ALBUM", album)]
        if let value = gains.track { fields.append(("REPLAYGAIN_TRACK_GAIN", "\(decibels(value))")) }
        if let value = gains.trackPeak { fields.append(("REPLAYGAIN_TRACK_PEAK", "\(value)")) }
        if let value = gains.album { fields.append(("REPLAYGAIN_ALBUM_GAIN", "\(decibels(value))")) }
        if let value = gains.albumPeak { fields.append(("REPLAYGAIN_ALBUM_PEAK", "\(value)")) }
        switch container {
        case .id3:
            let audio = try Data(contentsOf: file)
            try (id3Tag(fields) + audio).write(to: file)
        case .mp4:
            try addFreeformAtoms(fields, to: file)
        default:
            break
        }
        return file
    }

    /// The Q7.8 R128 gain of a ReplayGain gain.
    static func r128(_ replayGain: Double) -> Int { Int(((replayGain - 5) * 256).rounded()) }

    /// A gain as taggers write it: `-6.00 dB`.
    static func decibels(_ gain: Double) -> String {
        let hundredths = Int((abs(gain) * 100).rounded())
        return (gain < 0 ? "-" : "+") + "\(hundredths / 100)." + (hundredths % 100 < 10 ? "0" : "")
            + "\(hundredths % 100) dB"
    }

    // MARK: - ID3v2.4

    /// An ID3v2.4 tag: TIT2 and TALB for the title and album, TXXX for the rest.
    static func id3Tag(_ fields: [(String, String)]) -> Data {
        var frames = Data()
        for (key, value) in fields {
            var body = Data([3])  // UTF-8
            let id: String
            switch key {
            case "TITLE": id = "TIT2"
            case "ALBUM": id = "TALB"
            default:
                id = "TXXX"
                body += Data(key.utf8) + Data([0])
            }
            body += Data(value.utf8)
            frames += Data(id.utf8) + synchsafe(body.count) + Data([0, 0]) + body
        }
        return Data("ID3".utf8) + Data([4, 0, 0]) + synchsafe(frames.count) + frames
    }

    private static func synchsafe(_ value: Int) -> Data {
        Data([UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)])
    }

    // MARK: - MP4

    /// Appends to the file's `moov` (its last atom, as mp4mux writes it, so that no sample
    /// offset moves) a `udta` with the iTunes metadata: `©nam` and `©alb`, and a freeform
    /// `----` atom (mean `com.apple.iTunes`) for each ReplayGain value.
    static func addFreeformAtoms(_ fields: [(String, String)], to file: URL) throws {
        var bytes = try Data(contentsOf: file)
        var offset = 0
        var moov: (start: Int, size: Int)?
        while offset + 8 <= bytes.count {
            let size = Int(bytes.readUInt32(at: offset))
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            guard size >= 8 else { break }
            if type == "moov" { moov = (offset, size) }
            offset += size
        }
        guard var moov, moov.start + moov.size == bytes.count else {
            throw HarnessError("\(file.lastPathComponent): no moov atom at the end")
        }
        // mp4mux writes an empty `udta` of its own, and a reader takes the first one.
        var child = moov.start + 8
        while child + 8 <= moov.start + moov.size {
            let size = Int(bytes.readUInt32(at: child))
            guard size >= 8 else { break }
            if String(decoding: bytes[child + 4..<child + 8], as: UTF8.self) == "udta" {
                bytes.removeSubrange(child..<child + size)
                moov.size -= size
            } else {
                child += size
            }
        }
        func atom(_ type: [UInt8], _ body: Data) -> Data { UInt32(8 + body.count).bigEndianData + Data(type) + body }
        func text(_ value: String) -> Data {
            atom(Array("data".utf8), Data([0, 0, 0, 1, 0, 0, 0, 0]) + Data(value.utf8))
        }
        var items = Data()
        for (key, value) in fields {
            switch key {
            case "TITLE": items += atom([0xA9] + Array("nam".utf8), text(value))
            case "ALBUM": items += atom([0xA9] + Array("alb".utf8), text(value))
            default:
                let mean = atom(Array("mean".utf8), Data([0, 0, 0, 0]) + Data("com.apple.iTunes".utf8))
                let name = atom(Array("name".utf8), Data([0, 0, 0, 0]) + Data(key.utf8))
                items += atom(Array("----".utf8), mean + name + text(value))
            }
        }
        let handler = atom(Array("hdlr".utf8), Data(count: 8) + Data("mdirappl".utf8) + Data(count: 9))
        let meta = atom(Array("meta".utf8), Data(count: 4) + handler + atom(Array("ilst".utf8), items))
        let udta = atom(Array("udta".utf8), meta)
        bytes.replaceSubrange(moov.start..<moov.start + 4, with: UInt32(moov.size + udta.count).bigEndianData)
        bytes += udta
        try bytes.write(to: file)
    }
}

extension LoudnessMedia {
    /// Sets the output gain of an Ogg Opus file's header (`OpusHead`, Q7.8 dB, which the
    /// decoder applies), and the checksum of the page that holds it.
    static func setOpusOutputGain(_ q78: Int16, in file: URL) throws {
        var bytes = [UInt8](try Data(contentsOf: file))
        guard bytes.count > 27, bytes[0..<4] == [0x4F, 0x67, 0x67, 0x53] else {
            throw HarnessError("\(file.lastPathComponent) is not Ogg")
        }
        let segments = Int(bytes[26])
        let packet = 27 + segments
        let pageLength = packet + bytes[27..<packet].reduce(0) { $0 + Int($1) }
        guard bytes.count >= pageLength, bytes[packet..<packet + 8].elementsEqual("OpusHead".utf8) else {
            throw HarnessError("\(file.lastPathComponent): no OpusHead in the first page")
        }
        let gain = UInt16(bitPattern: q78)
        bytes[packet + 16] = UInt8(gain & 0xFF)
        bytes[packet + 17] = UInt8(gain >> 8)
        bytes.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = oggCRC(bytes[0..<pageLength])
        bytes.replaceSubrange(
            22..<26, with: [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)])
        try Data(bytes).write(to: file)
    }

    /// Ogg's page checksum: CRC-32 with polynomial 0x04C11DB7, unreflected, starting at 0.
    private static func oggCRC(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}

extension Data {
    fileprivate func readUInt32(at offset: Int) -> UInt32 {
        self[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

extension UInt32 {
    fileprivate var bigEndianData: Data { withUnsafeBytes(of: bigEndian) { Data($0) } }
}
