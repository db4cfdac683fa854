import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Get: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the secret stored under KEY.",
            discussion: """
                Writes exactly the stored bytes, plus a newline only when standard output is a \
                terminal. Exits 1 when there is no such secret.

                  TOKEN=$(keychain-cli get github-token)
                  keychain-cli -s ci get deploy-key --raw > id_ed25519
                  keychain-cli get github-token --json
                  keychain-cli get github-token --clip       # cleared after 45 seconds
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the secret.", completion: .keyNames)
        var key: String

        @Flag(name: [.customShort("n"), .customLong("no-newline")], help: "Never add a trailing newline.")
        var noNewline = false

        @Flag(help: "Always add a trailing newline, even when standard output is not a terminal.")
        var newline = false

        @Flag(help: "Write the stored bytes only, even binary ones to a terminal, with no newline.")
        var raw = false

        @Flag(help: "Print a JSON object: service, key, encoding (utf8 or base64) and secret.")
        var json = false

        @Option(
            help: ArgumentHelp(
                "Print one field of an entry (an import from a password manager, or a pass entry): password "
                    + "(the first line), notes (what follows the first empty line), otp (the otpauth:// line), "
                    + "or the value of a 'NAME: value' line (username, url, ...).", valueName: "name"))
        var field: String?

        @OptionGroup var clipboard: ClipboardOptions

        func validate() throws {
            if [noNewline, newline, raw, json, clipboard.clip].filter({ $0 }).count > 1 {
                throw ValidationError("choose one of -n, --newline, --raw, --json and --clip")
            }
        }

        func run() throws {
            let output: GetRequest.Output =
                clipboard.clip
                ? .clipboard(clearAfter: clipboard.seconds)
                : json ? .json : raw ? .raw : newline ? .newline : noNewline ? .noNewline : .terminalNewline
            try GetRequest(key: key, output: output, field: field).perform(in: keychain())
        }
    }
}

/// `get`, once parsed (by the argument parser or by ``FastPath``).
struct GetRequest {
    enum Output: Equatable {
        /// A newline only when stdout is a terminal (the default).
        case terminalNewline
        case noNewline, newline, raw, json
        /// On the clipboard, cleared after that many seconds.
        case clipboard(clearAfter: Int)
    }

    var key: String
    var output: Output
    /// One field of the entry stored (``EntryFields``), not the whole secret.
    var field: String? = nil

    func perform(in keychain: @autoclosure () throws -> Keychain) throws {
        let key = try KeychainKey(key)
        let keychain = try keychain()
        guard var secret = try keychain.data(for: key) else {
            throw KeychainError.notFound(service: keychain.service.rawValue, key: key.rawValue)
        }
        defer { wipe(&secret) }
        if let field {
            guard let text = String(validating: secret, as: UTF8.self) else {
                throw CommandFailure.badData(
                    "the secret '\(key)' is not UTF-8 text, so --field cannot read its lines (an old pass entry in "
                        + "Latin-1?). Run get without --field to have it whole")
            }
            guard let value = EntryFields.value(of: field, in: text) else {
                throw CommandFailure(
                    kind: .notFound,
                    message: "the secret '\(key)' has no field \(quotedValue(field, expected: "a field name")) "
                        + "(its fields: \(fieldList(of: text))). Run get without --field to see the whole entry")
            }
            var bytes = Data(value.utf8)
            defer { wipe(&bytes) }
            return try write(bytes, key: key, service: keychain.service)
        }
        try write(secret, key: key, service: keychain.service)
    }

    /// The names --field takes for `text`, for a message: never a value.
    private func fieldList(of text: String) -> String {
        var names = ["password"] + EntryFields.names(in: text).map { quotedValue($0, expected: "a field name") }
        if EntryFields.value(of: "otp", in: text) != nil { names.append("otp") }
        if EntryFields.value(of: "notes", in: text) != nil { names.append("notes") }
        return names.joined(separator: ", ")
    }

    private func write(_ secret: Data, key: KeychainKey, service: ServiceName) throws {
        if output == .json {
            try writeJSON(SecretDocument(service: service, key: key, secret: secret))
            return
        }
        if case .clipboard(let seconds) = output {
            return try copyToClipboard(secret, clearAfter: seconds, naming: key)
        }
        let terminal = isTerminal(STDOUT_FILENO)
        if terminal && output != .raw && String(validating: secret, as: UTF8.self) == nil {
            throw CommandFailure.badData(
                "the secret '\(key)' is binary and would garble the terminal. Redirect it "
                    + "(> file), or use --json for base64, or --raw to print it anyway")
        }
        try writeOutput(secret)
        if output == .newline || (terminal && output == .terminalNewline) {
            try writeOutput([UInt8(ascii: "\n")])
        }
    }
}

/// One secret as `get --json` prints it and export files hold it: text as is, anything that is
/// not UTF-8 as base64. The same item as in a vault's document, without its dates.
typealias SecretDocument = VaultDocument.Item

extension VaultDocument.Item {
    init(service: ServiceName, key: KeychainKey, secret: Data) {
        self.init(service: service.rawValue, key: key.rawValue, secret: secret)
    }
}
