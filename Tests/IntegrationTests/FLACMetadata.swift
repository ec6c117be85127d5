import Foundation
import TestKit

/// Gives a generated FLAC file other tags: its VORBIS_COMMENT and PICTURE blocks replaced
/// (GStreamer's tag setters cannot write a 10 MB title, and a command line cannot hold one).
enum FLACMetadata {
    /// The largest metadata block a FLAC file holds: its length is 24 bits.
    static let maximumBlockBytes = (1 << 24) - 1

    /// Writes `source` to `destination` with `comments` (`KEY=value`) as its only Vorbis
    /// comments (none: no comment block) and `pictures` as its front covers.
    static func rewrite(_ source: URL, to destination: URL, comments: [String], pictures: [Data] = []) throws {
        let data = try Data(contentsOf: source)
        guard data.starts(with: Data("fLaC".utf8)) else { throw HarnessError("\(source.path) is not FLAC") }
        var blocks: [(type: UInt8, body: Data)] = []
        var offset = 4
        while true {
            guard offset + 4 <= data.count else { throw HarnessError("\(source.path): metadata cut short") }
            let header = data[offset]
            let length = Int(data[offset + 1]) << 16 | Int(data[offset + 2]) << 8 | Int(data[offset + 3])
            let type = header & 0x7F
            if type != 4, type != 6, type != 1 { blocks.append((type, data[(offset + 4)..<(offset + 4 + length)])) }
            offset += 4 + length
            if header & 0x80 != 0 { break }
        }
        if !comments.isEmpty { blocks.append((4, vorbisComment(comments))) }
        for picture in pictures { blocks.append((6, pictureBlock(picture))) }
        var out = Data("fLaC".utf8)
        for (index, block) in blocks.enumerated() {
            guard block.body.count <= maximumBlockBytes else { throw HarnessError("a FLAC block holds < 16 MiB") }
            out.append(block.type | (index == blocks.count - 1 ? 0x80 : 0))
            out.append(contentsOf: [UInt8(block.body.count >> 16), UInt8(block.body.count >> 8 & 0xFF)])
            out.append(UInt8(block.body.count & 0xFF))
            out.append(block.body)
        }
        out.append(data[offset...])
        try out.write(to: destination)
    }

    /// A PNG signature padded with zeros to `bytes`: what Quaver takes for an image (it
    /// checks the first bytes) and keeps as artwork.
    static func fakePNG(bytes: Int) -> Data {
        Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(count: bytes - 8)
    }

    private static func vorbisComment(_ fields: [String]) -> Data {
        var body = littleEndian("quaver tests".utf8.count) + Data("quaver tests".utf8) + littleEndian(fields.count)
        for field in fields { body += littleEndian(field.utf8.count) + Data(field.utf8) }
        return body
    }

    private static func pictureBlock(_ image: Data) -> Data {
        let mime = Data("image/png".utf8)
        return bigEndian(3) + bigEndian(mime.count) + mime + bigEndian(0)
            + [1, 1, 24, 0].map(bigEndian).reduce(Data(), +) + bigEndian(image.count) + image
    }

    private static func littleEndian(_ value: Int) -> Data {
        withUnsafeBytes(of: UInt32(value).littleEndian) { Data($0) }
    }

    private static func bigEndian(_ value: Int) -> Data {
        withUnsafeBytes(of: UInt32(value).bigEndian) { Data($0) }
    }
}
