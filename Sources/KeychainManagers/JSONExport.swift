import FoundationEssentials
import KeychainFormats
import KeychainSystem

/// Password managers' JSON exports as ``PasswordEntry``s.
package enum JSONExport {
    /// Whose JSON it is.
    package enum Kind: String, CaseIterable, Sendable {
        case dashlane
        case enpass
        /// Proton Pass's `data.json` (in its zip, or alone).
        case protonpass
        /// 1Password's `.1pif` (1Password Interchange Format).
        case onePasswordInterchange = "1pif"
    }

    /// Every entry of `input`, a JSON export of `kind`.
    /// - Throws: ``FormatError`` naming the item and what is wrong, never a value.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        switch kind {
        case .dashlane: return try DashlaneJSON.read(input)
        case .enpass: return try EnpassJSON.read(input)
        case .protonpass: return try ProtonPassJSON.read(input)
        case .onePasswordInterchange: return try OnePasswordInterchange.read(input)
        }
    }

    /// The text of an export's `bytes`: UTF-8 (a byte order mark dropped), or UTF-16 with its
    /// byte order mark.
    /// - Throws: ``FormatError`` for other bytes, saying how to convert them; `what` names the
    ///   export expected (`a Dashlane JSON export`).
    static func text(of bytes: [UInt8], source: String, what: String) throws -> String {
        let text = try ExportText.text(bytes, source: source, what: what)
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw FormatError("\(source) is empty; nothing was stored. Did the export that writes it fail?")
        }
        return text
    }

    /// The JSON value `text` holds (the first of its lines numbered `firstLine`).
    /// - Throws: ``FormatError`` saying it is not valid JSON, and on which line (as every JSON
    ///   export's and backup's reader says it: ``JSONReader/document(_:source:what:firstLine:place:)``).
    static func document(_ text: Substring, source: String, what: String, firstLine: Int = 1) throws -> JSONNode {
        try JSONReader.document(text, source: source, what: what, firstLine: firstLine)
    }

    /// A value's text for an entry: a string, a number as written, `true`/`false`; a list's or an
    /// object's JSON; nil for null or nothing.
    static func text(_ value: JSONNode?) -> String? { value?.text }

    /// `name`, or with ` (2)`, ` (3)`… after it when `taken` has it (then `taken` has the result).
    static func unique(_ name: String, in taken: inout Set<String>) -> String {
        var candidate = name
        var number = 2
        while taken.contains(candidate) {
            candidate = "\(name) (\(number))"
            number += 1
        }
        taken.insert(candidate)
        return candidate
    }

    /// A title for a path: the title itself, `(no title)` when it is empty.
    static func title(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "(no title)" }
        return text
    }
}

extension PasswordEntry {
    /// Appends the field `name` with `value` when the value is not empty (a JSON export's).
    mutating func addNonEmpty(_ name: String, _ value: String?) {
        if let value, !value.isEmpty { fields.append(.init(name, value)) }
    }
}
