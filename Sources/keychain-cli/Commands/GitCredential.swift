import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI {
    struct GitCredential: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-credential",
            abstract: "Be git's credential helper: get, store or erase a password (git-credential(1)).",
            discussion: """
                git runs it with the action and key=value lines (LF or CRLF) on standard input: \
                protocol, host, path, username, password, password_expiry_utc, \
                oauth_refresh_token (others, and unknown actions, are ignored). A field git leaves \
                out matches any value, as in git's own helpers. get prints the stored \
                credential, or nothing; of an expired password only the user name and refresh \
                token. erase with a password removes only credentials with that password. It \
                never asks anything: a locked keyring or a missing vault passphrase is one line \
                on stderr and a non-zero exit, within --timeout ($KEYCHAIN_TIMEOUT, since git \
                passes no options).

                Secret Service: network passwords as git-credential-libsecret keeps them \
                (attributes protocol, server, port, object, user), so each reads what the other \
                stored. Vault and OpenBao: items of the service "git" (or --service), keyed by \
                the location, https://USER@HOST[:PORT][/PATH], whose secret is the password.

                  git config --global credential.helper keychain-cli
                  (runs git-credential-keychain-cli: a link to keychain-cli, installed with it)
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "get, store or erase.")
        var action: String

        func run() throws {
            do {
                try perform()
            } catch {
                throw PassphraseInput.helperFailure(error)
            }
        }

        private func perform() throws {
            guard let input = try readAll(STDIN_FILENO, limit: smallInputLimit) else {
                throw CommandFailure.badData(
                    "the credential on standard input is larger than 1 MiB; git sends one credential's key=value lines")
            }
            guard ["get", "store", "erase"].contains(action), let request = GitCredentialMessage.parse(input) else {
                return
            }
            let store = try helperSettings.store()
            let credentials = store.networkCredentials(service: try settings.serviceName(helperDefault: "git"))
            switch action {
            case "get":
                guard var found = try credentials.credential(matching: request), found.password != nil else { return }
                if found.isExpired() {
                    // The refresh token is what the next helper (an OAuth one) needs now.
                    found.password = nil
                    found.passwordExpiry = nil
                    guard found.oauthRefreshToken != nil else { return }
                }
                try writeOutput(Array(GitCredentialMessage.format(found).utf8))
            case "store":
                guard request.password != nil, !request.isExpired() else { return }
                try credentials.store(request)
            default:
                try credentials.erase(matching: request)
            }
        }
    }
}
