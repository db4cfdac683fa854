import ArgumentParser
import Glibc
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    struct SSHAgent: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "ssh-agent",
            abstract: "Be an ssh-agent whose keys are secrets in the backend: they never touch the disk.",
            discussion: """
                Serves OpenSSH's agent protocol (ssh, ssh-add, ssh-keygen -Y, git commit -S) with the \
                OpenSSH private keys stored in the backend: every one of a service (--from SERVICE) and \
                single ones (--key [SERVICE/]KEY). ed25519, ECDSA and RSA keys (rsa-sha2-256/512 \
                signatures); passphrase-protected ones are asked for once (--key-passphrase-fd, \
                --key-passphrase-file, $KEYCHAIN_KEY_PASSPHRASE, else the terminal; the first one \
                typed is tried on every key) and held decrypted only in the agent's memory, locked \
                against swap where it may and kept out of core dumps. ssh-add adds keys for the \
                agent's life (-t a lifetime, -c a confirmation asked through $SSH_ASKPASS); with \
                --store SERVICE it also stores each key added without a lifetime there. ssh-add -d \
                and -D remove keys (from the agent, never from the backend), -x and -X lock and \
                unlock (locked, the agent holds its keys only encrypted under the password).

                Without -D or a command, starts the agent in the background and prints the shell \
                commands that point ssh at it (eval them): SSH_AUTH_SOCK and SSH_AGENT_PID, as \
                OpenSSH's ssh-agent does (-c: for csh). -D waits in the foreground, the agent \
                ending with it. After --, becomes the command with SSH_AUTH_SOCK set; the agent \
                ends when it does. The agent is a process of its own that never reads the \
                backend: it is handed the opened keys. The socket is made in a new private directory ($XDG_RUNTIME_DIR, else /tmp) \
                unless -a names it; it answers your uid only, and the agent ends on SIGTERM, SIGINT \
                or SIGHUP or once its socket is removed, removing it. --access-log FILE appends one \
                JSON line per signature asked for (the key's fingerprint and comment, allowed or why \
                not, the client's pid, uid and executable, and the hosts its ssh connection is bound \
                to); --allow-exe PATH lets only those programs have signatures.

                  eval "$(keychain-cli ssh-agent --from ssh-keys)"
                  keychain-cli --backend vault ssh-agent --key ci/deploy-key -- git push
                  ssh-add -l; ssh-add -x
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(
            name: .customLong("from"),
            help: ArgumentHelp("Serve every OpenSSH private key of this service (repeatable).", valueName: "service"))
        var services: [String] = []

        @Option(
            name: .customLong("key"),
            help: ArgumentHelp(
                "Serve this key: KEY of the service (-s), or SERVICE/KEY (repeatable).", valueName: "key"))
        var keys: [String] = []

        @Option(
            help: ArgumentHelp("Store each key ssh-add adds without a lifetime in this service.", valueName: "service"))
        var store: String?

        @Option(
            name: .customShort("a"),
            help: ArgumentHelp("Listen on this socket (it must not exist).", valueName: "socket"), completion: .file())
        var socket: String?

        @Flag(name: .customShort("c"), help: "Print csh commands (setenv) rather than sh ones.")
        var csh = false

        @Flag(name: .customShort("D"), help: "Serve in the foreground.")
        var foreground = false

        @Option(
            help: ArgumentHelp(
                "Forget each key this long after it is added: 30m, 8h, 1h30m, or none.", valueName: "duration"))
        var ttl = "none"

        @Option(
            help: ArgumentHelp("Forget every key once none has signed for this long (or none).", valueName: "duration"))
        var idle = "none"

        @Option(
            help: ArgumentHelp(
                "Append a JSON line per signature asked for to this file (created 0600).", valueName: "path"),
            completion: .file())
        var accessLog: String?

        @Option(
            help: ArgumentHelp(
                "Let only this program have signatures (repeatable); others are refused.", valueName: "path"),
            completion: .file())
        var allowExe: [String] = []

        @Option(help: ArgumentHelp("Read the keys' passphrase from this descriptor.", valueName: "fd"))
        var keyPassphraseFd: Int32?

        @Option(help: ArgumentHelp("Read the keys' passphrase from this file.", valueName: "path"), completion: .file())
        var keyPassphraseFile: String?

        /// Set by the agent itself when it starts one in the background: the keys come on
        /// descriptor 3, and it says there when it listens.
        @Flag(help: .hidden) var backgroundAgent = false

        /// With --background-agent: the socket to listen on (absolute: the agent works in /),
        /// and the directory made for it, removed with it.
        @Option(help: .hidden) var agentSocket: String?
        @Option(help: .hidden) var agentDirectory: String?

        @Argument(parsing: .postTerminator, help: "A command to run with SSH_AUTH_SOCK set, after --.")
        var command: [String] = []

        func validate() throws {
            _ = try Unlock.seconds(ttl, option: "--ttl")
            _ = try Unlock.seconds(idle, option: "--idle")
            if foreground && !command.isEmpty { throw ValidationError("give -D or a command after --, not both") }
            try PassphraseInput.validate(
                prefix: "key", file: keyPassphraseFile, descriptor: keyPassphraseFd,
                vaultDescriptor: settings.passphraseFD)
            do {
                try PathValue.check(accessLog, of: "--access-log")
                try PathValue.check(socket, of: "-a")
                for path in allowExe { try PathValue.check(path, of: "--allow-exe") }
            } catch let failure as CommandFailure {
                throw ValidationError(failure.message)
            }
        }

        func run() throws {
            for warning in Startup.holdSecretsSafely("ssh-agent") { writeError(warning) }
            let limits = (
                ttl: try Unlock.seconds(ttl, option: "--ttl"), idle: try Unlock.seconds(idle, option: "--idle")
            )
            let policy = try AccessPolicy.forCommand(logPath: accessLog, allowedExecutables: allowExe)
            if backgroundAgent {
                try AgentStart.serveInBackground(
                    place: AgentSocket(path: agentSocket ?? "", directory: agentDirectory), limits: limits,
                    policy: policy,
                    hooks: hooks())
                return
            }
            // The backend, and the vault's plaintext it may hold, go once the keys are read.
            var loaded = try {
                var loading = AgentKeyLoading(
                    keychain: try keychain(listing: .keysOnly),
                    passphrase: PassphraseInput(keyDescriptor: keyPassphraseFd, file: keyPassphraseFile))
                return try loading.load(services: services, keys: keys)
            }()
            let place = try AgentSocket(given: socket)
            if !command.isEmpty {
                try AgentStart.run(command, keys: &loaded, place: place, settings: settings)
            } else if foreground {
                try AgentStart.serveInForeground(keys: &loaded, place: place, csh: csh)
            } else {
                try AgentStart.startInBackground(keys: &loaded, place: place, csh: csh)
            }
        }

        /// What the agent asks of the command line: stores (--store), confirmations, messages.
        private func hooks() throws -> SSHAgentServer.Hooks {
            let storeHook = try store.map { service in
                AgentKeyStoring(store: try settings.store(), service: try ServiceName(service)).hook
            }
            return SSHAgentServer.Hooks(
                store: storeHook, confirm: AgentConfirmation.ask,
                tell: { writeError("keychain-cli ssh-agent: \($0)\n") })
        }
    }
}
