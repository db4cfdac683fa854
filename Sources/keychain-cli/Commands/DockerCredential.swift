import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct DockerCredential: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "docker-credential",
            abstract: "Be docker's credential helper: store, get, erase, list or version.",
            discussion: """
                The docker-credential-helpers protocol: store reads {"ServerURL", "Username", \
                "Secret"} on standard input; get and erase read the bare server URL; get prints \
                {"ServerURL", "Username", "Secret"}; list prints {"URL": "username", …}. A \
                failure is its message on standard output and exit 1, as docker expects; a miss \
                is exactly "credentials not found in native keychain", an empty server URL "no \
                credentials server URL" and a store without a user name "no credentials \
                username", as in docker-credential-helpers. It never asks anything \
                (timeout: --timeout or $KEYCHAIN_TIMEOUT).

                Secret Service: docker-credential-secretservice's items (schema \
                io.docker.Credentials), so each reads what the other stored. Vault and OpenBao: \
                items of the service "docker" (or --service), keyed by the server URL, whose \
                secret is {"Username": …, "Secret": …}.

                  {"credsStore": "keychain-cli"}   in ~/.docker/config.json
                  (docker runs docker-credential-keychain-cli, a link to keychain-cli)
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "store, get, erase, list or version.")
        var action: String

        static let notFound = "credentials not found in native keychain"
        static let missingServerURL = "no credentials server URL"
        static let missingUsername = "no credentials username"

        func run() throws {
            do {
                try perform()
            } catch let failure as ExitCode {
                throw failure
            } catch {
                // docker reads a helper's error from its standard output.
                let failure = PassphraseInput.helperFailure(error)
                try writeOutput(Array(((failureMessage(failure) ?? "\(failure)") + "\n").utf8))
                throw ExitCode(1)
            }
        }

        private func perform() throws {
            switch action {
            case "version":
                try writeOutput(
                    Array("docker-credential-keychain-cli (keychain-cli) \(KeychainCLI.configuration.version)\n".utf8))
                return
            case "store", "get", "erase", "list":
                break
            default:
                throw CommandFailure.usage(
                    "unknown action \(quotedValue(action, expected: "an action")): use store, get, erase, list or version"
                )
            }
            guard let input = try readAll(STDIN_FILENO, limit: smallInputLimit) else {
                throw CommandFailure.badData(
                    "the input is larger than 1 MiB; docker sends one server's credentials as JSON")
            }
            let credentials = try helperSettings.store().registryCredentials(
                service: try settings.serviceName(helperDefault: "docker"))
            let serverURL = String(String(decoding: input, as: UTF8.self).trimming())
            let encoder = JSONEncoder.sortedKeys()
            switch action {
            case "store":
                guard let credential = try? JSONDecoder().decode(RegistryCredential.self, from: Data(input)) else {
                    throw CommandFailure.badData(
                        "expected {\"ServerURL\": …, \"Username\": …, \"Secret\": …} on standard input")
                }
                // docker-credential-helpers' own words, which docker and its tools look for.
                guard !credential.serverURL.isEmpty else { throw CommandFailure.badData(Self.missingServerURL) }
                guard !credential.username.isEmpty else { throw CommandFailure.badData(Self.missingUsername) }
                try credentials.storeRegistryCredential(credential)
            case "get":
                guard !serverURL.isEmpty else { throw CommandFailure.badData(Self.missingServerURL) }
                guard let found = try credentials.registryCredential(for: serverURL) else {
                    throw CommandFailure(kind: .notFound, message: Self.notFound)
                }
                try writeOutput(try encoder.encode(found) + [10])
            case "erase":
                guard !serverURL.isEmpty else { throw CommandFailure.badData(Self.missingServerURL) }
                guard try credentials.eraseRegistryCredential(for: serverURL) else {
                    throw CommandFailure(kind: .notFound, message: Self.notFound)
                }
            default:
                try writeOutput(try encoder.encode(try credentials.registryUsernames()) + [10])
            }
        }
    }
}
