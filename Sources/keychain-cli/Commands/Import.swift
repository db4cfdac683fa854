import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Import: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Store the secrets of an export file (JSON or dotenv), or the entries of another password manager or authenticator app.",
            discussion: """
                Reads FILE (or standard input). The whole file is checked before the first write: \
                one bad item (the message gives its line or number and the reason) stores nothing. \
                Items already there are skipped and reported unless --overwrite. An empty secret \
                (NAME= in env) is refused, as set refuses it, unless --allow-empty. JSON items carry \
                their own service; env lines (NAME=value) go to --service under the key NAME. \
                The format is taken from --format, else from the content ({ means JSON). \
                A password manager's entry without a password is stored as it is.

                --format pass reads a pass store (FILE: its directory; by default \
                $PASSWORD_STORE_DIR, else ~/.password-store), decrypting each entry with gpg as pass \
                does, and stores it as pass show prints it. --format keepassxc reads a KeePass \
                database (FILE.kdbx) through keepassxc-cli, its password from \
                --source-passphrase-file or --source-passphrase-fd, else asked at the terminal. \
                --format bitwarden reads Bitwarden's unencrypted JSON or CSV export, --format \
                1password a 1Password .1pux, .1pif or CSV file, --format keepass KeePass 2's or \
                KeePassX's XML or a KeePass CSV; chrome (Edge, Brave, Opera, Vivaldi), firefox, \
                safari, lastpass, dashlane, keeper, enpass, nordpass and protonpass read those \
                managers' exports, aegis, andotp and freeotp the authenticator apps' backups (an \
                encrypted one's password as for keepassxc). Each entry goes to --service under its path (groups or \
                folders, and title) as one secret in pass's layout: the password on the first line, then \
                'NAME: value' lines (username, url, custom fields), an otpauth:// line for its TOTP, \
                and the notes after an empty line. get KEY --field NAME prints one field; otp KEY \
                computes the TOTP. Two entries of one path are both kept, the later under 'PATH (2)'.

                  keychain-cli -s ci export --yes | keychain-cli import     # a no-op
                  keychain-cli import ci-secrets.json --dry-run
                  keychain-cli -s ci import .env --overwrite
                  keychain-cli -s web import --format pass
                  keychain-cli -s web import --format bitwarden bitwarden_export.json
                  keychain-cli -s web import --format 1password export.1pux
                  keychain-cli import --format keepassxc db.kdbx --source-passphrase-fd 3
                  keychain-cli -s web import --format chrome 'Chrome Passwords.csv'
                  keychain-cli -s 2fa import --format aegis aegis-backup.json
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(
            help: "The file to read; standard input when omitted. For --format pass, the store's directory.",
            completion: .file())
        var file: String?

        @Option(
            help: ArgumentHelp(
                "json or env (by default, taken from the content), or another manager's: pass, keepassxc, keepass, "
                    + "bitwarden, 1password, chrome, firefox, safari, lastpass, dashlane, keeper, enpass, nordpass, "
                    + "protonpass, aegis, andotp, freeotp.",
                valueName: "format"))
        var format: ImportFormat?

        @Option(
            help: ArgumentHelp(
                "--format keepassxc, aegis, andotp: read the database's or backup's password from this file (one trailing newline is ignored).",
                valueName: "path"),
            completion: .file())
        var sourcePassphraseFile: String?

        @Option(
            name: .customLong("source-passphrase-fd"), parsing: .unconditional,
            help: ArgumentHelp(
                "--format keepassxc, aegis, andotp: read the password from this open file descriptor, to its end.",
                valueName: "n"))
        var sourcePassphraseFD: Int32?

        @Option(
            help: ArgumentHelp(
                "--format keepassxc: the database's key file (with an empty password: the key file alone).",
                valueName: "path"),
            completion: .file())
        var sourceKeyFile: String?

        @Flag(help: "Replace items that are already there.")
        var overwrite = false

        @Flag(help: "Only print what would be added, replaced or skipped.")
        var dryRun = false

        @Flag(help: "Store empty secrets (NAME= in env) instead of refusing the file, as set --allow-empty.")
        var allowEmpty = false

        func validate() throws {
            let given = [
                ("--source-passphrase-file", sourcePassphraseFile != nil),
                ("--source-passphrase-fd", sourcePassphraseFD != nil), ("--source-key-file", sourceKeyFile != nil),
            ]
            let encrypted: [ImportFormat] = [.keepassxc, .aegis, .andotp]
            if !encrypted.contains(format ?? .json) || (format != .keepassxc && sourceKeyFile != nil),
                let (option, _) = given.first(where: \.1)
            {
                throw ValidationError(
                    option == "--source-key-file"
                        ? "--source-key-file is for --format keepassxc (a KeePass database's key file)"
                        : "\(option) is for --format keepassxc, aegis or andotp (the password of an encrypted database or backup)"
                )
            }
            try PassphraseInput.validate(
                prefix: "source", file: sourcePassphraseFile, descriptor: sourcePassphraseFD,
                vaultDescriptor: settings.passphraseFD)
            do {
                try PathValue.check(sourceKeyFile, of: "--source-key-file")
            } catch let failure as CommandFailure {
                throw ValidationError(failure.message)
            }
        }

        func run() throws {
            let source = format == .pass ? "the pass store" : file ?? "standard input"
            let keychain = try keychain(listing: .keysOnly)
            let reading = isTerminal(STDERR_FILENO) && format == .pass
            let imported = try ImportFormat.items(
                format, file: file, service: keychain.service, timeout: try settings.resolvedTimeout(),
                database: (
                    PassphraseInput(sourceDescriptor: sourcePassphraseFD, file: sourcePassphraseFile), sourceKeyFile
                ),
                progress: { done, total in if reading { writeError("\rdecrypting \(done)/\(total)") } })
            if reading { writeError("\n") }
            let items = imported.items
            for line in imported.notImported { writeError("keychain-cli: \(line)\n") }
            for (key, storedAs) in imported.renamed {
                writeError(
                    "keychain-cli: two entries are named \(quotedValue(key, expected: "a key")); the later is stored as "
                        + "\(quotedValue(storedAs, expected: "a key"))\n")
            }
            // One rule with set: an empty secret in a file of values is usually an unset variable,
            // stored only when asked. A password manager's entry without a password (a title, a
            // note) is a normal entry, stored as it is.
            if !allowEmpty, [.json, .env, nil].contains(format), let empty = items.first(where: { $0.secret.isEmpty }) {
                throw CommandFailure.badData(
                    "\(file.map(quotedPath) ?? source): the secret of \(shownItem(empty.service, empty.key)) is empty; nothing "
                        + "was stored. Pass --allow-empty if empty secrets are really meant, as set takes it")
            }

            // A name the backend cannot hold (a tree vault's file name too long) stops the import
            // before its first write, as a bad line does.
            for index in 0..<imported.count {
                let (service, key) =
                    imported.streamed.map { ($0.service, $0.keys[index]) }
                    ?? (items[index].service, items[index].key)
                do throws(KeychainError) {
                    try keychain.store.checkName(service: service, key: key)
                } catch {
                    throw ImportFile.refusal(
                        error, at: "\(file.map(quotedPath) ?? source): entry \(index + 1), \(shownItem(service, key))")
                }
            }
            let total = imported.count
            let progress = isTerminal(STDERR_FILENO) && total > 20 && !dryRun
            var done = 0
            let report: (Int) -> Void = { stored in
                if progress { writeError("\rimporting \(done + stored)/\(total)") }
            }
            let present =
                overwrite || dryRun
                ? try existingItems(of: imported.streamed.map { [$0.service] } ?? items.map(\.service), keychain) : [:]
            var tally: [ImportAction: Int] = [:]
            // An export read a row at a time is stored a batch at a time, so that only one batch is
            // held, but for a store that writes everything it holds at each write (the vault's file).
            let batch = keychain.store.writesManyAtOnce ? Int.max : 1_000
            try imported.forEachBatch(of: batch) { secrets in
                let actions: [ImportAction]
                if overwrite || dryRun {
                    actions = secrets.map {
                        present[$0.service]?.contains($0.key) == true ? (overwrite ? .replace : .skip) : .add
                    }
                    if dryRun {
                        let lines = zip(actions, secrets).map { "\($0.rawValue) \($1.service)/\($1.key)\n" }.joined()
                        try writeOutput(Array(lines.utf8))
                    } else {
                        try keychain.storeAll(secrets, progress: report)
                    }
                } else {
                    // Whether a key is free is decided by the backend as it writes (under the vault's
                    // lock, by OpenBao's check-and-set), not by a listing made before: a key another
                    // program sets meanwhile is skipped, never overwritten.
                    actions = try keychain.addAll(secrets, progress: report).map { $0 ? .add : .skip }
                }
                for action in actions { tally[action, default: 0] += 1 }
                done += secrets.count
            }
            if progress { writeError("\n") }
            let (added, replaced, skipped) = (tally[.add] ?? 0, tally[.replace] ?? 0, tally[.skip] ?? 0)
            var summary =
                dryRun
                ? "would add \(added), replace \(replaced), skip \(skipped)"
                : "added \(added), replaced \(replaced), skipped \(skipped)"
            if skipped > 0 { summary += " (already there; --overwrite replaces them)" }
            try writeOutput(Array((summary + "\n").utf8))
        }

        /// What import does with one item: its word in `--dry-run`'s lines.
        enum ImportAction: String {
            case add, replace, skip
        }

        /// The keys each of `services` holds now, one listing per service (as keys: compared by
        /// bytes, so that "é" is not taken for "e\u{301}").
        private func existingItems(of services: [ServiceName], _ keychain: Keychain) throws
            -> [ServiceName: Swift.Set<KeychainKey>]
        {
            var existing: [ServiceName: Swift.Set<KeychainKey>] = [:]
            for service in Swift.Set(services) {
                existing[service] = Swift.Set(
                    try Keychain(service: service, store: keychain.store).items().compactMap {
                        try? KeychainKey($0.key)
                    })
            }
            return existing
        }

    }
}
