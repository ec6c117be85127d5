import DBus
import TestKit

/// One kind of call a storm client sends.
struct StormCall: Sendable {
    /// The name in the tables.
    var name: String
    /// The D-Bus interface.
    var interface: String
    /// The method.
    var member: String
    /// The arguments.
    var arguments: [Value]
    /// A driver command (the rest are reads).
    var isCommand: Bool

    /// Reads a Player property.
    static func get(_ property: String) -> StormCall {
        StormCall(
            name: "Get(\(property))", interface: MPRISNames.properties, member: "Get",
            arguments: [.string(MPRISNames.player), .string(property)], isCommand: false)
    }

    /// What every reader cycles through.
    static let reads = [
        get("PlaybackStatus"), get("Position"), get("Metadata"),
        StormCall(
            name: "GetAll(Player)", interface: MPRISNames.properties, member: "GetAll",
            arguments: [.string(MPRISNames.player)],
            isCommand: false),
    ]
    /// Skips to the next track.
    static let next = StormCall(
        name: "Next", interface: MPRISNames.player, member: "Next", arguments: [], isCommand: true)
    /// Goes back a track.
    static let previous = StormCall(
        name: "Previous", interface: MPRISNames.player, member: "Previous", arguments: [], isCommand: true)

    /// Opens `uri` (Quaver queues it after the current track and plays it).
    static func openURI(_ uri: String) -> StormCall {
        StormCall(
            name: "OpenUri", interface: MPRISNames.player, member: "OpenUri", arguments: [.string(uri)], isCommand: true
        )
    }
}

/// The replies to one kind of call (or a group of kinds) in one storm.
@MainActor
final class StormTally {
    /// Calls sent.
    var sent = 0
    /// Milliseconds from sending to the reply, for each call answered without an error.
    var latencies: [Double] = []
    /// Calls that got no reply within the timeout (libdbus answers them itself with NoReply).
    var timedOut = 0
    /// Error replies, by error name.
    var errors: [String: Int] = [:]

    /// Error replies in all.
    var errorCount: Int { errors.values.reduce(0, +) }

    /// The sum of `tallies`.
    static func merged(_ tallies: [StormTally]) -> StormTally {
        let sum = StormTally()
        for tally in tallies {
            sum.sent += tally.sent
            sum.latencies += tally.latencies
            sum.timedOut += tally.timedOut
            sum.errors.merge(tally.errors, uniquingKeysWith: +)
        }
        return sum
    }
}

/// What one storm measured.
@MainActor
struct StormRun {
    /// Which output.
    var variant: StormVariant
    /// Its `--audio-sink` value.
    var sink: String
    /// By call name, in order of first use.
    var tallies: [(name: String, isCommand: Bool, tally: StormTally)] = []
    /// From the first call sent to the last reply (or timeout) received.
    var elapsed: Duration = .zero
    /// Seconds of CPU of Quaver, its dbus-daemon and the benchmark client over the storm.
    var cpu: [Double] = []
    /// The most driver commands waiting for their replies at one moment.
    var maxCommandsInFlight = 0
    /// The latest a command went out after its scheduled moment, in milliseconds.
    var maxDriverLateness = 0.0
    /// Sentences for the notes.
    var observations: [String] = []
    /// What went wrong outside the figures.
    var problems: [String] = []

    /// The tally of `call`, made on first use.
    mutating func tally(_ call: StormCall) -> StormTally {
        if let found = tallies.first(where: { $0.name == call.name }) { return found.tally }
        let tally = StormTally()
        tallies.append((call.name, call.isCommand, tally))
        return tally
    }

    /// The driver's calls together.
    var commands: StormTally { StormTally.merged(tallies.filter(\.isCommand).map(\.tally)) }
    /// The readers' calls together.
    var reads: StormTally { StormTally.merged(tallies.filter { !$0.isCommand }.map(\.tally)) }
    /// Every call.
    var all: StormTally { StormTally.merged(tallies.map(\.tally)) }
}

/// The storm's record, shared by the driver's and the readers' tasks (all on the main actor).
@MainActor
final class StormBox {
    /// What was measured so far.
    var run: StormRun
    /// Driver commands sent and not yet answered or timed out.
    var commandsInFlight = 0

    /// Starts from `run`.
    init(_ run: StormRun) { self.run = run }
}
