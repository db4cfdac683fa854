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
                --from SERVICE sets every key of SERVICE, named as export --format env names it \
                (--only and --except globs choose keys, --prefix goes before names); two secrets \
                that would set one name stop everything (65). \
                If the command cannot be found, exit 127; if it cannot be run, 126. The vault's \
                passphrases ($KEYCHAIN_PASSPHRASE, $KEYCHAIN_NEW_PASSPHRASE, --passphrase-fd), its \
                identity descriptor ($KEYCHAIN_IDENTITY_FD, --identity-fd), the OpenBao token \
                ($BAO_TOKEN, $VAULT_TOKEN) and login secrets ($KEYCHAIN_OPENBAO_SECRET_ID, \
                $KEYCHAIN_OPENBAO_JWT) are not passed on; a command that needs one maps it \
                (--env BAO_TOKEN=KEY).

                  keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- ./deploy.sh arg
                  keychain-cli exec --env-file secrets.env -- make release
                  keychain-cli exec --from ci --except 'debug-*' -- ./deploy.sh
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

        @Option(
            name: .customLong("from"),
            help: ArgumentHelp(
                "Set a variable for every key of SERVICE, named as export --format env names it. Repeatable.",
                valueName: "service"))
        var fromServices: [String] = []

        @Option(help: ArgumentHelp("With --from: only the keys that match this glob. Repeatable.", valueName: "glob"))
        var only: [String] = []

        @Option(help: ArgumentHelp("With --from: not the keys that match this glob. Repeatable.", valueName: "glob"))
        var except: [String] = []

        @Option(help: ArgumentHelp("With --from: put this before every variable name (CI_).", valueName: "text"))
        var prefix: String = ""

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
        var command: [String] = []

        func validate() throws {
            if command.isEmpty {
                throw ValidationError("name the command to run after --, e.g. exec --env A=key -- env")
            }
            if mappings.isEmpty && environmentFile == nil && fromServices.isEmpty {
                throw ValidationError("give at least one --env NAME=KEY, an --env-file or a --from SERVICE")
            }
            if fromServices.isEmpty && (!only.isEmpty || !except.isEmpty || !prefix.isEmpty) {
                throw ValidationError("--only, --except and --prefix choose the keys of --from SERVICE; give one")
            }
            if !prefix.isEmpty && !DotEnv.isVariableName(prefix + "X") {
                throw ValidationError("--prefix must start a variable name: letters, digits and _, no digit first")
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
            var values = try all.map { mapping in (mapping.name, try mapping.resolve(defaultService: keychain)) }
            var owners = Dictionary(all.map { ($0.name, $0.origin) }, uniquingKeysWith: { first, _ in first })
            var taken: Swift.Set<String> = []
            for service in fromServices where taken.insert(service).inserted {  // a service given twice is read once
                let shownService = quotedValue(service, expected: "a service name")
                for (name, key, value) in try variables(of: service, store: keychain.store) {
                    let origin = "--from \(shownService) (key \(quotedValue(key, expected: "a key name")))"
                    if let owner = owners.updateValue(origin, forKey: name) {
                        throw CommandFailure.badData(
                            "\([name, key].allSatisfy { misplacedSecretKind($0) == nil } ? name : "one variable (not shown)") would be set by "
                                + "\(owner) and by \(origin); nothing was run. Use --except, --prefix, or an --env "
                                + "mapping for one of them")
                    }
                    values.append((name, value))
                }
            }
            // (A mapping may still pass the withheld secrets on.)
            settings.withholdSecretsFromCommands()
            for (name, value) in values { setenv(name, value, 1) }
            try replaceProcess(with: command)
        }
    }
}

extension KeychainCLI.Exec {
    /// The variables of `--from service`: every key that --only and --except let through, named
    /// as `export --format env` names it, after --prefix.
    /// - Throws: ``CommandFailure``: no key left (1), a binary secret (65); two keys of the
    ///   service that become one name (65).
    func variables(of service: String, store: any SecretStore) throws -> [(name: String, key: String, value: String)] {
        let keychain = Keychain(service: try ServiceName(service), store: store)
        let keys = Swift.Set(try keychain.items().map(\.key)).sorted().filter { key in
            (only.isEmpty || only.contains { fnmatch($0, key, 0) == 0 })
                && !except.contains { fnmatch($0, key, 0) == 0 }
        }
        guard !keys.isEmpty else {
            throw CommandFailure(
                kind: .notFound,
                message: "--from \(quotedValue(service, expected: "a service name")) gives no secret"
                    + "\(only.isEmpty && except.isEmpty ? "" : " that --only and --except let through"); nothing "
                    + "was run. Check the service with keychain-cli -s SERVICE list")
        }
        let addresses = try keys.map { SecretAddress(service: keychain.service, key: try KeychainKey($0)) }
        var secrets: [(key: String, value: String)] = []
        for (key, secret) in zip(keys, try store.secrets(of: addresses)) {
            guard let secret else { continue }  // deleted since the listing
            guard let text = String(validating: secret, as: UTF8.self), !text.utf8.contains(0) else {
                throw CommandFailure.badData(
                    "the secret \(quotedValue(key, expected: "a key name")) of --from \(service) is binary and "
                        + "cannot go in the environment; nothing was run. Leave it out with --except")
            }
            secrets.append((key, text))
        }
        let variables: [(name: String, key: String, value: String)]
        do {
            variables = try DotEnv.variables(of: secrets).map { (prefix + $0.name, $0.key, $0.value) }
        } catch {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): \(error); nothing was run. Leave one out "
                    + "with --except")
        }
        // A key may be added by anyone who can write the service; a name that changes what the
        // command runs (PATH, LD_PRELOAD, BASH_ENV, …) is taken only from an explicit --env mapping.
        if let risky = variables.first(where: { Self.changesWhatRuns($0.name) }) {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): the key "
                    + "\(quotedValue(risky.key, expected: "a key name")) would set \(risky.name), which changes what "
                    + "the command runs; nothing was run. Map it explicitly (--env \(risky.name)=KEY) if it is meant, "
                    + "or leave it out with --except or put --prefix before the names")
        }
        return variables
    }

    /// Variables that change which program runs or what it loads, and this tool's own: taken by
    /// `--from` only through an explicit `--env` mapping.
    static func changesWhatRuns(_ name: String) -> Bool {
        let exact: Swift.Set<String> = [
            "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE",
            "HOME", "SHELL", "_", "GCONV_PATH", "NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP",
            "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS",
            "_JAVA_OPTIONS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "SSH_ASKPASS", "EDITOR", "VISUAL",
            "PAGER", "BROWSER", "TMPDIR", "BAO_TOKEN", "VAULT_TOKEN", "BAO_ADDR", "VAULT_ADDR",
        ]
        return exact.contains(name) || ["LD_", "DYLD_", "KEYCHAIN_", "GIT_CONFIG"].contains { name.hasPrefix($0) }
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
