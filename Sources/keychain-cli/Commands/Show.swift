import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Show: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print an entry's fields (username, url, custom fields, notes, dates), not its password.",
            discussion: """
                KEY holds an entry in pass's layout (an import from a password manager, a pass \
                entry): the password on its first line, 'NAME: value' lines, an otpauth:// line, \
                and notes after an empty line. show prints each field as 'NAME: value', the \
                item's dates, then the notes; the password, the TOTP seed and the fields that \
                hold passwords (previous password) are named but not printed unless --reveal \
                (otp KEY prints the code). Exits 1 when there is no such secret, 65 when it is \
                binary.

                  keychain-cli -s web show Work/github
                  keychain-cli -s web show Work/github --json
                  keychain-cli -s web get Work/github --field username   # one field
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the entry.", completion: .keyNames)
        var key: String

        @Flag(help: "Print the password, the TOTP seed and the fields that hold passwords too.")
        var reveal = false

        @Flag(
            help: ArgumentHelp(
                "Print a JSON object: service, key, fields (name and value, in order), notes, created, "
                    + "modified, hidden (the names not printed), and with --reveal password and otp."))
        var json = false

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            guard var secret = try keychain.data(for: key) else {
                throw KeychainError.notFound(service: keychain.service.rawValue, key: key.rawValue)
            }
            defer { wipe(&secret) }
            guard let text = String(validating: secret, as: UTF8.self) else {
                throw CommandFailure.badData(
                    "the secret '\(key)' is binary, so it has no fields. get \(key) --raw > FILE writes it whole")
            }
            let item = try keychain.item(key)
            let entry = ShownEntry(text, service: keychain.service, key: key, item: item, reveal: reveal)
            try json ? writeJSON(entry) : writeOutput(Array(entry.text.utf8))
        }
    }
}

/// An entry as `show` prints it: its fields, dates and notes; the password, the TOTP seed and
/// fields that hold passwords (`previous password`, a `password` line) only when revealed.
struct ShownEntry: Encodable {
    struct Field: Encodable {
        var name: String
        var value: String
    }

    var service: String
    var key: String
    /// The fields printed, in the entry's order.
    var fields: [Field]
    var notes: String?
    var created: Date?
    var modified: Date?
    /// The names of what the entry holds and is not printed, in its order.
    var hidden: [String]
    var password: String?
    var otp: String?
    /// Every field in order, nil for a hidden one's value: the text's lines.
    private var lines: [(name: String, value: String?)]

    private enum CodingKeys: String, CodingKey {
        case service, key, fields, notes, created, modified, hidden, password, otp
    }

    init(_ text: String, service: ServiceName, key: KeychainKey, item: ItemInfo?, reveal: Bool) {
        (self.service, self.key) = (service.rawValue, key.rawValue)
        notes = EntryFields.value(of: "notes", in: text)
        (created, modified) = (item?.created, item?.modified)
        let password = EntryFields.value(of: "password", in: text) ?? ""
        let otp = EntryFields.value(of: "otp", in: text)
        if reveal { (self.password, self.otp) = (password, otp) }
        // The body's lines in order: a TOTP (an otpauth:// line however written, an `otp` field)
        // and a field holding a password are hidden; a line that is no field is printed as it is.
        var body: [(name: String, value: String?)] = []
        var all: [(name: String, value: String)] = []
        for (name, value) in EntryFields.body(of: text) {
            // A line that is no field but reads as one without its space (`otp:SEED`) is hidden too.
            let free = name == nil ? String(value.drop { $0 == " " || $0 == "\t" }).lowercased() : ""
            let isSeed =
                name.map { $0.lowercased() == "otp" || $0.lowercased().hasPrefix("otpauth") }
                ?? (free.hasPrefix("otpauth:") || free.hasPrefix("otp:"))
            if name == nil, free.hasPrefix("password:") || free.hasPrefix("previous password") {
                body.append(reveal ? ("", value) : ("password", nil))
            } else if isSeed {
                // Revealed as the entry has it: an otpauth:// line as `otp: URI`, another as it is.
                let line =
                    name.map { $0.lowercased() == "otp" ? ("otp", value) : ("", "\($0): \(value)") }
                    ?? (free.hasPrefix("otpauth:") ? ("otp", value) : ("", value))
                body.append(reveal ? (line.0, line.1) : ("otp", nil))
            } else if let name {
                all.append((name, value))
                body.append((name, reveal || !Self.holdsAPassword(name) ? value : nil))
            } else {
                body.append(("", value))
            }
        }
        lines = (password.isEmpty ? [] : [("password", reveal ? password : nil)]) + body
        fields = all.filter { reveal || !Self.holdsAPassword($0.name) }.map { Field(name: $0.name, value: $0.value) }
        hidden = lines.filter { $0.value == nil }.map(\.name)
    }

    /// Whether a field called `name` holds a password: `password` (any case, `password (2)`) and
    /// the history import keeps (`previous password`, `previous password (2)`…).
    private static func holdsAPassword(_ name: String) -> Bool {
        let name = name.lowercased()
        return ["password", "previous password"].contains { name == $0 || name.hasPrefix($0 + " (") }
    }

    /// The text `show` prints: `NAME: value` lines (a value as the layout writes it; a hidden one
    /// saying so), the dates, and the notes after an empty line.
    var text: String {
        var text = lines.map { name, value in
            // A line that is no field is printed as it is.
            name.isEmpty
                ? value ?? ""
                : EntryFields.quotedIfNeeded(name, name: true) + ": "
                    + (value.map { EntryFields.quotedIfNeeded($0) }
                        ?? "(hidden; --reveal prints it\(name == "otp" ? ", otp KEY its code" : ""))")
        }
        let stamp = Date.ISO8601FormatStyle()
        if let created { text.append("created: " + created.formatted(stamp)) }
        if let modified { text.append("modified: " + modified.formatted(stamp)) }
        if let notes { text += ["", notes] }
        return text.joined(separator: "\n") + "\n"
    }
}
