import ArgumentParser

/// The options of the storm benchmark (`quaver-bench --storm`).
struct StormOptions: ParsableArguments {
    /// Runs the storm instead of the comparison with mpv.
    @Flag(
        help: """
            Instead of the comparison with mpv: measure how quickly Quaver answers D-Bus while a driver client sends \
            Next, Previous and OpenUri many times a second and --storm-readers clients read Player properties back to \
            back, once with silent real-time output and once with a slow output (--storm-sink). --quaver, --work-dir \
            and --output apply; the comparison's other options do not.
            """)
    var storm = false

    /// Length of each storm.
    @Option(help: "Length of each storm, in seconds.")
    var stormSeconds = 20.0

    /// Reader clients in each storm.
    @Option(help: "Reader clients, each on its own bus connection with one call in flight.")
    var stormReaders = 32

    /// Mean rate of the driver's commands.
    @Option(
        help: "Commands per second from the driver, on average (random gaps; Next, Previous and OpenUri at random).")
    var stormRate = 20.0

    /// How long a call may wait for its reply.
    @Option(help: "Seconds a call may wait for its reply before it counts as unanswered.")
    var stormTimeout = 5.0

    /// Seed of the driver's choices.
    @Option(help: "Seed of the driver's random commands, gaps and OpenUri targets (the same seed, the same storm).")
    var stormSeed = 1

    /// Tracks in the queue Quaver starts with.
    @Option(help: "Tracks in the queue (generated FLAC, 0.5 s each).")
    var stormTracks = 20

    /// The output of the slow variant.
    @Option(help: "Output of the slow variant: a GStreamer sink description that takes its time over every buffer.")
    var stormSink = "identity sleep-time=2000000 ! fakesink sync=false"

    /// Variants to run; empty means all.
    @Option(
        help: ArgumentHelp(
            "Run only this variant (repeatable): normal (fakesink sync=true), slow (--storm-sink) or stuck (a sink that never takes a buffer). Default: all three.",
            valueName: "variant"))
    var stormVariant: [StormVariant] = []

    /// Rejects settings that cannot make a storm.
    func check() throws {
        guard stormSeconds >= 1, stormTimeout > 0, stormRate > 0 else {
            throw ValidationError("--storm-seconds must be at least 1, --storm-timeout and --storm-rate positive")
        }
        guard stormReaders >= 0, stormTracks >= 2 else {
            throw ValidationError("--storm-readers must not be negative, --storm-tracks at least 2")
        }
    }

    /// The settings as the main actor takes them.
    func settings(quaver: String?, workDir: String?) -> StormSettings {
        StormSettings(
            quaver: quaver, workDir: workDir, duration: .milliseconds(Int(stormSeconds * 1000)), readers: stormReaders,
            rate: stormRate, timeout: .milliseconds(Int(stormTimeout * 1000)),
            seed: UInt64(truncatingIfNeeded: stormSeed),
            tracks: stormTracks, slowSink: stormSink,
            variants: stormVariant.isEmpty ? StormVariant.allCases : StormVariant.allCases.filter(stormVariant.contains)
        )
    }
}

/// The storm's options, checked.
struct StormSettings: Sendable {
    /// The quaver binary; nil: the one beside quaver-bench.
    var quaver: String?
    /// The scratch folder; nil: quaver-bench-storm in the temporary folder.
    var workDir: String?
    /// Length of each storm.
    var duration: Duration
    /// Reader clients.
    var readers: Int
    /// Driver commands per second, on average.
    var rate: Double
    /// How long a call may wait for its reply.
    var timeout: Duration
    /// Seed of the driver's choices.
    var seed: UInt64
    /// Tracks in the queue.
    var tracks: Int
    /// The slow variant's sink.
    var slowSink: String
    /// The variants to run, in order.
    var variants: [StormVariant]
}

/// The output Quaver plays into during a storm.
enum StormVariant: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Silent output that keeps real time, as in the other benchmarks.
    case normal
    /// An output that blocks on every buffer, so that the pipeline's state changes wait on it.
    case slow
    /// An output that never takes its first buffer (a sound server that stopped taking
    /// audio): no track ever starts, and every pipeline sticks.
    case stuck

    /// The `--audio-sink` value.
    func sink(_ settings: StormSettings) -> String {
        switch self {
        case .normal: "fakesink sync=true"
        case .slow: settings.slowSink
        case .stuck: "identity sleep-time=3600000000 ! fakesink sync=false"
        }
    }
}
