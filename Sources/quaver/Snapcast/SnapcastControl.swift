import ArgumentParser
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import NowPlaying

/// `quaver snapcast-control`: snapserver's control script for a stream Quaver plays into, so
/// that Snapweb, Snapdroid, Home Assistant and every other Snapcast client show what plays
/// and drive it. snapserver starts it with `--stream=ID` (and `--snapcast-port=N`), speaks
/// JSON-RPC on its standard input and output, and reads its standard error into its log.
struct SnapcastControl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapcast-control",
        abstract: "Show and drive Quaver from Snapcast clients: snapserver's control script for Quaver's stream.",
        discussion: """
            snapserver runs it (controlscript= in its source line, as /usr/lib/quaver/snapcast-control); \
            it is not for a terminal. It reaches Quaver on the session bus, so snapserver must run as \
            the user who runs Quaver (see docs/snapcast.md). It runs until snapserver closes its input.
            """
    )

    @Option(help: ArgumentHelp("The stream's id in snapserver (given by snapserver).", valueName: "id"))
    var stream: String?

    @Option(help: ArgumentHelp("snapserver's HTTP port (given by snapserver; unused).", valueName: "port"))
    var snapcastPort: Int?

    @Option(
        help: ArgumentHelp("snapserver's HTTP host (given by snapserver 0.27 and later; unused).", valueName: "host"))
    var snapcastHost: String?

    @Option(
        help: ArgumentHelp("Bus name suffix of the Quaver to drive: org.mpris.MediaPlayer2.<name>.", valueName: "name"))
    var name = "quaver"

    /// What a later snapserver passes that this one does not know: ignored, never an exit,
    /// since snapserver does not start a control script again.
    @ArgumentParser.Argument(parsing: .allUnrecognized, help: .hidden)
    var others: [String] = []

    func run() throws {
        let name = name
        MainActor.assumeIsolated {
            let controller = SnapcastController(busName: "org.mpris.MediaPlayer2." + name)
            controller.start()
            withExtendedLifetime(controller) { dispatchMain() }
        }
    }
}

/// Carries out what the bridge (``SnapcastBridge``) decides: lines to snapserver, calls to
/// Quaver, and what each brings back, as the bridge's next input.
@MainActor
final class SnapcastController {
    let busName: String
    private var bridge = SnapcastBridge()
    private var connection: Connection?
    /// The largest cover handed to snapserver, which keeps it in memory and serves it.
    nonisolated static let largestCover = 4 << 20

    init(busName: String) {
        self.busName = busName
    }

    func start() {
        // snapserver gone: a write to it fails, and the end of its input ends the script.
        signal(SIGPIPE, SIG_IGN)
        readInput()
        do {
            let connection = try Connection(bus: .session)
            self.connection = connection
            connection.onDisconnect = { [weak self] in self?.step(.noBus(reason: "the session bus went away")) }
            try follow(on: connection)
            Task {
                let owned =
                    (try? await connection.call(
                        destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                        interface: "org.freedesktop.DBus", member: "NameHasOwner", arguments: [.string(busName)]))?
                    .first?.boolean ?? false
                step(.started(owned: owned))
            }
        } catch {
            step(.started(owned: false))
            step(
                .noBus(
                    reason:
                        "no session bus (\(error)); snapserver must run as the user who runs Quaver, in their session"
                ))
        }
    }

    /// Lines from snapserver, read on a thread of their own; the end of them ends the script.
    private func readInput() {
        DispatchQueue.global().async {
            while let line = readLine(strippingNewline: true) {
                DispatchQueue.main.async { MainActor.assumeIsolated { self.step(.line(line)) } }
            }
            DispatchQueue.main.async { exit(0) }
        }
    }

    /// Quaver's signals, and its bus name changing hands.
    private func follow(on connection: Connection) throws(BusError) {
        try connection.onSignal(
            sender: busName, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            path: MPRISServer.objectPath
        ) { [weak self] _ in self?.step(.changed) }
        try connection.onSignal(
            sender: busName, interface: MPRISServer.playerInterface, member: "Seeked", path: MPRISServer.objectPath
        ) { [weak self] _ in self?.step(.seeked) }
        try connection.onSignal(
            sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"
        ) { [weak self] message in
            guard let self else { return }
            let arguments = message.arguments.compactMap(\.string)
            guard arguments.count == 3, arguments[0] == busName else { return }
            step(arguments[2].isEmpty ? .vanished : .appeared)
        }
    }

    private func step(_ input: SnapcastBridge.Input) {
        for action in bridge.handle(input) { perform(action) }
    }

    private func perform(_ action: SnapcastBridge.Action) {
        switch action {
        case .send(let message):
            // Unbuffered, one whole line: snapserver reads a line at a time.
            Self.write(message.text + "\n", to: STDOUT_FILENO)
        case .log(let text):
            Self.write("quaver snapcast-control: \(text)\n", to: STDERR_FILENO)
        case .call(let member, let arguments, let id):
            callPlayer(MPRISServer.playerInterface, member, arguments, id: id)
        case .set(let property, let value, let id):
            callPlayer(
                "org.freedesktop.DBus.Properties", "Set",
                [.string(MPRISServer.playerInterface), .string(property), .variant(value)], id: id)
        case .readPlayer:
            guard let connection else { return step(.readFailed("no session bus")) }
            Task {
                do {
                    let reply = try await connection.call(
                        destination: busName, path: MPRISServer.objectPath,
                        interface: "org.freedesktop.DBus.Properties",
                        member: "GetAll", arguments: [.string(MPRISServer.playerInterface)], timeout: .seconds(10))
                    step(.read(reply.first?.stringVariantDictionary ?? [:]))
                } catch {
                    step(.readFailed(Self.reason(error)))
                }
            }
        case .activate:
            guard let connection else { return }
            Task {
                do {
                    _ = try await connection.call(
                        destination: "org.freedesktop.DBus", path: ObjectPath("/org/freedesktop/DBus")!,
                        interface: "org.freedesktop.DBus", member: "StartServiceByName",
                        arguments: [.string(busName), .uint32(0)], timeout: .seconds(30))
                } catch {
                    step(.activationFailed(Self.reason(error)))
                }
            }
        case .readArt(let url):
            DispatchQueue.global().async {
                let data = Self.artData(url)
                DispatchQueue.main.async { MainActor.assumeIsolated { self.step(.artRead(url: url, data: data)) } }
            }
        }
    }

    private func callPlayer(_ interface: String, _ member: String, _ arguments: [Value], id: JSON) {
        guard let connection else { return step(.answered(id: id, error: "no session bus")) }
        Task {
            do {
                _ = try await connection.call(
                    destination: busName, path: MPRISServer.objectPath, interface: interface, member: member,
                    arguments: arguments, timeout: .seconds(10))
                step(.answered(id: id, error: nil))
            } catch {
                step(.answered(id: id, error: Self.reason(error)))
            }
        }
    }

    /// What a failed call says: the bus's message.
    nonisolated static func reason(_ error: any Error) -> String {
        (error as? BusError)?.message ?? "\(error)"
    }

    /// Writes all of `text` to `descriptor` (a write to a pipe may take part of it).
    nonisolated static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }  // snapserver is gone: the end of its input ends the script
            bytes = bytes.dropFirst(written)
        }
    }

    /// A local cover as Snapcast's `artData`: its bytes in base64 and its kind. Nil when it
    /// cannot be read, is too large, or is no image snapserver names.
    nonisolated static func artData(_ url: String) -> JSON? {
        guard let file = URL(string: url), file.isFileURL,
            let bytes = try? Data(contentsOf: file), !bytes.isEmpty, bytes.count <= largestCover
        else { return nil }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47]
        let kind: String? =
            bytes.prefix(4).elementsEqual(png) ? "png" : bytes.prefix(2).elementsEqual([0xFF, 0xD8]) ? "jpg" : nil
        guard let kind else { return nil }
        return .object(["data": .string(bytes.base64EncodedString()), "extension": .string(kind)])
    }
}
