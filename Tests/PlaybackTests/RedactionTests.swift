import Testing

@testable import Media
@testable import PlaybackEngine

/// `MediaSources.redactingCredentials(in:)`: the one function that takes the secrets out of
/// the URLs in a text before it is logged or shown.
@Suite("Redacting credentials")
struct RedactionTests {
    @Test(arguments: [
        ("https://user:secret@host/live.mp3", "https://***@host/live.mp3"),
        ("http://token@radio.example:8000/a", "http://***@radio.example:8000/a"),
        ("http://user:p@ss@host/x", "http://***@host/x"),
        ("skipping http://user:secret@host: Not Found", "skipping http://***@host: Not Found"),
        ("http://host/a@b.mp3", "http://host/a@b.mp3"),
        ("https://host/live?token=abc123&bitrate=128", "https://host/live?token=***&bitrate=128"),
        ("https://host/s?Key=k1;sig=zz#frag?password=x", "https://host/s?Key=***;sig=***#frag?password=x"),
        ("https://host/s?flag&api_key=", "https://host/s?flag&api_key=***"),
        ("skipping https://host/a?token=abc: gone.", "skipping https://host/a?token=***: gone."),
        (
            "from \"http://a:b@one/x\" to HTTPS://c:d@two?pass=e, then file:///tmp/f@g.flac",
            "from \"http://***@one/x\" to HTTPS://***@two?pass=***, then file:///tmp/f@g.flac"
        ),
        ("no URL here: user:secret@host", "no URL here: user:secret@host"),
        ("://user:secret@host", "://user:secret@host"),
        ("", ""),
        ("http://ünï:cødé@hôst/ä", "http://***@hôst/ä"),
    ])
    func secretsAreReplaced(text: String, expected: String) {
        #expect(MediaSources.redactingCredentials(in: text) == expected)
    }

    @Test func aURLWithoutSecretsIsTheSameText() {
        let text = "gapless switch to http://radio.example:8000/live.mp3?bitrate=128#x (3 of 4)"
        #expect(MediaSources.redactingCredentials(in: text) == text)
    }

    @Test func displayNamesAreRedacted() {
        #expect(MediaSources.displayName("https://user:secret@host/a.mp3") == "https://***@host/a.mp3")
        #expect(MediaSources.displayName("file:///music/a%40b.flac") == "/music/a@b.flac")
    }
}
