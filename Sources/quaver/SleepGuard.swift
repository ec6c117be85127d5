import DBus
import Dispatch
import Glibc
import Logging

/// Pauses playback before the system sleeps, as Apple's guides ask of an interruption that
/// nobody ends (no `shouldResume`): logind's `PrepareForSleep(true)` pauses Quaver while a delay inhibitor holds
/// the sleep back, and the inhibitor is released once the pause has settled (or after
/// `pauseAllowance`, whichever comes first). On wake (`PrepareForSleep(false)`) the
/// inhibitor is taken again and playback stays paused: the listener may be elsewhere by then.
///
/// Without a system bus or logind (a container, a session without systemd) there is nothing
/// to guard against: one debug line, and Quaver plays on as before.
@MainActor
final class SleepGuard {
    static let login1 = "org.freedesktop.login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let managerPath = ObjectPath("/org/freedesktop/login1")!
    /// The longest the inhibitor holds sleep back for a pause that has not settled.
    static let pauseAllowance: Duration = .seconds(2)

    private let connection: Connection
    private let logger: Logger
    /// Pauses playback; returns true when something was playing (and so a pause is under way).
    private let pause: @MainActor () -> Bool
    /// The delay inhibitor's descriptor: closing it lets the system sleep.
    private var inhibitor: Int32 = -1
    private var isTakingInhibitor = false
    /// Sleep is waiting for the pause to settle.
    private var pauseGeneration = 0
    private var awaitingPause = false

    /// Connects to the system bus and follows logind; nil when there is no system bus.
    init?(logger: Logger, pause: @escaping @MainActor () -> Bool) {
        self.logger = logger
        self.pause = pause
        do {
            connection = try Connection(bus: .system, logger: logger)
        } catch {
            logger.debug("no system bus (\(error.message)): Quaver will not pause before the system sleeps")
            return nil
        }
        connection.onDisconnect = { [weak self] in
            self?.logger.info("lost the connection to the system bus; no longer pausing before sleep")
        }
        do {
            try connection.onSignal(
                sender: Self.login1, interface: Self.managerInterface, member: "PrepareForSleep", path: Self.managerPath
            ) { [weak self] message in
                guard let sleeping = message.arguments.first?.boolean else { return }
                self?.prepareForSleep(sleeping)
            }
        } catch {
            logger.debug("cannot follow logind (\(error.message)): Quaver will not pause before the system sleeps")
            return nil
        }
        takeInhibitor()
    }

    isolated deinit {
        releaseInhibitor()
        connection.close()
    }

    /// Called whenever the player's state settles: sleep waits for the pause, not longer.
    func playerSettled(isPlaying: Bool) {
        guard awaitingPause, !isPlaying else { return }
        finishPause()
    }

    private func prepareForSleep(_ sleeping: Bool) {
        if sleeping {
            let pausing = pause()
            logger.info(pausing ? "the system is going to sleep; pausing" : "the system is going to sleep")
            guard pausing, inhibitor >= 0 else { return finishPause() }
            awaitingPause = true
            pauseGeneration += 1
            let generation = pauseGeneration
            let nanoseconds = Int(Self.pauseAllowance.components.seconds) * 1_000_000_000
            DispatchQueue.main.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
                MainActor.assumeIsolated {
                    guard let self, self.awaitingPause, self.pauseGeneration == generation else { return }
                    self.logger.warning(
                        "the pause before sleep did not settle within \(Self.pauseAllowance); letting the system sleep")
                    self.finishPause()
                }
            }
        } else {
            logger.info("the system woke up; staying paused")
            awaitingPause = false
            takeInhibitor()
        }
    }

    private func finishPause() {
        awaitingPause = false
        releaseInhibitor()
    }

    /// Asks logind for a delay inhibitor ("sleep", mode "delay"), unless one is held.
    private func takeInhibitor() {
        guard inhibitor < 0, !isTakingInhibitor else { return }
        isTakingInhibitor = true
        Task { [weak self, connection] in
            let reply: [Value]
            do {
                reply = try await connection.call(
                    destination: Self.login1, path: Self.managerPath, interface: Self.managerInterface,
                    member: "Inhibit",
                    arguments: [
                        .string("sleep"), .string("Quaver"), .string("Pausing playback before the system sleeps"),
                        .string("delay"),
                    ],
                    timeout: .seconds(5))
            } catch {
                self?.isTakingInhibitor = false
                self?.logger.debug("logind gave no sleep inhibitor (\(error)): sleep will not wait for the pause")
                return
            }
            guard let self, case .unixFD(let descriptor)? = reply.first, descriptor >= 0 else {
                if case .unixFD(let descriptor)? = reply.first, descriptor >= 0 { close(descriptor) }
                self?.isTakingInhibitor = false
                return
            }
            self.isTakingInhibitor = false
            if self.inhibitor >= 0 { close(self.inhibitor) }
            self.inhibitor = descriptor
            self.logger.debug("holding a sleep delay inhibitor")
        }
    }

    private func releaseInhibitor() {
        guard inhibitor >= 0 else { return }
        close(inhibitor)
        inhibitor = -1
        logger.debug("released the sleep delay inhibitor")
    }
}
