import ArgumentParser
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// Options every command takes, before or after its name (`-s ci list` and `list -s ci`).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: [.customShort("s"), .long],
        help: ArgumentHelp(
            "The service (namespace) of the keys. Default: $KEYCHAIN_SERVICE, else \"keychain-cli\".",
            valueName: "name"))
    var service: String?

    @Option(
        help: ArgumentHelp(
            "Give up when the keyring (or an unlock prompt) has not answered for this many seconds. Default: 5.",
            valueName: "seconds"))
    var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most 86400")
        }
    }
}

/// What a subcommand needs from the global options, whether given to it or to the root command.
protocol KeychainCommand: ParsableCommand {
    var globals: GlobalOptions { get }
    var root: KeychainCLI { get }
}

extension KeychainCommand {
    /// The keychain of the chosen service on the chosen backend. Options given after the command
    /// name win over those given before it.
    func keychain(listing: SecretServiceStore.Listing = .full) throws -> Keychain {
        try makeKeychain(
            service: globals.service ?? root.globals.service, timeout: globals.timeout ?? root.globals.timeout,
            listing: listing)
    }
}

/// The keychain for a service and timeout from the command line (nil when not given): the
/// service falls back to $KEYCHAIN_SERVICE, then to the default.
func makeKeychain(service: String?, timeout: Double?, listing: SecretServiceStore.Listing = .full) throws -> Keychain {
    let environment = getenv("KEYCHAIN_SERVICE").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
    let name = try ServiceName(service ?? environment ?? ServiceName.defaultName)
    let store = SecretServiceStore(timeout: timeout ?? SecretServiceStore.defaultTimeout, listing: listing)
    return Keychain(service: name, store: store)
}
