import DBus
import Testing

@testable import quaver

/// The control script's decisions, input by input, with no snapserver and no bus: what each
/// line from snapserver and each change of Quaver's leads to.
@Suite("Snapcast control script: snapserver's requests and Quaver's changes")
struct SnapcastBridgeTests {
    typealias Bridge = SnapcastBridge

    static let ready = JSON.object(["jsonrpc": .string("2.0"), "method": .string("Plugin.Stream.Ready")])

    /// Quaver's Player properties, as `GetAll` answers them.
    static func player(
        status: String = "Playing", title: String = "Track 1", position: Int64 = 12_500_000, volume: Double = 0.8
    ) -> [String: Value] {
        [
            "PlaybackStatus": .string(status), "LoopStatus": .string("None"), "Shuffle": .boolean(false),
            "Volume": .double(volume), "Rate": .double(1), "MinimumRate": .double(0.5), "MaximumRate": .double(2),
            "Position": .int64(position), "CanGoNext": .boolean(true), "CanGoPrevious": .boolean(false),
            "CanPlay": .boolean(true), "CanPause": .boolean(true), "CanSeek": .boolean(true),
            "CanControl": .boolean(true),
            "Metadata": .stringVariantDictionary([
                "mpris:trackid": .objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/7")!),
                "xesam:title": .string(title), "xesam:artist": .strings(["Artist 1"]), "xesam:album": .string("Album"),
                "mpris:length": .int64(245_300_000), "xesam:trackNumber": .int32(3),
                "mpris:artUrl": .string("file:///tmp/cover.png"),
            ]),
        ]
    }

    /// A bridge whose Quaver runs and was read once.
    static func running() -> Bridge {
        var bridge = Bridge()
        _ = bridge.handle(.started(owned: true))
        _ = bridge.handle(.read(player()))
        return bridge
    }

    static func request(_ id: Int, _ method: String, _ params: String? = nil) -> Bridge.Input {
        .line(
            #"{"id":\#(id),"jsonrpc":"2.0","method":"\#(method)""# + (params.map { #","params":\#($0)"# } ?? "") + "}")
    }

    static func sent(_ actions: [Bridge.Action]) -> [String] {
        actions.compactMap { if case .send(let message) = $0 { message.text } else { nil } }
    }

    @Test func startingSaysReadyThenSendsWhatPlays() throws {
        var bridge = Bridge()
        #expect(bridge.handle(.started(owned: true)) == [.send(Self.ready), .readPlayer])
        let actions = bridge.handle(.read(Self.player()))
        #expect(actions.first == .readArt(url: "file:///tmp/cover.png"), "a local cover is read for snapserver")
        let line = try #require(Self.sent(actions).first)
        #expect(line.hasPrefix(#"{"jsonrpc":"2.0","method":"Plugin.Stream.Player.Properties","params":{"#))
        for part in [
            #""playbackStatus":"playing""#, #""loopStatus":"none""#, #""volume":80"#, #""rate":1.0"#,
            #""position":12.5"#, #""canGoNext":true"#, #""canGoPrevious":false"#, #""canControl":true"#,
            #""title":"Track 1""#, #""artist":["Artist 1"]"#, #""duration":245.3"#, #""trackNumber":3"#,
            #""trackId":"/org/mpris/MediaPlayer2/TrackList/7""#,
        ] {
            #expect(line.contains(part), "\(part) in \(line)")
        }
        #expect(!line.contains("artUrl"), "a file:// URL reaches no other machine: \(line)")
        let art = JSON.object(["data": .string("iVBORw=="), "extension": .string("png")])
        let withArt = try #require(Self.sent(bridge.handle(.artRead(url: "file:///tmp/cover.png", data: art))).first)
        #expect(withArt.contains(#""artData":{"data":"iVBORw==","extension":"png"}"#))
    }

    @Test func notRunningAtStartAsksTheBusToStartIt() throws {
        var bridge = Bridge()
        #expect(bridge.handle(.started(owned: false)) == [.send(Self.ready), .activate])
        let actions = bridge.handle(.activationFailed("org.freedesktop.DBus.Error.ServiceUnknown"))
        #expect(
            actions.first
                == .log(
                    "Quaver is not running, and D-Bus could not start it: org.freedesktop.DBus.Error.ServiceUnknown; waiting for it"
                ))
        let line = try #require(Self.sent(actions).first)
        #expect(line.contains(#""canControl":false"#) && line.contains(#""metadata":{}"#), "\(line)")
        let answer = try #require(
            Self.sent(bridge.handle(Self.request(4, "Plugin.Stream.Player.Control", #"{"command":"play"}"#))).first)
        #expect(answer.contains(#""id":4"#) && answer.contains(#""code":-32603"#))
        #expect(
            answer.contains(#""data":"Quaver is not running: org.freedesktop.DBus.Error.ServiceUnknown""#), "\(answer)")
        #expect(bridge.handle(.appeared) == [.log("Quaver is on the bus"), .readPlayer])
    }

    @Test func getPropertiesIsAnsweredWithTheSameId() throws {
        var bridge = Self.running()
        let answer = try #require(Self.sent(bridge.handle(Self.request(1, "Plugin.Stream.Player.GetProperties"))).first)
        #expect(answer.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":{"#), "\(answer)")
        #expect(answer.contains(#""metadata":{"#) && answer.contains(#""position":12.5"#))
    }

    @Test(arguments: [
        (#"{"command":"play"}"#, "Play", [Value]()), (#"{"command":"pause"}"#, "Pause", []),
        (#"{"command":"playPause"}"#, "PlayPause", []), (#"{"command":"stop"}"#, "Stop", []),
        (#"{"command":"next"}"#, "Next", []), (#"{"command":"previous"}"#, "Previous", []),
        (#"{"command":"seek","params":{"offset":-5.5}}"#, "Seek", [.int64(-5_500_000)]),
        (
            #"{"command":"setPosition","params":{"position":17.827}}"#, "SetPosition",
            [.objectPath(ObjectPath("/org/mpris/MediaPlayer2/TrackList/7")!), .int64(17_827_000)]
        ),
    ])
    func controlsBecomeMPRISCalls(_ params: String, _ member: String, _ arguments: [Value]) {
        var bridge = Self.running()
        #expect(
            bridge.handle(Self.request(9, "Plugin.Stream.Player.Control", params)) == [
                .call(member: member, arguments: arguments, id: .int(9))
            ])
    }

    @Test(arguments: [
        (#"{"volume":55}"#, "Volume", Value.double(0.55)), (#"{"rate":1.5}"#, "Rate", .double(1.5)),
        (#"{"shuffle":true}"#, "Shuffle", .boolean(true)), (#"{"loopStatus":"track"}"#, "LoopStatus", .string("Track")),
        (#"{"loopStatus":"playlist"}"#, "LoopStatus", .string("Playlist")),
    ])
    func propertiesBecomeMPRISSets(_ params: String, _ property: String, _ value: Value) {
        var bridge = Self.running()
        #expect(
            bridge.handle(Self.request(3, "Plugin.Stream.Player.SetProperty", params)) == [
                .set(property: property, value: value, id: .int(3))
            ])
    }

    @Test(arguments: [
        ("Plugin.Stream.Player.SetProperty", #"{"volume":140}"#, -32602),
        ("Plugin.Stream.Player.SetProperty", #"{"mute":true}"#, -32602),
        ("Plugin.Stream.Player.SetProperty", #"{"loopStatus":"all"}"#, -32602),
        ("Plugin.Stream.Player.Control", #"{"command":"seek"}"#, -32602),
        ("Plugin.Stream.Player.Control", #"{"command":"eject"}"#, -32602),
        ("Plugin.Stream.Player.Frobnicate", nil, -32601),
    ])
    func wrongRequestsGetAnErrorWithData(_ method: String, _ params: String?, _ code: Int) throws {
        var bridge = Self.running()
        let answer = try #require(Self.sent(bridge.handle(Self.request(5, method, params))).first)
        #expect(answer.contains(#""id":5"#) && answer.contains(#""code":\#(code)"#), "\(answer)")
        #expect(answer.contains(#""data":""#), "snapserver 0.26 drops an error without a string data: \(answer)")
    }

    @Test func anAnsweredCommandIsSaidOkAndWhatItChangedIsSentAtOnce() {
        var bridge = Self.running()
        let ok = JSON.object(["jsonrpc": .string("2.0"), "id": .int(9), "result": .string("ok")])
        #expect(bridge.handle(.answered(id: .int(9), error: nil)) == [.send(ok), .readPlayer])
        let refused = Self.sent(bridge.handle(.answered(id: .int(10), error: "not now")))
        #expect(
            refused == [
                #"{"error":{"code":-32603,"data":"not now","message":"Quaver refused the command"},"id":10,"jsonrpc":"2.0"}"#
            ])
    }

    /// Changes that come while a read is under way are read once more after it, not once each.
    @Test func changesDuringAReadAreReadOnceMore() {
        var bridge = Self.running()
        #expect(bridge.handle(.changed) == [.readPlayer])
        #expect(bridge.handle(.changed).isEmpty)
        #expect(bridge.handle(.seeked).isEmpty)
        let actions = bridge.handle(.read(Self.player(title: "Track 2")))
        #expect(actions.first == .readPlayer, "read again for what changed meanwhile")
        #expect(Self.sent(actions).count == 1)
        #expect(bridge.handle(.read(Self.player(title: "Track 2"))).isEmpty, "nothing changed, no jump: nothing sent")
    }

    /// The position alone is sent when it jumps (a `Seeked`), not when time passed.
    @Test func thePositionAloneIsSentOnlyWhenItJumps() {
        var bridge = Self.running()
        _ = bridge.handle(.changed)
        #expect(bridge.handle(.read(Self.player(position: 20_000_000))).isEmpty)
        _ = bridge.handle(.seeked)
        let line = Self.sent(bridge.handle(.read(Self.player(position: 90_000_000)))).first ?? ""
        #expect(line.contains(#""position":90.0"#), "\(line)")
    }

    @Test func quaverLeavingShowsTheStreamStoppedAndUncontrollable() throws {
        var bridge = Self.running()
        let actions = bridge.handle(.vanished)
        let line = try #require(Self.sent(actions).first)
        #expect(line.contains(#""playbackStatus":"stopped""#) && line.contains(#""canControl":false"#))
        #expect(line.contains(#""metadata":{}"#), "snapserver 0.26 needs metadata in every set: \(line)")
        #expect(bridge.handle(.read(Self.player())).isEmpty, "a read answered after it left is dropped")
    }

    @Test func linesThatAreNotRequestsAreLoggedNotAnswered() {
        var bridge = Self.running()
        #expect(bridge.handle(.line("hello")) == [.log("not a JSON-RPC request, ignored: hello")])
        #expect(bridge.handle(.line(#"{"jsonrpc":"2.0","method":"Plugin.Stream.Player.Control"}"#)).isEmpty)
    }

    @Test func jsonIsWrittenAsSnapserverReadsIt() {
        #expect(JSON.double(1).text == "1.0", "a rate is a number with a fraction")
        #expect(JSON.int(55).text == "55")
        #expect(JSON.string("a\"b\\c\n\u{1}é").text == #""a\"b\\c\n\u0001é""#)
        #expect(
            JSON(parsing: #"{"a":[1,2.5,true,null,"x"]}"#)
                == .object(["a": .array([.int(1), .double(2.5), .bool(true), .null, .string("x")])]))
        #expect(JSON(parsing: "{") == nil)
    }
}
