import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Exec: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a command with secrets in its environment or as files, never in its arguments.",
            discussion: """
                Every mapping is resolved first; if any secret is missing or cannot be read, the \
                command is not run (exit as for get, naming the variable). A mapping is NAME=KEY \
                (in --service), NAME=SERVICE/KEY (split at the first /) or \
                NAME=keychain://SERVICE/KEY[?field=NAME] (a reference: %XX escapes a % ? # in a \
                name). An --env-file is a .env file (NAME=value literals, passed on unmasked, and \
                NAME=keychain://… references, read and masked) when it holds a quoted value, an \
                export line or a reference, else one NAME=KEY mapping per line; blank lines and # \
                comments are ignored. A variable exec inherits whose whole value is a reference is \
                read too (op run's rule; --no-references passes it on as it is). \
                --from SERVICE sets every key of SERVICE, \
                named as export --format env names it (--only and --except globs choose keys, \
                --prefix goes before names); two secrets that would set one name stop everything (65), \
                and so does a key that would set a variable that changes what the command runs \
                (PATH, LD_PRELOAD, BASH_ENV, GIT_EXTERNAL_DIFF and others: docs/security.md has \
                the list; map one with --env NAME=KEY when it is meant). \
                --file NAME=KEY writes the secret to the file NAME (mode 0400) in a new directory on \
                a tmpfs, named in $CREDENTIALS_DIRECTORY as systemd names it; it is removed when the \
                command ends, also if keychain-cli is killed.

                The command's output and errors are masked: keychain-cli stays its parent and \
                writes on what it writes with every secret it was given shown as ***, in every form \
                GitHub's runner masks (the value, each piece split at line breaks and trimmed, \
                base64, JSON, URL, XML, expression, command-line and PowerShell escapes, the inside \
                of quotes) and more: base64 inside longer text or wrapped across lines, JSON and \
                URL encodings as other encoders spell them. Secrets under 4 characters are not \
                masked (a warning names them); the runner masks any length. Bytes that may begin a \
                secret are held while 4 or more of it are open, however slowly it comes; fewer show \
                after half a second's quiet (a prompt). An output that is a terminal stays one for \
                the command (a pty of ours); stdout and stderr on one pipe or file stay one pipe, in \
                order. Its input is its own, signals sent to keychain-cli reach it, and keychain-cli \
                ends as it ends (its status, or 128+N after signal N). It never shares \
                keychain-cli's process group, so a signal sent to a group reaches it once; started \
                by a shell with job control, it gets the terminal's foreground (a password prompt on \
                /dev/tty works with stdin elsewhere) and Ctrl-Z stops it and keychain-cli as one \
                job; started by a script, it takes keychain-cli's place in the script's group. With \
                GITHUB_ACTIONS=true the secrets are first given to the runner as ::add-mask:: lines \
                on stderr, piece by piece. --no-mask replaces keychain-cli with the command instead. \
                If the command cannot be found, exit 127; if it cannot be run, 126; if what it \
                writes cannot be written on (a full disk), 74. The vault's \
                passphrases ($KEYCHAIN_PASSPHRASE, $KEYCHAIN_NEW_PASSPHRASE, --passphrase-fd), its \
                identity descriptor ($KEYCHAIN_IDENTITY_FD, --identity-fd), the OpenBao token \
                ($BAO_TOKEN, $VAULT_TOKEN) and login secrets ($KEYCHAIN_OPENBAO_SECRET_ID, \
                $KEYCHAIN_OPENBAO_JWT) and $CREDENTIALS_DIRECTORY where it holds \
                keychain-cli.passphrase are not passed on; a command that needs one maps it \
                (--env BAO_TOKEN=KEY).

                --restart-on-change (not with --no-mask: 64) watches the services of the secrets \
                the command was given, as watch does, and when one of them changes (or, with \
                --from, a key it selects is added, changed or removed) sends the command \
                --restart-signal (default TERM; a name, with or without SIG, or a number), SIGKILL \
                after --restart-grace seconds (default 10), and starts it again with everything \
                read anew (the new values masked, the old ones still). A burst of changes restarts \
                it once: when none came for 0.25 s (1.25 s where the backend is polled: OpenBao, \
                a tree vault), at the latest 3 s after the first. A secret deleted, or a re-read \
                that fails, leaves the command running, and a line on stderr names the variable \
                or file, never a value; the same values again restart nothing. keychain-cli ends \
                as the last command ended on its own; an ending signal sent to keychain-cli while \
                it restarts the command ends it instead.

                  keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- ./deploy.sh arg
                  keychain-cli exec --env-file .env -- make release
                  DB_PASSWORD=keychain://prod/db keychain-cli exec -- ./migrate.sh
                  keychain-cli exec --from ci --except 'debug-*' -- ./deploy.sh
                  keychain-cli -s web exec --file tls.key=tls-key -- ./serve.sh
                  keychain-cli -s web exec --restart-on-change --env DB=db -- ./serve.sh
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @OptionGroup var sources: VariableSources

        @Flag(help: "Pass on variables whose value is keychain://… as they are, instead of reading what they name.")
        var noReferences = false

        @Option(
            name: .customLong("file"),
            help: ArgumentHelp(
                "Write a secret to the file NAME in $CREDENTIALS_DIRECTORY: NAME=KEY or NAME=SERVICE/KEY. Repeatable.",
                valueName: "mapping"))
        var files: [String] = []

        @Flag(help: "Do not mask the command's output: replace keychain-cli with the command.")
        var noMask = false

        @OptionGroup var restart: RestartOptions

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
        var command: [String] = []

        func validate() throws {
            if command.isEmpty {
                throw ValidationError("name the command to run after --, e.g. exec --env A=key -- env")
            }
            if noMask && restart.onChange {
                throw ValidationError(
                    "--restart-on-change keeps keychain-cli the command's parent, which --no-mask replaces; drop one")
            }
            if sources.isEmpty && files.isEmpty && inheritedReferences().isEmpty {
                throw ValidationError(
                    "give at least one --env NAME=KEY, an --env-file, a --from SERVICE or a --file, or set a variable "
                        + "to keychain://SERVICE/KEY")
            }
        }

        func run() throws {
            // Every secret is read before anything runs: one missing secret runs nothing.
            let keychain = try keychain()
            let inputs = try inputs(from: keychain)
            // (A mapping may still pass the withheld secrets on.)
            settings.withholdSecretsFromCommands()
            if restart.onChange { try runRestarting(inputs, keychain: keychain) }
            for variable in inputs.variables {
                unsetenv(variable.name)  // every entry of the name: an environment may hold one twice
                setenv(variable.name, String(decoding: variable.value, as: UTF8.self), 1)
            }
            let secrets = inputs.secrets
            announce(secrets)
            let directory = try inputs.files.isEmpty ? nil : CredentialsDirectory(writing: inputs.files)
            if let directory { setenv("CREDENTIALS_DIRECTORY", directory.path, 1) }
            if noMask { try replaceProcess(with: command) }
            try runMasked(
                command, hiding: OutputMasks(secrets.map(\.1)),
                erasing: inputs.variables.filter(\.isSecret).map(\.name), cleanup: { directory?.remove() })
        }

        /// Tells GitHub's runner to mask the secrets too (in this step's log and the later
        /// ones'), and warns of those too short to be masked, by name.
        func announce(_ secrets: [(shown: String, value: [UInt8])]) {
            if (try? environment("GITHUB_ACTIONS")) == "true" {
                let texts = secrets.filter { !MaskedForms.isTooShort($0.value) }.compactMap {
                    String(validating: $0.value, as: UTF8.self)
                }
                writeError(GitHubEnvironmentFile.maskCommands(for: texts))
            }
            guard !noMask else { return }
            for (shown, value) in secrets where !value.isEmpty {
                let name = misplacedSecretKind(shown) == nil ? shown : "a secret"
                if MaskedForms.isTooShort(value) {
                    warn(
                        "\(name) is shorter than \(MaskedForms.minimumLength) characters and is not masked in the "
                            + "output (masking it would mangle the output)")
                } else if MaskedForms.hasShortLines(value) {
                    warn(
                        "some lines of \(name) are shorter than \(MaskedForms.minimumLength) characters: the value is "
                            + "masked whole, but those lines are not masked alone")
                }
            }
        }
    }
}
