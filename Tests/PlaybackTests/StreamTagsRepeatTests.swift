import CGStreamer
import Foundation
import TestKit
import Testing

@testable import Media
@testable import PlaybackPipeline

/// A decoder posts its stream's whole tag list again each time the bit rate moves: the
/// pipeline reads a tag list only when it says something new.
@Suite("Stream tags: repeated lists are not read again")
struct StreamTagsRepeatTests {
    private func list(_ text: String) throws -> UnsafeMutablePointer<GstTagList> {
        GStreamer.initialize()
        return try #require(gst_tag_list_new_from_string(text), "\(text)")
    }

    @Test func listsThatDifferOnlyInWhatIsNotReadAgree() throws {
        let first = try list("taglist, title=(string)Radio, artist=(string)Someone, bitrate=(uint)128000")
        let later = try list("taglist, title=(string)Radio, artist=(string)Someone, bitrate=(uint)131072")
        defer { [first, later].forEach { gst_tag_list_unref($0) } }
        #expect(StreamTags.agree(first, later))
        #expect(StreamTags.agree(later, first))
    }

    @Test(arguments: [
        "taglist, title=(string)Another, artist=(string)Someone, bitrate=(uint)128000",
        "taglist, artist=(string)Someone, bitrate=(uint)128000",
        "taglist, title=(string)Radio, artist=(string){ Someone, Else }",
        "taglist, title=(string)Radio, artist=(string)Someone, album=(string)Live",
        "taglist, title=(string)Radio, artist=(string)Someone, genre=(string)Jazz",
        "taglist, title=(string)Radio, artist=(string)Someone, organization=(string)Station",
    ])
    func aChangeInAnyTagThatIsReadDisagrees(_ text: String) throws {
        let first = try list("taglist, title=(string)Radio, artist=(string)Someone, bitrate=(uint)128000")
        let other = try list(text)
        defer { [first, other].forEach { gst_tag_list_unref($0) } }
        #expect(!StreamTags.agree(first, other))
        #expect(!StreamTags.agree(other, first))
    }

    @Test func aRepeatedPictureAgreesAndAnotherDoesNot() throws {
        let first = try list("taglist, title=(string)Radio")
        TagLists.addPicture(Data(repeating: 7, count: 64), to: first)
        let repeated = try #require(gst_tag_list_copy(first))  // holds the same sample
        let redrawn = try list("taglist, title=(string)Radio")
        TagLists.addPicture(Data(repeating: 7, count: 64), to: redrawn)
        let another = try list("taglist, title=(string)Radio")
        TagLists.addPicture(Data(repeating: 8, count: 64), to: another)
        defer { [first, repeated, redrawn, another].forEach { gst_tag_list_unref($0) } }
        #expect(StreamTags.agree(first, repeated))
        #expect(StreamTags.agree(first, redrawn), "the same bytes in a sample of its own")
        #expect(!StreamTags.agree(first, another))
    }

    /// A FLAC played through: GStreamer posts its tags again as the bit rate moves, and the
    /// pipeline reports them once.
    @Test(.timeLimit(.minutes(1)))
    @MainActor
    func aFileSTagsAreReportedOnceAsItPlays() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let files = try await Media.tracks(1, seconds: 60, in: folder)
        let probe = PipelineProbe(audioSink: "fakesink sync=false")
        let pipeline: Pipeline = probe.pipeline
        pipeline.load(files[0].absoluteString, state: .playing, number: 1, fresh: false)
        #expect(await probe.wait(upTo: .seconds(30)) { probe.endedStream })
        let tags = probe.events.compactMap { if case .tags(let tags) = $0 { tags } else { nil } }
        #expect(tags.count == 1, "\(tags)")
        #expect(tags.first?.title == "Track 1")

        // Loaded again, the same tags are a new stream's: reported again.
        pipeline.load(files[0].absoluteString, state: .playing, number: 2, fresh: false)
        #expect(
            await probe.wait(upTo: .seconds(30)) {
                probe.events.filter { if case .endOfStream = $0 { true } else { false } }.count == 2
            })
        let again = probe.events.compactMap { if case .tags(let tags) = $0 { tags } else { nil } }
        #expect(again.count == 2, "\(again)")
        pipeline.release()
    }
}
