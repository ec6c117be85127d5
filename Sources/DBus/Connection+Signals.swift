internal import CDBus
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Signals: subscriptions, their match rules, and the owners of well-known senders.
extension Connection {
    /// A registration of a signal handler; pass it to `removeSignalHandler` to stop.
    public final class SignalSubscription {
        let sender: String?
        let interface: String?
        let member: String?
        let path: String?
        let rule: String
        let handler: @MainActor (Message) -> Void
        /// For a well-known sender name: the match rule for its NameOwnerChanged signals.
        var ownerRule: String?
        /// For a well-known sender name: the unique name owning it (nil while nobody does).
        var senderOwner: String?

        init(
            sender: String?, interface: String?, member: String?, path: String?, rule: String,
            handler: @escaping @MainActor (Message) -> Void
        ) {
            self.sender = sender
            self.interface = interface
            self.member = member
            self.path = path
            self.rule = rule
            self.handler = handler
        }

        /// Whether the sender name needs tracking: the bus stamps every message with the
        /// unique name of its sender, never a well-known name (except its own).
        static func tracksOwner(of sender: String) -> Bool {
            !sender.hasPrefix(":") && sender != Connection.busName
        }

        /// Whether `message` is one this subscription asked for. Every field is checked here
        /// as well as by the bus, because the bus delivers a signal that matches any of this
        /// connection's rules (and a peer may send a signal straight to us).
        func matches(_ message: Message) -> Bool {
            (interface == nil || interface == message.interface)
                && (member == nil || member == message.member)
                && (path == nil || path == message.path)
                && accepts(sender: message.sender)
        }

        /// Whether a message from `messageSender` (always a unique name, or the bus's own
        /// name) comes from this subscription's sender or the current owner of that name.
        private func accepts(sender messageSender: String?) -> Bool {
            guard let sender else { return true }
            guard let messageSender else { return false }
            return messageSender == sender || messageSender == senderOwner
        }
    }

    /// The bus daemon's own name and object path.
    nonisolated static let busName = "org.freedesktop.DBus"
    nonisolated static let busPath = ObjectPath("/org/freedesktop/DBus")!

    /// Subscribes to signals matching the given fields (nil matches anything), adding a
    /// match rule on the bus. The corresponding libdbus function is `dbus_bus_add_match`.
    ///
    /// `sender` may be a unique name or a well-known name. For a well-known name the
    /// subscription follows its owner (`GetNameOwner`, then `NameOwnerChanged`), and takes
    /// signals only from whichever connection owns the name at the time; none while nobody does.
    /// Throws InvalidArgs for a name that is not valid.
    @discardableResult
    public func onSignal(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: ObjectPath? = nil,
        _ handler: @escaping @MainActor (Message) -> Void
    ) throws(BusError) -> SignalSubscription {
        // Valid names also cannot break out of the quotes of the match rule.
        if let sender, !NameValidation.isValidBusName(sender) {
            throw BusError(.invalidArgs, "invalid bus name '\(sender)'")
        }
        if let interface, !NameValidation.isValidInterfaceName(interface) {
            throw BusError(.invalidArgs, "invalid interface name '\(interface)'")
        }
        if let member, !NameValidation.isValidMemberName(member) {
            throw BusError(.invalidArgs, "invalid member name '\(member)'")
        }
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let path { parts.append("path='\(path.rawValue)'") }
        let subscription = SignalSubscription(
            sender: sender, interface: interface, member: member, path: path?.rawValue,
            rule: parts.joined(separator: ","), handler: handler)
        try addMatch(subscription.rule)
        if let sender, SignalSubscription.tracksOwner(of: sender) {
            do throws(BusError) {
                // The rule first, so that no change of owner after GetNameOwner is missed.
                let ownerRule =
                    "type='signal',sender='\(Connection.busName)',path='\(Connection.busPath)',"
                    + "interface='\(Connection.busName)',member='NameOwnerChanged',arg0='\(sender)'"
                try addMatch(ownerRule)
                subscription.ownerRule = ownerRule
                subscription.senderOwner = try currentOwner(of: sender)
            } catch {
                removeMatches(of: subscription)
                throw error
            }
        }
        signalHandlers.append(subscription)
        return subscription
    }

    /// Stops delivering signals to `subscription`'s handler and removes its match rules from the bus.
    public func removeSignalHandler(_ subscription: SignalSubscription) {
        signalHandlers.removeAll { $0 === subscription }
        removeMatches(of: subscription)
    }

    /// Adds a match rule, waiting for the bus to confirm it.
    func addMatch(_ rule: String) throws(BusError) {
        guard isConnected else { throw BusError(.disconnected, "connection closed") }
        let error = ErrorBox()
        dbus_bus_add_match(raw, rule, &error.raw)
        if let failure = error.take() { throw failure }
    }

    func removeMatches(of subscription: SignalSubscription) {
        guard isConnected else { return }
        dbus_bus_remove_match(raw, subscription.rule, nil)
        if let ownerRule = subscription.ownerRule { dbus_bus_remove_match(raw, ownerRule, nil) }
    }

    /// The unique name that owns `name` now, or nil when nobody does. Blocks for the reply,
    /// as `dbus_bus_add_match` does.
    func currentOwner(of name: String) throws(BusError) -> String? {
        let message = try Message.methodCall(
            destination: Connection.busName, path: Connection.busPath, interface: Connection.busName,
            member: "GetNameOwner", arguments: [.string(name)])
        let error = ErrorBox()
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message.raw, -1, &error.raw) else {
            let failure = error.take() ?? BusError(.failed, "GetNameOwner gave no reply")
            if failure.name == .nameHasNoOwner { return nil }
            throw failure
        }
        return try Message(owning: reply).readArguments().first?.string
    }

    /// Follows the owners of the well-known names that subscriptions name as sender.
    func noteOwnerChange(_ message: Message) {
        guard message.sender == Connection.busName, message.path == Connection.busPath.rawValue,
            message.interface == Connection.busName, message.member == "NameOwnerChanged",
            signalHandlers.contains(where: { $0.ownerRule != nil })
        else { return }
        // Arguments: the name, its old owner, its new owner ("" for none).
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, let newOwner = arguments[2].string else { return }
        for subscription in signalHandlers where subscription.ownerRule != nil && subscription.sender == name {
            subscription.senderOwner = newOwner.isEmpty ? nil : newOwner
        }
    }
}
