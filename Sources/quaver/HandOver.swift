import DBus
import FoundationEssentials
import Logging
import Media
import NowPlaying

/// `quaver PATH...` while Quaver already runs: the paths go to the running player over
/// MPRIS (`AddTrack` after its current track, the first made current) instead of starting
/// a second player.
@MainActor
enum HandOver {
    /// What to do after asking the bus.
    enum Outcome {
        /// Another process owns the bus name and this one is done (the paths were handed
        /// over, or there were none).
        case done
        /// The running Quaver refused every path: this one exits 1.
        case refused
        /// No Quaver runs: start one, on this connection (nil when the bus cannot be reached;
        /// starting reports why).
        case start(Connection?)
    }

    /// Hands the paths to a running Quaver if there is one.
    static func run(items: [String], name: String, policy: Config.InstancePolicy, play: Bool, logger: Logger) -> Outcome
    {
        let busName = "org.mpris.MediaPlayer2." + name
        guard let connection = try? Connection(bus: .session, logger: logger) else { return .start(nil) }
        let owned =
            (try? connection.callBlocking(
                destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                interface: "org.freedesktop.DBus", member: "NameHasOwner", arguments: [.string(busName)]))?.first?
            .boolean ?? false
        guard owned else { return .start(connection) }
        defer { connection.close() }
        guard policy == .handOver, !items.isEmpty else {
            logger.notice("Quaver is already running as \(busName); leaving it be")
            return .done
        }

        func call(_ interface: String, _ member: String, _ arguments: [Value] = []) throws(BusError) -> [Value] {
            try connection.callBlocking(
                destination: busName, path: MPRISServer.objectPath, interface: interface, member: member,
                arguments: arguments, timeout: .seconds(10))
        }
        // After the current track: its id, or NoTrack (the start) when nothing is loaded.
        var current = MPRISServer.noTrack
        if let reply = try? call(
            "org.freedesktop.DBus.Properties", "Get", [.string(MPRISServer.playerInterface), .string("Metadata")]),
            let id = reply.first?.unwrapped.stringVariantDictionary?["mpris:trackid"]?.objectPath
        {
            current = id
        }
        // Added in reverse after the same track, they end up in the order given.
        var accepted = 0
        for (index, item) in items.enumerated().reversed() {
            let uri = Self.uri(item)
            do {
                _ = try call(
                    MPRISServer.trackListInterface, "AddTrack",
                    [.string(uri), .objectPath(current), .boolean(index == 0)])
                accepted += 1
            } catch {
                logger.error("\(item): the running Quaver refused it: \(error.message)")
            }
        }
        guard accepted > 0 else { return .refused }
        if play { _ = try? call(MPRISServer.playerInterface, "Play") }
        logger.notice("handed \(accepted) of \(items.count) to the running Quaver (\(busName))")
        return .done
    }

    /// An absolute URI for a path or URI named on the command line.
    static func uri(_ item: String) -> String {
        item.contains("://") ? item : MediaSources.fileURI(MediaSources.localPath(item))
    }
}
