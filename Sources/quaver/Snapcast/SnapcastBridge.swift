import DBus

/// snapserver's stream plugin protocol on one side and Quaver's MPRIS on the other, as one
/// value: what `quaver snapcast-control` knows, and what it does with each thing that happens.
///
/// snapserver 0.26 starts the control script once and never again, so the script must never
/// end while snapserver runs: a Quaver that is not running, restarts, or cannot be reached is
/// a state of the bridge (its stream shows `canControl: false`), never an exit. Every request
/// gets an answer (snapserver waits for one without end), and every set of properties carries
/// `metadata` (snapserver 0.26 reads it unconditionally). The properties are sent when
/// something changes, with the position only when it jumps, as MPRIS does: snapserver's clients
/// extrapolate it while playing.
struct SnapcastBridge: Sendable {
    /// What MPRIS says of the player.
    enum Player: Sendable, Equatable {
        /// No Quaver owns the bus name (`reason`: why none could be started).
        case absent(reason: String?)
        /// Quaver runs; its Player properties are being read.
        case appearing
        /// Quaver runs, with these Player properties (from `GetAll`).
        case present([String: Value])
    }

    /// Whether the player's properties are being read.
    enum Reading: Sendable, Equatable {
        case idle
        /// A read is under way; `again`: something changed after it was asked for, so another
        /// follows; `jumped`: the position jumped meanwhile, so it is sent even alone.
        case underWay(again: Bool, jumped: Bool)
    }

    /// Something that happened.
    enum Input: Sendable {
        /// The script started; `owned`: Quaver owns its bus name.
        case started(owned: Bool)
        /// There is no session bus to reach Quaver on, for `reason`.
        case noBus(reason: String)
        /// A line snapserver wrote.
        case line(String)
        /// A Quaver took the bus name.
        case appeared
        /// No one owns the bus name any more.
        case vanished
        /// Quaver could not be started by D-Bus activation, for `reason`.
        case activationFailed(String)
        /// Quaver said that properties changed (`PropertiesChanged`).
        case changed
        /// Quaver's position jumped (`Seeked`).
        case seeked
        /// The Player properties read.
        case read([String: Value])
        /// The read failed, for `reason` (Quaver left meanwhile, most likely).
        case readFailed(String)
        /// The call made for snapserver's request `id` ended: with `error`, or well.
        case answered(id: JSON, error: String?)
        /// The cover at `url` was read, as Snapcast's `artData` (nil: it could not be).
        case artRead(url: String, data: JSON?)
    }

    /// What the script does, in order.
    enum Action: Sendable, Equatable {
        /// Writes a line to snapserver.
        case send(JSON)
        /// Calls a method of Quaver's Player interface, for snapserver's request `id`.
        case call(member: String, arguments: [Value], id: JSON)
        /// Sets a property of Quaver's Player interface, for snapserver's request `id`.
        case set(property: String, value: Value, id: JSON)
        /// Reads Quaver's Player properties (`GetAll`).
        case readPlayer
        /// Asks the bus to start Quaver (D-Bus activation).
        case activate
        /// Reads a local cover, to hand to snapserver, which serves it to its clients.
        case readArt(url: String)
        /// One line in snapserver's log.
        case log(String)
    }

    private(set) var player = Player.absent(reason: nil)
    private(set) var reading = Reading.idle
    /// The properties last sent, without the position, and the position.
    private var sent: (properties: [String: JSON], position: JSON?)?
    /// The local cover last asked for, and once read, as `artData`.
    private var art: (url: String, data: JSON?)?

    // MARK: - Inputs

    mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .started(let owned):
            let ready = Self.message(["method": .string("Plugin.Stream.Ready")])
            guard owned else { return [.send(ready), .activate] }
            player = .appearing
            return [.send(ready)] + refresh(jumped: true)
        case .noBus(let reason):
            player = .absent(reason: reason)
            return [.log("cannot reach Quaver: \(reason)")] + push(jumped: true)
        case .line(let line):
            return request(line)
        case .appeared:
            player = .appearing
            return [.log("Quaver is on the bus")] + refresh(jumped: true)
        case .vanished:
            player = .absent(reason: nil)
            reading = .idle
            return [.log("Quaver left the bus; its stream shows it stopped until it is back")] + push(jumped: true)
        case .activationFailed(let reason):
            guard case .absent = player else { return [] }
            player = .absent(reason: reason)
            return [.log("Quaver is not running, and D-Bus could not start it: \(reason); waiting for it")]
                + push(jumped: true)
        case .changed, .seeked:
            if case .absent = player { return [] }
            return refresh(jumped: { if case .seeked = input { true } else { false } }())
        case .read(let properties):
            guard case .underWay(let again, let jumped) = reading else { return [] }
            if case .absent = player { return [] }
            player = .present(properties)
            reading = again ? .underWay(again: false, jumped: false) : .idle
            return (again ? [.readPlayer] : []) + artwork() + push(jumped: jumped || sent == nil)
        case .readFailed(let reason):
            reading = .idle
            return [.log("could not read Quaver's state: \(reason)")]
        case .answered(let id, let error):
            guard let error else {
                let ok = Self.message(["id": id, "result": .string("ok")])
                // snapserver keeps its copy of the properties until told: what the command
                // changed is read and sent now, not only once Quaver signals it.
                if case .absent = player { return [.send(ok)] }
                return [.send(ok)] + refresh(jumped: true)
            }
            return [.send(Self.error(id, code: -32603, "Quaver refused the command", data: error))]
        case .artRead(let url, let data):
            guard art?.url == url else { return [] }  // another track's cover is asked for now
            art = (url, data)
            return push(jumped: false)
        }
    }

    // MARK: - Requests

    /// What a line from snapserver asks for, answered.
    private func request(_ line: String) -> [Action] {
        guard let message = JSON(parsing: line), let method = message["method"]?.string else {
            return [.log("not a JSON-RPC request, ignored: \(line.prefix(200))")]
        }
        // A notification (no id) is not answered.
        guard let id = message["id"] else { return [] }
        let params = message["params"] ?? .object([:])
        switch method {
        case "Plugin.Stream.Player.GetProperties":
            let (properties, position) = self.properties()
            var result = properties
            if let position { result["position"] = position }
            return [.send(Self.message(["id": id, "result": .object(result)]))]
        case "Plugin.Stream.Player.Control":
            return control(params, id: id)
        case "Plugin.Stream.Player.SetProperty":
            return setProperty(params, id: id)
        default:
            return [
                .send(Self.error(id, code: -32601, "Method not found", data: "\(method) is not a method of Quaver's"))
            ]
        }
    }

    private func control(_ params: JSON, id: JSON) -> [Action] {
        guard case .present(let properties) = player else { return [notRunning(id)] }
        let command = params["command"]?.string ?? ""
        let arguments = params["params"] ?? .object([:])
        let simple = [
            "play": "Play", "pause": "Pause", "playPause": "PlayPause", "stop": "Stop", "next": "Next",
            "previous": "Previous",
        ]
        if let member = simple[command] {
            return [.call(member: member, arguments: [], id: id)]
        }
        switch command {
        case "seek":
            guard let offset = arguments["offset"]?.number, let micros = Self.microseconds(offset) else {
                return [invalid(id, "seek takes params.offset, in seconds")]
            }
            return [.call(member: "Seek", arguments: [.int64(micros)], id: id)]
        case "setPosition":
            guard let position = arguments["position"]?.number, let micros = Self.microseconds(position) else {
                return [invalid(id, "setPosition takes params.position, in seconds")]
            }
            let metadata = properties["Metadata"]?.stringVariantDictionary ?? [:]
            guard let track = metadata["mpris:trackid"]?.objectPath else {
                return [.send(Self.error(id, code: -32603, "Quaver refused the command", data: "no track is loaded"))]
            }
            return [.call(member: "SetPosition", arguments: [.objectPath(track), .int64(micros)], id: id)]
        default:
            return [invalid(id, "unknown command \"\(command)\"")]
        }
    }

    private func setProperty(_ params: JSON, id: JSON) -> [Action] {
        guard case .present = player else { return [notRunning(id)] }
        guard case .object(let members) = params, members.count == 1, let member = members.first else {
            return [invalid(id, "SetProperty takes one property")]
        }
        let (name, value) = (member.key, member.value)
        switch (name, value) {
        case ("loopStatus", .string(let status)):
            let mpris = ["none": "None", "track": "Track", "playlist": "Playlist"]
            guard let loop = mpris[status] else { return [invalid(id, "loopStatus is none, track or playlist")] }
            return [.set(property: "LoopStatus", value: .string(loop), id: id)]
        case ("shuffle", .bool(let shuffle)):
            return [.set(property: "Shuffle", value: .boolean(shuffle), id: id)]
        case ("volume", _):
            guard let volume = value.number, (0...100).contains(volume) else {
                return [invalid(id, "volume is a number from 0 to 100")]
            }
            return [.set(property: "Volume", value: .double(volume / 100), id: id)]
        case ("rate", _):
            guard let rate = value.number, rate.isFinite, rate > 0 else {
                return [invalid(id, "rate is a positive number")]
            }
            return [.set(property: "Rate", value: .double(rate), id: id)]
        default:
            return [invalid(id, "\(name) cannot be set, or not to \(value.text)")]
        }
    }

    private func notRunning(_ id: JSON) -> Action {
        let reason: String =
            if case .absent(let why?) = player { "Quaver is not running: \(why)" } else { "Quaver is not running" }
        return .send(Self.error(id, code: -32603, "Quaver is not running", data: reason))
    }

    private func invalid(_ id: JSON, _ why: String) -> Action {
        .send(Self.error(id, code: -32602, "Invalid params", data: why))
    }

    /// An error answer. snapserver 0.26 reads `data` as a string whenever an error comes, and
    /// drops an answer without one: it always has one.
    static func error(_ id: JSON, code: Int, _ message: String, data: String) -> JSON {
        Self.message([
            "id": id, "error": .object(["code": .int(code), "message": .string(message), "data": .string(data)]),
        ])
    }

    static func microseconds(_ seconds: Double) -> Int64? {
        guard seconds.isFinite, abs(seconds) < 1e9 else { return nil }
        return Int64((seconds * 1_000_000).rounded())
    }

    // MARK: - Properties

    /// A JSON-RPC 2.0 message of `fields`.
    static func message(_ fields: [String: JSON]) -> JSON {
        .object(fields.merging(["jsonrpc": .string("2.0")]) { $1 })
    }

    /// Reads the player's properties: at once, or once more after the read under way;
    /// `jumped`: the position jumped, so it is sent even alone.
    private mutating func refresh(jumped: Bool) -> [Action] {
        switch reading {
        case .underWay(_, let before):
            reading = .underWay(again: true, jumped: before || jumped)
            return []
        case .idle:
            reading = .underWay(again: false, jumped: jumped)
            return [.readPlayer]
        }
    }

    /// A local cover not read yet is read, once: snapserver takes it as `artData` and serves
    /// it to clients on other machines, which a `file://` URL would not reach.
    private mutating func artwork() -> [Action] {
        guard case .present(let properties) = player,
            let url = properties["Metadata"]?.stringVariantDictionary?["mpris:artUrl"]?.string,
            url.hasPrefix("file://"), art?.url != url
        else { return [] }
        art = (url, nil)
        return [.readArt(url: url)]
    }

    /// The properties sent when they changed, or when the position `jumped`.
    private mutating func push(jumped: Bool) -> [Action] {
        let (properties, position) = self.properties()
        if let sent, sent.properties == properties, !jumped { return [] }
        sent = (properties, position)
        var params = properties
        if let position { params["position"] = position }
        return [.send(Self.message(["method": .string("Plugin.Stream.Player.Properties"), "params": .object(params)]))]
    }

    /// Snapcast's properties of the stream from what MPRIS says, and the position apart.
    func properties() -> (properties: [String: JSON], position: JSON?) {
        guard case .present(let mpris) = player else {
            return (
                [
                    "playbackStatus": .string("stopped"), "canControl": .bool(false), "canPlay": .bool(false),
                    "canPause": .bool(false), "canSeek": .bool(false), "canGoNext": .bool(false),
                    "canGoPrevious": .bool(false), "metadata": .object([:]),
                ], nil
            )
        }
        var properties: [String: JSON] = [:]
        let status = ["Playing": "playing", "Paused": "paused", "Stopped": "stopped"]
        properties["playbackStatus"] = .string(mpris["PlaybackStatus"]?.string.flatMap { status[$0] } ?? "stopped")
        let loop = ["None": "none", "Track": "track", "Playlist": "playlist"]
        if let value = mpris["LoopStatus"]?.string.flatMap({ loop[$0] }) { properties["loopStatus"] = .string(value) }
        if let shuffle = mpris["Shuffle"]?.boolean { properties["shuffle"] = .bool(shuffle) }
        if let volume = mpris["Volume"]?.double, volume.isFinite {
            properties["volume"] = .int(Int((min(max(volume, 0), 1) * 100).rounded()))
        }
        for (mprisName, name) in [("Rate", "rate"), ("MinimumRate", "minimumRate"), ("MaximumRate", "maximumRate")] {
            if let rate = mpris[mprisName]?.double, rate.isFinite { properties[name] = .double(rate) }
        }
        for name in ["CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek", "CanControl"] {
            let key = name.prefix(1).lowercased() + name.dropFirst()
            properties[key] = .bool(mpris[name]?.boolean ?? false)
        }
        properties["metadata"] = .object(metadata(mpris["Metadata"]?.stringVariantDictionary ?? [:]))
        let position = mpris["Position"]?.int64.map { JSON.double(Double($0) / 1_000_000) }
        return (properties, position)
    }

    /// Snapcast's metadata of a track from its MPRIS metadata.
    private func metadata(_ mpris: [String: Value]) -> [String: JSON] {
        var metadata: [String: JSON] = [:]
        if let track = mpris["mpris:trackid"]?.objectPath { metadata["trackId"] = .string(track.rawValue) }
        for (key, name) in [
            ("xesam:title", "title"), ("xesam:album", "album"), ("xesam:url", "url"),
            ("xesam:contentCreated", "contentCreated"),
        ] {
            if let value = mpris[key]?.string { metadata[name] = .string(value) }
        }
        for (key, name) in [
            ("xesam:artist", "artist"), ("xesam:albumArtist", "albumArtist"), ("xesam:genre", "genre"),
            ("xesam:composer", "composer"),
        ] {
            if let values = mpris[key]?.stringArray { metadata[name] = .array(values.map(JSON.string)) }
        }
        if let length = mpris["mpris:length"]?.int64, length > 0 {
            metadata["duration"] = .double(Double(length) / 1_000_000)
        }
        for (key, name) in [("xesam:trackNumber", "trackNumber"), ("xesam:discNumber", "discNumber")] {
            if let number = mpris[key]?.int32, number > 0 { metadata[name] = .int(Int(number)) }
        }
        if let url = mpris["mpris:artUrl"]?.string {
            if url.hasPrefix("http://") || url.hasPrefix("https://") {
                metadata["artUrl"] = .string(url)
            } else if let art, art.url == url, let data = art.data {
                metadata["artData"] = data
            }
        }
        return metadata
    }
}
