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
                item's dates, then the notes; the password and the TOTP seed are named but not \
                printed unless --reveal (otp KEY prints the code). Exits 1 when there is no \
                such secret, 65 when it is binary.

                  keychain-cli -s web show Work/github
                  keychain-cli -s web show Work/github --json
                  keychain-cli -s web get Work/github --field username   # one field
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the entry.", completion: .keyNames)
        var key: String

        @Flag(help: "Print the password and the TOTP seed too.")
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
            try json ? writeJSON(entry) : writeOutput(Array(entry.lines.utf8))
        }
    }
}

/// An entry as `show` prints it: its fields, dates and notes, the password and the TOTP seed
/// only when revealed.
struct ShownEntry: Encodable {
    struct Field: Encodable {
        var name: String
        var value: String
    }

    var service: String
    var key: String
    var fields: [Field]
    var notes: String?
    var created: Date?
    var modified: Date?
    /// What the entry holds that is not printed: `password`, `otp`.
    var hidden: [String]
    var password: String?
    var otp: String?

    init(_ text: String, service: ServiceName, key: KeychainKey, item: ItemInfo?, reveal: Bool) {
        (self.service, self.key) = (service.rawValue, key.rawValue)
        let all = EntryFields.fields(in: text)
        // A TOTP that is no seed is an `otp: ` line, hidden as the otpauth:// line is.
        fields = all.filter { $0.name.lowercased() != "otp" }.map { Field(name: $0.name, value: $0.value) }
        notes = EntryFields.value(of: "notes", in: text)
        (created, modified) = (item?.created, item?.modified)
        let password = EntryFields.value(of: "password", in: text) ?? ""
        let otp = EntryFields.value(of: "otp", in: text)
        hidden = reveal ? [] : (password.isEmpty ? [] : ["password"]) + (otp == nil ? [] : ["otp"])
        if reveal { (self.password, self.otp) = (password, otp) }
    }

    /// The text `show` prints: `NAME: value` lines (a value as the layout writes it), the dates,
    /// what is hidden, and the notes after an empty line.
    var lines: String {
        var lines: [String] = []
        if let password, !password.isEmpty { lines.append("password: " + EntryFields.quoted(password)) }
        if hidden.contains("password") { lines.append("password: (hidden; --reveal prints it)") }
        lines += fields.map { EntryFields.quoted($0.name, name: true) + ": " + EntryFields.quoted($0.value) }
        if let otp { lines.append("otp: " + EntryFields.quoted(otp)) }
        if hidden.contains("otp") { lines.append("otp: (hidden; --reveal prints it, otp KEY its code)") }
        let stamp = Date.ISO8601FormatStyle()
        if let created { lines.append("created: " + created.formatted(stamp)) }
        if let modified { lines.append("modified: " + modified.formatted(stamp)) }
        if let notes { lines += ["", notes] }
        return lines.joined(separator: "\n") + "\n"
    }
}
