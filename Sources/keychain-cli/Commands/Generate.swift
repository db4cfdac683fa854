import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Generate: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a new random secret under KEY, without showing it.",
            discussion: """
                Draws --length characters (default 32) from --charset with the system's random \
                generator, every character equally likely, and stores them. Nothing is printed \
                unless --print or --clip; at a terminal, the secret's strength in bits goes to \
                standard error. A secret already stored under KEY is kept, and generate exits 73, \
                unless --force.

                  keychain-cli generate db-password
                  keychain-cli generate wifi --length 20 --unambiguous --clip
                  keychain-cli -s ci generate webhook-secret --charset hex --length 64 --print
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key to store the new secret under.", completion: .keyNames)
        var key: String

        @Option(parsing: .unconditional, help: ArgumentHelp("How many characters (1 to 1048576).", valueName: "n"))
        var length = 32

        @Option(
            help: ArgumentHelp(
                "The characters to draw from: alnum (letters and digits), symbols (alnum and punctuation "
                    + "but no quotes, backslash, backtick or space), hex, base64url (letters, digits, - and _) "
                    + "or digits.",
                valueName: "set"))
        var charset: RandomSecret.Charset = .alnum

        @Flag(help: "Leave out characters easily mistaken for others (0 O 1 l I |); alnum and symbols only.")
        var unambiguous = false

        @Flag(help: "Replace a secret already stored under KEY.")
        var force = false

        @Flag(name: .customLong("print"), help: "Also print the new secret on standard output.")
        var printSecret = false

        @OptionGroup var clipboard: ClipboardOptions

        func validate() throws {
            guard (1...Keychain.maximumSecretSize).contains(length) else {
                throw ValidationError("--length must be from 1 to \(Keychain.maximumSecretSize) characters")
            }
            if unambiguous && !charset.allowsUnambiguous {
                throw ValidationError(
                    "--unambiguous goes with --charset alnum or symbols: \(charset) needs every character")
            }
            if printSecret && clipboard.clip { throw ValidationError("choose one of --print and --clip") }
        }

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            let generator = RandomSecret(charset: charset, unambiguous: unambiguous)
            var secret = Data(generator.generate(length: length))
            defer { wipe(&secret) }
            // A new key: stored first (the vault decides under its lock, OpenBao by check-and-set),
            // then shown, so that a generate that lost a race shows nothing; an output that
            // fails then leaves the new secret stored, where `get` reads it. --force: shown first,
            // so that an output that fails leaves the secret it would replace as it was.
            if !force, try keychain.exists(key) { throw exists(key, in: keychain) }
            if clipboard.clip { _ = try ClipboardTool.find() }  // no clipboard: nothing stored
            if force {
                try show(secret, as: key)
                try keychain.set(secret, for: key)
            } else {
                guard try keychain.add(secret, for: key) else { throw exists(key, in: keychain) }
                try show(secret, as: key)
            }
            if isTerminal(STDERR_FILENO) {
                let bits = Int(generator.entropyBits(length: length).rounded(.down))
                writeError(
                    "Stored '\(key)': \(length) characters from \(generator.alphabet.count) (\(charset)), "
                        + "\(bits) bits of entropy.\n")
            }
        }

        /// `--clip` or `--print`, where given.
        private func show(_ secret: Data, as key: KeychainKey) throws {
            if clipboard.clip {
                try copyToClipboard(secret, clearAfter: clipboard.seconds, naming: key)
            } else if printSecret {
                try writeOutput(secret + (isTerminal(STDOUT_FILENO) ? [UInt8(ascii: "\n")] : []))
            }
        }

        private func exists(_ key: KeychainKey, in keychain: Keychain) -> CommandFailure {
            CommandFailure(
                kind: .exists,
                message: "a secret named '\(key)' is already stored in service '\(keychain.service)'; it was kept. "
                    + "Add --force to replace it, or choose another key")
        }
    }
}

extension RandomSecret.Charset: ExpressibleByArgument {}
