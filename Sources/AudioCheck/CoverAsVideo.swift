public import Foundation

/// Files whose cover picture is stored as a video track (one still frame beside the audio,
/// as some taggers and converters write them), made with `gst-launch-1.0`. A player must
/// play their audio and never decode the picture; playbin on its own would.
public enum CoverAsVideo: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A JPEG frame and FLAC audio in Matroska.
    case jpegInMatroska
    /// A PNG frame and Opus audio in QuickTime.
    case pngInQuickTime

    public var description: String {
        switch self {
        case .jpegInMatroska: "a JPEG frame and FLAC audio in Matroska"
        case .pngInQuickTime: "a PNG frame and Opus audio in QuickTime"
        }
    }

    public var fileExtension: String {
        switch self {
        case .jpegInMatroska: "mkv"
        case .pngInQuickTime: "mov"
        }
    }

    /// The element that decodes the audio.
    public var audioDecoder: String {
        switch self {
        case .jpegInMatroska: "flacdec"
        case .pngInQuickTime: "opusdec"
        }
    }

    /// The element that would decode the picture (what playbin alone makes for it).
    public var pictureDecoder: String {
        switch self {
        case .jpegInMatroska: "jpegdec"
        case .pngInQuickTime: "pngdec"
        }
    }

    /// The arguments of `gst-launch-1.0` that write such a file of `seconds` of audio (a
    /// 440 Hz tone) to `file`; the picture is one frame lasting one second. (With more than
    /// about 5 s of audio, qtmux's file no longer shows its picture track to qtdemux.)
    public func gstLaunchArguments(file: URL, seconds: Int) -> [String] {
        let (picture, mux, rate, encoder) =
            switch self {
            case .jpegInMatroska: ("jpegenc", "matroskamux", 44100, "flacenc")
            case .pngInQuickTime: ("pngenc", "qtmux", 48000, "opusenc")
            }
        return [
            "-q", "videotestsrc", "num-buffers=1", "!", "video/x-raw,width=64,height=64,framerate=1/1", "!", picture,
            "!", mux, "name=mux", "!", "filesink", "location=\(file.path)",
            "audiotestsrc", "freq=440", "volume=0.25", "samplesperbuffer=\(rate / 10)", "num-buffers=\(seconds * 10)",
            "!", "audio/x-raw,rate=\(rate),channels=1", "!", "audioconvert", "!", encoder, "!", "mux.",
        ]
    }
}
