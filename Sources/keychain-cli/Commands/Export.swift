import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

/// What export writes: the formats import reads back, and those CI tools read.
enum ExportFormat: String, ExpressibleByArgument, CaseIterable {
    case json, env
    /// `NAME<<DELIMITER` … for `>> "$GITHUB_ENV"` in GitHub Actions.
    case githubEnv = "github-env"
    /// Unquoted `NAME=value` lines for `docker run --env-file` (not compose v2's dialect).
    case docker
}

extension KeychainCLI {
    struct Export: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every secret of the service (or of all services) as JSON or dotenv.",
            discussion: """
                Prints secrets, so it asks first when standard input is a terminal and needs \
                --yes otherwise. JSON keeps every item exactly (binary secrets as base64, with \
                "encoding": "base64"); import reads it back. The env format writes NAME="value" \
                lines for one service, with keys turned into variable names (github-token becomes \
                GITHUB_TOKEN), escapes \\ " $ ` and line ends so that a shell sourcing the file \
                runs nothing, and refuses binary secrets and names that collide. Each service and \
                key is exported once (two tools' items under one name are one secret to get). \
                -o is written so that no interruption leaves a partial or stray copy; a FIFO or \
                terminal there is written into, a directory refused (74), and the vault's own \
                files are refused (64). For CI, --format github-env writes the runner's \
                NAME<<DELIMITER form for >> "$GITHUB_ENV" (in GitHub Actions, it first prints \
                ::add-mask:: on stderr for every piece of 4 characters or more of every value, split \
                at line breaks and trimmed as the runner registers it), and --format docker writes unquoted \
                NAME=value lines for docker run --env-file, refusing what docker would read \
                otherwise (line breaks, a value in quotes; 65). env, github-env and docker refuse \
                a key that would set a variable that changes what programs run (PATH, LD_PRELOAD, \
                BASH_ENV and the others exec --from refuses; 65): hand such a secret to one command \
                with exec --env NAME=KEY.

                  keychain-cli -s ci export --yes -o ci-secrets.json
                  keychain-cli export --all-services --yes > all.json
                  keychain-cli -s ci export --format env --yes > .env
                  keychain-cli -s ci export --format github-env --yes >> "$GITHUB_ENV"
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Export the items of every service (JSON only).")
        var allServices = false

        @Option(help: "json (default), env, github-env or docker.")
        var format: ExportFormat = .json

        @Option(
            name: [.customShort("o"), .long],
            help: ArgumentHelp(
                "Write to this file (0600, replaced atomically; a FIFO or terminal is written into) instead of stdout.",
                valueName: "path"),
            completion: .file())
        var output: String?

        @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation.")
        var yes = false

        func validate() throws {
            if allServices && format != .json {
                throw ValidationError(
                    "--format \(format.rawValue) holds one service; use --format json with --all-services")
            }
        }

        func run() throws {
            // The refusal comes first: it needs no backend, and says what to do whatever else is wrong.
            if !yes && !isTerminal(STDIN_FILENO) {
                throw CommandFailure.usage(
                    "refusing to export secrets without confirmation (standard input is not a terminal). Pass --yes")
            }
            try settings.checkOutput(output)
            let keychain = try keychain(listing: .keysOnly)
            let listing = try keychain.listing(ofAllServices: allServices)
            // One entry per service and key: two tools' items under one name are one secret to
            // get, and an import of the backup restores that one (export → reset → import).
            var addresses: [(service: String, key: String)] = []
            // By bytes: "é" and "e\u{301}" are two keys, which Swift's String calls equal.
            var seen: Swift.Set<[UInt8]> = []
            for item in listing.items where seen.insert(Array("\(item.service)\u{0}\(item.key)".utf8)).inserted {
                addresses.append((item.service, item.key))
            }
            let scope = allServices ? "every service" : "service '\(keychain.service)'"
            if !yes {
                guard try confirm("Write \(addresses.count) secret(s) of \(scope) to \(output ?? "standard output")?")
                else {
                    throw CommandFailure(
                        kind: .denied, message: "not confirmed; nothing was exported. Answer y, or pass --yes")
                }
            }
            var valid: [SecretAddress] = []
            for (serviceName, keyName) in addresses {
                do {
                    valid.append(SecretAddress(service: try ServiceName(serviceName), key: try KeychainKey(keyName)))
                } catch {
                    throw CommandFailure.badData(
                        "cannot export the item '\(abbreviated(keyName))' of service '\(abbreviated(serviceName))': "
                            + "\(error.description); nothing was written. Rename or delete it with the tool that wrote it"
                    )
                }
            }
            // All at once (the Secret Service: a few GetSecrets calls); an item deleted since the
            // listing is simply not exported.
            let documents = zip(valid, try keychain.store.secrets(of: valid, listedIn: listing)).compactMap {
                address, secret in
                secret.map { SecretDocument(service: address.service, key: address.key, secret: $0) }
            }
            let bytes = format == .json ? try json(documents) : try variables(documents)
            try settings.writeResult(to: output) { sink throws(FileError) in try sink.write(bytes) }
        }

        /// A name for a message: escaped, and cut to 100 characters.
        private func abbreviated(_ name: String) -> String {
            let shown = escapedForDisplay(name)
            return shown.count > 100 ? shown.prefix(100) + "…" : shown
        }

        private func json(_ documents: [SecretDocument]) throws -> [UInt8] {
            return Array(try JSONEncoder.sortedKeys(pretty: true).encode(ExportDocument(items: documents))) + [
                UInt8(ascii: "\n")
            ]
        }

        /// The secrets as variables, in the format asked for (all but json).
        private func variables(_ documents: [SecretDocument]) throws -> [UInt8] {
            if let binary = documents.first(where: { $0.encoding != "utf8" }) {
                throw CommandFailure.badData(
                    "the secret \(quotedValue(binary.key, expected: "a key name")) is binary and cannot be "
                        + "written as \(format.rawValue). Use --format json")
            }
            // A key may be added by anyone who can write the service; a later step, a shell that
            // sources the file or a container must not run what it chose (PATH, LD_PRELOAD, …).
            let named = documents.map { (name: DotEnv.variableName(for: $0.key), key: $0.key, value: "") }
            if let risky = ProgramVariables.first(in: named) {
                throw CommandFailure.badData(
                    "the key \(quotedValue(risky.key, expected: "a key name")) would set \(risky.name), which changes "
                        + "what programs run; nothing was written. Hand it to one command with exec --env "
                        + "\(risky.name)=KEY if it is meant, or keep it in another service")
            }
            do {
                let secrets = documents.map { ($0.key, $0.secret) }
                switch format {
                case .githubEnv:
                    let text = try GitHubEnvironmentFile.text(of: try DotEnv.variables(of: secrets)) {
                        "ghadelimiter_" + (0..<16).map { _ in String(UInt8.random(in: 16...255), radix: 16) }.joined()
                    }
                    // The runner reads workflow commands on stderr too: the values are masked in
                    // the log of this step and of the later ones before the file is written.
                    if (try? environment("GITHUB_ACTIONS")) == "true" {
                        writeError(GitHubEnvironmentFile.maskCommands(for: documents.map(\.secret)))
                    }
                    return Array(text.utf8)
                case .docker:
                    return Array(try DockerEnvironmentFile.text(of: try DotEnv.variables(of: secrets)).utf8)
                case .env, .json:
                    return Array(try DotEnv.text(of: secrets).utf8)
                }
            } catch {
                throw CommandFailure.badData("\(error). Use --format json")
            }
        }
    }
}
