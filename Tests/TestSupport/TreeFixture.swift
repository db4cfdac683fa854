import Foundation

/// A team tree vault of the test's own: its directory, an identity that opens it, and that
/// identity's recipient; every `keychain-cli` the body starts uses it.
public struct TreeFixture: Sendable {
    public let scratch: ScratchDirectory
    public let vault: String
    public let identity: String
    public let recipient: String

    public func item(_ service: String, _ key: String) -> String { "\(vault)/\(service)/\(key).age" }

    /// Makes the vault (for `recipients`, ours first) and runs `body` with it.
    public static func run(extraRecipients: [String] = [], _ body: (TreeFixture) throws -> Void) throws {
        let scratch = try ScratchDirectory("tree")
        defer { scratch.remove() }
        let identity = scratch.path("identity.txt")
        let recipient = try cli(["vault", "keygen", "-o", identity], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        let vault = scratch.path("vault")
        let environment: [String: String?] = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault, "KEYCHAIN_IDENTITY": identity,
            "DBUS_SESSION_BUS_ADDRESS": nil, "KEYCHAIN_PASSPHRASE": nil,
        ]
        try CLIBackend.$overrides.withValue(environment) {
            let made = try cli(
                ["vault", "init"] + ([recipient] + extraRecipients).flatMap { ["--recipient", $0] }, session: nil)
            guard made.status == 0 else { throw FixtureFailed(detail: "tree vault: \(made.stderr)") }
            try body(TreeFixture(scratch: scratch, vault: vault, identity: identity, recipient: recipient))
        }
    }
}
