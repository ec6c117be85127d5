import CGStreamer
import Foundation
import TestKit
import Testing
import ToneGenerator

@testable import Media
@testable import PlaybackEngine
@testable import PlaybackPipeline
@testable import PlaybackPlayer

/// Tag lists built in memory, as GStreamer hands them over.
enum TagLists {
    /// A new list (the caller unrefs it) holding `values` of the text tag `tag`, in order.
    static func strings(_ tag: String, _ values: [String]) -> UnsafeMutablePointer<GstTagList> {
        GStreamer.initialize()
        let list = gst_tag_list_new_empty()!
        add(tag, values, to: list)
        return list
    }

    static func add(_ tag: String, _ values: [String], to list: UnsafeMutablePointer<GstTagList>) {
        let stringType = g_type_from_name("gchararray")
        for text in values {
            var value = GValue()
            g_value_init(&value, stringType)
            g_value_set_string(&value, text)
            gst_tag_list_add_value(list, GST_TAG_MERGE_APPEND, tag, &value)
            g_value_unset(&value)
        }
    }

    /// Adds a picture of `bytes` (not checked to be an image) to `tag` of `list`.
    static func addPicture(_ bytes: Data, to list: UnsafeMutablePointer<GstTagList>, tag: String = GST_TAG_IMAGE) {
        let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil)!
        bytes.withUnsafeBytes { _ = gst_buffer_fill(buffer, 0, $0.baseAddress, gsize($0.count)) }
        let sample = gst_sample_new(buffer, nil, nil, nil)
        gst_buffer_unref(buffer)
        var value = GValue()
        g_value_init(&value, gst_sample_get_type())
        g_value_take_boxed(&value, UnsafeRawPointer(sample))
        gst_tag_list_add_value(list, GST_TAG_MERGE_APPEND, tag, &value)
        g_value_unset(&value)
    }
}

@Suite("TagReader: bounded reading")
struct TagBoundsTests {
    @Test(.timeLimit(.minutes(1)))
    func aHundredThousandValuesAreReadAsTheFirst32() {
        let list = TagLists.strings(GST_TAG_ARTIST, (0..<100_000).map { "Artist \($0)" })
        defer { gst_tag_list_unref(list) }
        #expect(gst_tag_list_get_tag_size(list, GST_TAG_ARTIST) == 100_000)
        let started = ContinuousClock.now
        let artists = TagReader(list).strings(GST_TAG_ARTIST)
        let elapsed = ContinuousClock.now - started
        #expect(artists == (0..<32).map { "Artist \($0)" })
        #expect(elapsed < .milliseconds(200), "read in \(elapsed)")
    }

    @Test func duplicatesAmongTheFirstValuesAreDropped() {
        let list = TagLists.strings(
            GST_TAG_GENRE, ["Jazz", " Jazz ", "", "Blues", "Jazz"] + Array(repeating: "Late", count: 40))
        defer { gst_tag_list_unref(list) }
        #expect(TagReader(list).strings(GST_TAG_GENRE) == ["Jazz", "Blues", "Late"])
    }

    @Test func aValueOfMegabytesIsReadNoFurtherThanItsStart() {
        let list = TagLists.strings(GST_TAG_TITLE, [String(repeating: "Long ", count: 2_000_000)])
        defer { gst_tag_list_unref(list) }
        let title = TagReader(list).strings(GST_TAG_TITLE)
        #expect(title.count == 1 && title[0].count <= 1024 && title[0].hasPrefix("Long Long"))
    }

    @Test func theStartOfAValueEndsOnACharacter() {
        // 1 byte, then two-byte characters: the limit falls in the middle of one.
        let text = "a" + String(repeating: "é", count: 3_000)
        let cut = text.withCString { TagReader.prefix(of: $0) }
        #expect(cut.utf8.count == 4_095)
        #expect(cut == "a" + String(repeating: "é", count: 2_047))
        #expect("short".withCString { TagReader.prefix(of: $0) } == "short")
        let exact = String(repeating: "b", count: TagReader.maximumValueBytes)
        #expect(exact.withCString { TagReader.prefix(of: $0) } == exact)
    }

    @MainActor
    @Test(.timeLimit(.minutes(1)))
    func aStreamsTagsAreBoundedOnTheMainActor() {
        let list = TagLists.strings(GST_TAG_ARTIST, (0..<100_000).map { "Artist \($0)" })
        defer { gst_tag_list_unref(list) }
        TagLists.add(GST_TAG_GENRE, (0..<100_000).map { "Genre \($0)" }, to: list)
        TagLists.add(GST_TAG_TITLE, (0..<100_000).map { "Title \($0)" }, to: list)
        let started = ContinuousClock.now
        let tags = StreamTags(list)
        let elapsed = ContinuousClock.now - started
        #expect(tags.title == "Title 0")
        #expect(tags.artists.count == 32 && tags.genres.count == 32)
        #expect(elapsed < .milliseconds(200), "read in \(elapsed)")
    }

    @Test func onlyTheFirst32PicturesAreLookedAt() {
        GStreamer.initialize()
        let list = gst_tag_list_new_empty()!
        defer { gst_tag_list_unref(list) }
        for index in 0..<1_000 { TagLists.addPicture(Data("not an image \(index)".utf8), to: list) }
        var looked = 0
        let found = TagReader(list).coverSample(maximumBytes: 1 << 20) { _ in
            looked += 1
            return false
        }
        #expect(found == nil)
        #expect(looked == TagReader.maximumValues)
    }

    @Test func aPictureOverTheLimitIsNeitherMappedNorCopied() throws {
        GStreamer.initialize()
        let list = gst_tag_list_new_empty()!
        defer { gst_tag_list_unref(list) }
        let png = try TrackGenerator.image(color: 0x10_2030)
        // A front-cover-sized PNG, padded.
        TagLists.addPicture(png + Data(count: ArtworkCache.maximumImageBytes), to: list)
        TagLists.addPicture(png, to: list)
        var oversized: [Int] = []
        var looked: [Int] = []
        let image = TagReader(list).coverImage(
            maximumBytes: ArtworkCache.maximumImageBytes, oversized: { oversized.append($0) }
        ) {
            looked.append($0.count)
            return ImageFormat(magic: $0) != nil
        }
        #expect(image == png, "the small picture is the one shown")
        #expect(oversized == [png.count + ArtworkCache.maximumImageBytes])
        #expect(looked == [png.count], "the large one was never mapped")
        #expect(TagReader(list).largestPictureBytes() == png.count + ArtworkCache.maximumImageBytes)

        // A stream's tags take no copy until the picture is asked for, and none too large.
        let tags = StreamTags(list)
        #expect(tags.image == png)
        #expect(!tags.isEmpty)
        var copy = tags
        copy.image = nil
        #expect(copy.image == nil && copy != tags)
    }

    @Test func anOversizedEmbeddedPictureIsNotCachedAndLoggedOncePerTrack() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let log = LogCapture()
        let cache = ArtworkCache(folder: folder.path("art"), logger: log.logger)
        GStreamer.initialize()
        let list = gst_tag_list_new_empty()!
        defer { gst_tag_list_unref(list) }
        let png = try TrackGenerator.image(color: 0x40_5060)
        TagLists.addPicture(png + Data(count: ArtworkCache.maximumImageBytes), to: list)
        let uri = folder.uri("huge.ogg")
        #expect(cache.artwork(forTrack: uri, tags: TagReader(list)) == nil)
        #expect(cache.artwork(forTrack: uri, tags: TagReader(list)) == nil)
        let lines = log.lines(containing: "not showing the picture", folder.path("huge.ogg").path)
        #expect(lines.count == 1, "\(log.messages)")
        #expect(lines.first?.contains("over the 16 MiB limit") == true, "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: folder.path("art").path), "nothing was written")

        // A picture within the limit is stored straight from GStreamer's buffer.
        let small = gst_tag_list_new_empty()!
        defer { gst_tag_list_unref(small) }
        TagLists.addPicture(png, to: small)
        let url = try #require(cache.artwork(forTrack: folder.uri("small.flac"), tags: TagReader(small)))
        #expect(try Data(contentsOf: #require(URL(string: url))) == png)
    }
}
