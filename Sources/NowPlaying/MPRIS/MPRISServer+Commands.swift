import DBus

/// Running commands for clients' calls, and turning their statuses into replies.
extension MPRISServer {
    /// Runs a command for a method call and answers `reply` with its status, once every
    /// target has reported: success or a no-op (the command is not active) is a normal
    /// reply; a failure is an error under `configuration.errorNamespace`. `succeeded` runs
    /// when a handler ran and succeeded, before the reply is answered.
    func run<E>(
        _ command: RemoteCommand<E>, _ event: E, reply: MethodReply, succeeded: (@MainActor () -> Void)? = nil
    ) {
        let name = command.name
        let namespace = configuration.errorNamespace
        let active = command.perform(event) { status in
            guard let error = Self.error(for: status, of: name, namespace: namespace) else {
                succeeded?()
                return reply.succeed()
            }
            reply.fail(error)
        }
        guard active else {
            logger.debug("\(name) ignored: the command is disabled or has no handler")
            return reply.succeed()
        }
    }

    /// Runs a command where the answer cannot wait (a property being set), and throws its
    /// failure as `run(_:_:reply:succeeded:)` answers it. A status reported after this
    /// returns is logged, as the change was accepted by then. Returns whether a handler ran
    /// and succeeded (or has yet to report).
    @discardableResult
    func run<E>(_ command: RemoteCommand<E>, _ event: E) throws(BusError) -> Bool {
        let name = command.name
        let namespace = configuration.errorNamespace
        let logger = self.logger
        let early = EarlyAnswer<RemoteCommandHandlerStatus>()
        let active = command.perform(event) { status in
            guard !early.take(status), let error = Self.error(for: status, of: name, namespace: namespace) else {
                return
            }
            logger.warning("\(name) failed after its call was answered: \(error.message)")
        }
        guard active else {
            logger.debug("\(name) ignored: the command is disabled or has no handler")
            return false
        }
        guard let status = early.stopWaiting() else { return true }
        if let error = Self.error(for: status, of: name, namespace: namespace) { throw error }
        return true
    }

    /// The error reply a status makes, nil for `.success`.
    nonisolated static func error(
        for status: RemoteCommandHandlerStatus, of name: String, namespace: String
    ) -> BusError? {
        switch status {
        case .success:
            nil
        case .noSuchContent:
            BusError(BusError.Name(namespace + ".NoSuchContent"), "\(name): no such content")
        case .noActionableNowPlayingItem:
            BusError(BusError.Name(namespace + ".NoActionableNowPlayingItem"), "\(name): nothing is loaded")
        case .commandFailed(let reason):
            BusError(BusError.Name(namespace + ".CommandFailed"), "\(name) failed: \(reason)")
        }
    }
}
