import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Exec: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a command with secrets in its environment, never in its arguments.",
            discussion: """
                Every mapping is resolved first; if any secret is missing or cannot be read, the \
                command is not run (exit as for get). Then keychain-cli replaces itself with the \
                command, so its signals, input, output and exit status are the command's own. \
                A mapping is NAME=KEY (in --service) or NAME=SERVICE/KEY (split at the first /). \
                An --env-file holds one mapping per line; blank lines and # comments are ignored. \
                If the command cannot be found, exit 127; if it cannot be run, 126. The vault's \
                passphrases ($KEYCHAIN_PASSPHRASE, $KEYCHAIN_NEW_PASSPHRASE, --passphrase-fd), its \
                identity descriptor ($KEYCHAIN_IDENTITY_FD, --identity-fd), the OpenBao token \
                ($BAO_TOKEN, $VAULT_TOKEN) and login secrets ($KEYCHAIN_OPENBAO_SECRET_ID, \
                $KEYCHAIN_OPENBAO_JWT) are not passed on; a command that needs one maps it \
                (--env BAO_TOKEN=KEY).

                  keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- ./deploy.sh arg
                  keychain-cli exec --env-file secrets.env -- make release
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(
            name: .customLong("env"),
            help: ArgumentHelp("Set NAME to a secret: NAME=KEY or NAME=SERVICE/KEY. Repeatable.", valueName: "mapping"))
        var mappings: [String] = []

        @Option(
            name: .customLong("env-file"),
            help: ArgumentHelp(
                "Read mappings from this file, one NAME=KEY or NAME=SERVICE/KEY a line.", valueName: "path"),
            completion: .file())
        var environmentFile: String?

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
        var command: [String] = []

        func validate() throws {
            if command.isEmpty {
                throw ValidationError("name the command to run after --, e.g. exec --env A=key -- env")
            }
            if mappings.isEmpty && environmentFile == nil {
                throw ValidationError("give at least one --env NAME=KEY or an --env-file")
            }
        }

        func run() throws {
            var all = try mappings.map { text throws(FormatError) in try EnvironmentMapping(option: text) }
            if let environmentFile { all += try EnvironmentMapping.read(file: environmentFile) }
            var seen: Swift.Set<String> = []
            for mapping in all where !seen.insert(mapping.name).inserted {
                throw CommandFailure.usage("\(mapping.origin): \(mapping.name) is mapped twice. Keep one mapping")
            }
            // Every secret is read before anything runs: one missing secret runs nothing.
            let keychain = try keychain()
            let values = try all.map { mapping in (mapping.name, try mapping.resolve(defaultService: keychain)) }
            // (A mapping may still pass the withheld secrets on.)
            settings.withholdSecretsFromCommands()
            for (name, value) in values { setenv(name, value, 1) }
            try replaceProcess(with: command)
        }
    }
}

extension EnvironmentMapping {
    /// The mappings of an env file; a bad line is a usage error naming the file and line.
    static func read(file path: String) throws -> [EnvironmentMapping] {
        guard let bytes = try readInput(path: path, limit: smallInputLimit) else {
            throw CommandFailure.badData(
                "\(quotedPath(path)) is larger than 1 MiB; an env file holds mappings, not secrets")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CommandFailure.usage("\(quotedPath(path)) is not UTF-8 text; an env file holds NAME=KEY lines")
        }
        return try EnvironmentMapping.parse(text, path: path)
    }

    /// The secret as text for the environment.
    /// - Throws: ``KeychainError/notFound(service:key:)`` when missing; ``CommandFailure`` when it
    ///   is binary (an environment variable cannot hold NUL bytes or arbitrary bytes safely).
    func resolve(defaultService keychain: Keychain) throws -> String {
        let target = try service.map { Keychain(service: try ServiceName($0), store: keychain.store) } ?? keychain
        let key = try KeychainKey(key)
        guard let secret = try target.data(for: key) else {
            throw KeychainError.notFound(service: target.service.rawValue, key: key.rawValue)
        }
        guard let text = String(validating: secret, as: UTF8.self), !text.utf8.contains(0) else {
            throw CommandFailure.badData(
                "the secret '\(key)' of service '\(target.service)' is binary and cannot go in the environment "
                    + "(\(name)). Nothing was run; write it to a file with get instead")
        }
        return text
    }
}
