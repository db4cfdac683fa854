import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct SetCommand: KeychainCommand {
        // Not `Set`, which would hide Swift.Set from every extension of KeychainCLI.
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Store a secret under KEY, replacing any secret there.",
            discussion: """
                The secret comes from standard input (read to its end; one trailing newline is \
                removed unless --raw), from a hidden prompt asked twice when standard input is a \
                terminal, or from --from-file (likewise) or --from-env (the variable's value exactly, a \
                final newline kept). It is never taken from the command \
                line, where ps and shell history would show it.

                  printf '%s' "$TOKEN" | keychain-cli set github-token
                  keychain-cli set npm-token                 # prompts, no echo
                  keychain-cli -s ci set deploy-key --raw < id_ed25519
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key to store the secret under.", completion: .keyNames)
        var key: String

        @Option(
            name: .customLong("from-env"),
            help: ArgumentHelp("Store this environment variable's value, exactly.", valueName: "var"))
        var fromEnvironment: String?

        @Option(
            name: .customLong("from-file"),
            help: ArgumentHelp("Read the secret from this file.", valueName: "path"), completion: .file())
        var fromFile: String?

        @Flag(help: "Keep the input exactly, trailing newline included (for binary secrets).")
        var raw = false

        @Flag(help: "Store an empty secret instead of refusing it.")
        var allowEmpty = false

        // Anything after KEY is refused without being echoed: it is most likely the secret.
        @Argument(parsing: .allUnrecognized, help: .hidden)
        var unexpected: [String] = []

        func validate() throws {
            if fromEnvironment != nil && fromFile != nil {
                throw ValidationError("--from-env and --from-file cannot be used together")
            }
        }

        func run() throws {
            // Checked here rather than in validate(), whose errors the parser would echo with usage.
            if !unexpected.isEmpty {
                throw CommandFailure.usage(
                    "refusing to take a secret from the command line, where ps and shell history "
                        + "show it. Pipe it instead: printf '%s' \"$SECRET\" | keychain-cli set KEY")
            }
            try SetRequest(
                key: key, raw: raw, allowEmpty: allowEmpty, fromEnvironment: fromEnvironment, fromFile: fromFile
            ).perform(in: keychain())
        }
    }
}

/// `set`, once parsed (by the argument parser or by ``FastPath``).
struct SetRequest {
    var key: String
    var raw = false
    var allowEmpty = false
    var fromEnvironment: String?
    var fromFile: String?

    func perform(in keychain: @autoclosure () throws -> Keychain) throws {
        let key = try KeychainKey(key)
        let keychain = try keychain()
        var secret = try readSecret(for: key)
        defer { wipe(&secret) }
        if secret.isEmpty && !allowEmpty { throw KeychainError.emptySecret }
        try keychain.set(secret, for: key)
    }

    private func readSecret(for key: KeychainKey) throws -> Data {
        let limit = Keychain.maximumSecretSize
        let bytes: [UInt8]
        if let name = fromEnvironment {
            guard let value = Environment.bytes(name) else {
                throw CommandFailure.usage(
                    "the environment variable \(quotedValue(name, expected: "a variable name")) is not set. "
                        + "Export it, or pipe the secret")
            }
            bytes = value
        } else if fromFile == nil && isTerminal(STDIN_FILENO) {
            return Data(try promptTwice(for: key))
        } else {
            guard let content = try readInput(path: fromFile, limit: limit) else {
                throw KeychainError.secretTooLarge(limit: limit)
            }
            bytes = content
        }
        guard bytes.count <= limit else { throw KeychainError.secretTooLarge(limit: limit) }
        // A variable's value is stored exactly: only input read to its end (a pipe, a file)
        // carries a newline it did not mean.
        return Data(raw || fromEnvironment != nil ? bytes[...] : withoutTrailingNewline(bytes))
    }

    private func promptTwice(for key: KeychainKey) throws -> [UInt8] {
        guard let first = try readHiddenLine(prompt: "Secret for '\(key)': ") else {
            throw CommandFailure.badData(
                "nothing was typed at the prompt (end of input, Ctrl-D); nothing was stored. Run the command "
                    + "again and type the secret, or pipe it in")
        }
        guard let second = try readHiddenLine(prompt: "Repeat to confirm: "), second == first else {
            throw CommandFailure.badData("the two entries differ; nothing was stored. Run the command again")
        }
        return first
    }
}
