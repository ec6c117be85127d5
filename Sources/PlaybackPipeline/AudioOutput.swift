/// Where the audio goes.
package enum AudioOutput: Sendable {
    /// The system's sound server (PipeWire or PulseAudio), through `autoaudiosink`, which
    /// falls back to a silent real-time sink when none answers.
    case system
    /// A GStreamer sink description the user gave (`--audio-sink`).
    case sink(String)
    /// A Snapcast server's pipe source, which snapserver reads in real time and plays in every
    /// room.
    case snapcast(SnapcastPipe)
    /// A Snapcast server's TCP source, which Quaver connects to.
    case snapcastTCP(SnapcastConnection)

    /// The output for `--audio-sink`'s value: nil is the system's.
    package init(audioSink: String?) {
        self = audioSink.map { .sink($0) } ?? .system
    }

    /// The sink's bin description (nil: the system's output).
    package var sinkDescription: String? {
        switch self {
        case .system: nil
        case .sink(let description): description
        case .snapcast(let pipe): pipe.sinkDescription
        case .snapcastTCP(let connection): connection.sinkDescription
        }
    }

    /// Whether audio the output does not take is waited for without end. A Snapcast pipe that
    /// nobody reads means snapserver is not running or restarts, and comes back by itself;
    /// any other output that takes no audio for long has failed.
    package var waitsForReader: Bool {
        switch self {
        case .snapcast, .snapcastTCP: true
        case .system, .sink: false
        }
    }

    /// Why the output takes no audio, for the log.
    package var stallReason: String {
        switch self {
        case .snapcast(let pipe):
            "snapserver reads nothing from its pipe \(pipe.path) (it is not running, or reads another pipe)"
        case .snapcastTCP(let connection):
            "snapserver takes nothing at tcp://\(connection.host):\(connection.port) (it is not running, or its TCP source listens elsewhere)"
        case .system, .sink:
            "the output takes no audio (the sound server has no device for the stream, or corked it)"
        }
    }
}
