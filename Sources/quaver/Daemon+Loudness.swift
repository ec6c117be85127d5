import Dispatch
import FoundationEssentials
import Logging
import Media
import PlaybackEngine
import PlaybackPipeline
import PlaybackPlayer

/// The loudness options given on the command line: each one set wins over `quaver.conf`,
/// when Quaver starts and whenever the file is read again.
struct LoudnessOverrides: Equatable {
    var mode: LoudnessSettings.Mode?
    var preamp: Double?
    var clipping: LoudnessSettings.Clipping?
    var fallbackGain: Double?
    /// `--no-replaygain-analysis`.
    var noAnalysis = false

    /// `settings` with the options set here in place of theirs.
    func applied(to settings: LoudnessSettings) -> LoudnessSettings {
        var result = settings
        if let mode { result.mode = mode }
        if let preamp { result.preamp = preamp }
        if let clipping { result.clipping = clipping }
        if let fallbackGain { result.fallbackGain = fallbackGain }
        if noAnalysis { result.analysis = false }
        return result
    }
}

extension LoudnessSettings {
    /// The settings as a log line gives them.
    var summary: String {
        "replaygain \(mode.rawValue), preamp \(Loudness.describe(preamp)), clipping \(clipping.rawValue), "
            + "fallback \(Loudness.describe(fallbackGain)), analysis \(analysis ? "yes" : "no")"
    }
}

extension Daemon {
    /// The store of measured gains, in `$XDG_CACHE_HOME/quaver/`.
    static func makeGainCache(logger: Logger) -> GainCache {
        GainCache(folder: PrivateFolder(Paths.cache, ownedComponents: 1), logger: logger)
    }

    /// SIGHUP reads `quaver.conf` again: its loudness keys apply from the next track (the
    /// one playing, and one already handed over for a gapless switch, keep their gain). A
    /// file with an error changes nothing, and says why. The file is read on the loader
    /// queue (after a load under way), not on the main actor, which goes on answering.
    func reloadLoudness() {
        Self.loadQueue.async {
            let result = Result { try Config.load() }
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in self?.configReadAgain(result) }
            }
        }
    }

    private func configReadAgain(_ result: Result<Config, any Error>) {
        let config: Config
        do {
            config = try result.get()
        } catch {
            logger.warning("SIGHUP: quaver.conf not read again: \(error); the loudness settings stay as they were")
            return
        }
        let settings = options.loudness.applied(to: config.loudness)
        guard settings != player.loudness else {
            logger.info("SIGHUP: quaver.conf read again; the loudness settings are unchanged")
            return
        }
        player.loudness = settings
        logger.info("SIGHUP: quaver.conf read again; from the next track: \(settings.summary)")
    }
}
