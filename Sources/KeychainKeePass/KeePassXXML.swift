internal import CLibXML2
import FoundationEssentials
import KeychainFormats
import KeychainSystem

/// KeePassX 0.4's XML export (File > Export to > KeePassX XML File): `<!DOCTYPE KEEPASSX_DATABASE>`,
/// then `<database>` of nested `<group>`s (`<title>`, `<icon>`), each `<entry>` with `<title>`,
/// `<username>`, `<password>`, `<url>`, `<comment>` (its line breaks as `<br/>`), `<icon>`, its
/// times (`<creation>`, `<lastaccess>`, `<lastmod>`, `<expire>`) and one attachment, `<bin>` (its
/// bytes in base64) named by `<bindesc>`. The top group `Backup` holds KeePassX's copies of
/// entries before a change: left out, and said. Read with libxml2's streaming reader, which fetches
/// no DTD and substitutes no entity; the one document type allowed is KeePassX's bare
/// `<!DOCTYPE KEEPASSX_DATABASE>`, without an internal subset or an external identifier.
package enum KeePassXXML {
    /// Whether `xml` starts as KeePassX's export does (after an XML declaration): its document
    /// type, or `<database>`.
    package static func isKeePassX(_ xml: [UInt8]) -> Bool {
        var rest = xml.starts(with: [0xEF, 0xBB, 0xBF]) ? xml.dropFirst(3) : xml[...]
        func skipSpace() { rest = rest.drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) } }
        skipSpace()
        if rest.starts(with: "<?xml".utf8), let end = rest.firstRange(of: "?>".utf8) {
            rest = rest[end.upperBound...]
            skipSpace()
        }
        return rest.starts(with: "<!DOCTYPE KEEPASSX_DATABASE".utf8) || rest.starts(with: "<database".utf8)
    }

    /// Whether the only document type declaration of `xml` is KeePassX's, exactly: the name and
    /// nothing after it but white space.
    static func hasOnlyKeePassXDoctype(_ xml: [UInt8]) -> Bool {
        let declarations = xml.ranges(of: "<!DOCTYPE".utf8)
        guard declarations.count == 1, let declaration = declarations.first else { return false }
        var rest = xml[declaration.upperBound...]
        guard rest.starts(with: " KEEPASSX_DATABASE".utf8) else { return false }
        rest = rest.dropFirst(18).drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return rest.first == UInt8(ascii: ">")
    }

    /// Every entry of `xml` outside the group Backup, its key the path of its groups and its
    /// title; each attachment stored beside its entry.
    /// - Throws: ``FormatError`` saying what is wrong and where, never quoting a value.
    package static func export(of xml: [UInt8], source: String) throws -> ManagerExport {
        var parser = Parser(source: source, doctypeAllowed: hasOnlyKeePassXDoctype(xml))
        try KeePassXML.read(xml, source: source, kind: "KeePassX XML") { try parser.read($0) }
        guard parser.sawRoot else {
            throw FormatError("\(source) is not KeePassX XML: it has no database element; nothing was stored")
        }
        if parser.backups > 0 {
            parser.export.notImported.append(
                "the group Backup (KeePassX's copies of entries before a change, \(parser.backups) of them) is left out"
            )
        }
        return parser.export
    }

    private struct Parser {
        let source: String
        let doctypeAllowed: Bool
        var elements: [String] = []
        var text = ""
        var groups: [(title: String, backup: Bool)] = []
        var entry: [String: String] = [:]
        var sawRoot = false
        var backups = 0
        var export = ManagerExport()

        init(source: String, doctypeAllowed: Bool) {
            self.source = source
            self.doctypeAllowed = doctypeAllowed
        }

        mutating func read(_ reader: xmlTextReaderPtr) throws {
            switch xmlTextReaderNodeType(reader) {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                let name = String(cString: xmlTextReaderConstLocalName(reader))
                try start(name)
                if xmlTextReaderIsEmptyElement(reader) == 1 { try end() }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                try end()
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue),
                Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                if let value = xmlTextReaderConstValue(reader) { text += String(cString: value) }
            case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue)
            where doctypeAllowed && xmlTextReaderConstName(reader).map({ String(cString: $0) }) == "KEEPASSX_DATABASE":
                break
            case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue), Int32(XML_READER_TYPE_ENTITY_REFERENCE.rawValue):
                throw FormatError(
                    "\(source) is not KeePassX XML as KeePassX exports it: it declares a document type other than "
                        + "<!DOCTYPE KEEPASSX_DATABASE>, or an entity; nothing was stored")
            default:
                break
            }
        }

        private mutating func start(_ name: String) throws {
            if elements.isEmpty && name != "database" {
                throw FormatError(
                    "\(source) is not KeePassX XML (its root element is \(quotedValue(name, expected: "an element name")), "
                        + "not database); nothing was stored")
            }
            elements.append(name)
            if name == "br" {
                text += "\n"  // A line break of a comment (or any field): the element is empty.
                return
            }
            switch name {
            case "database": sawRoot = true
            case "group" where elements.dropLast().last == "database" || elements.dropLast().last == "group":
                groups.append((title: "", backup: groups.last?.backup ?? false))
            case "entry" where elements.dropLast().last == "group": entry = [:]
            default: break
            }
            text = ""
        }

        private mutating func end() throws {
            guard let name = elements.popLast(), name != "br" else { return }
            let parent = elements.last
            switch (parent, name) {
            // Only a group start(_:) pushed (one under the database or a group) has its title set.
            case ("group", "title") where ["database", "group"].contains(elements.dropLast().last) && !groups.isEmpty:
                groups[groups.count - 1].title = text
                if groups.count == 1 && text == "Backup" { groups[0].backup = true }
            case ("entry", _):
                entry[name] = (entry[name] ?? "") + text
            case (_, "entry") where parent == "group":
                if groups.last?.backup == true { backups += 1 } else { try finishEntry() }
            case (_, "group") where parent == "database" || parent == "group":
                groups.removeLast()
            default: break
            }
            text = ""
        }

        private mutating func finishEntry() throws {
            let title = entry["title"].flatMap { $0.isEmpty ? nil : $0 } ?? "(no title)"
            var result = PasswordEntry(
                path: groups.map(\.title) + [title], password: entry["password"] ?? "", notes: entry["comment"] ?? "")
            func add(_ name: String, _ value: String?) {
                if let value, !value.isEmpty { result.fields.append(.init(name, value)) }
            }
            add("username", entry["username"])
            add("url", entry["url"])
            if let expiry = entry["expire"], expiry != "Never" { add("expires", expiry) }
            let known: Set = [
                "title", "username", "password", "url", "comment", "icon", "creation", "lastaccess", "lastmod",
                "expire",
                "bin", "bindesc",
            ]
            for (name, value) in entry.sorted(by: { $0.key < $1.key }) where !known.contains(name) { add(name, value) }
            let imported = result.withReadableFieldNames()
            export.entries.append(imported)
            let data = (entry["bin"] ?? "").filter { !$0.isWhitespace }
            guard !data.isEmpty else { return }
            let given = entry["bindesc"] ?? ""
            let name = given.isEmpty || given.contains("/") ? "attachment" : given
            guard let bytes = Data(base64Encoded: data) else {
                throw FormatError(
                    "\(source): the attachment of the entry \(quotedValue(imported.key, expected: "an entry name")) "
                        + "is not valid base64; nothing was stored. Export again from KeePassX")
            }
            export.files.append(ManagerFile(entry: imported.key, name: name, bytes: Array(bytes)))
        }
    }
}

extension KeePassXXML {
    /// `xml` as UTF-8, the encoding the reader is given: UTF-16 with its byte order mark
    /// transcoded, UTF-8 as it is (`xml` itself, not a copy, when it has no byte order mark).
    /// - Throws: ``FormatError`` for other bytes (Latin-1…), saying how to convert them.
    package static func utf8(_ xml: [UInt8], source: String) throws -> [UInt8] {
        try ExportText.validUTF8(xml, source: source)
    }
}

extension KeePassXML {
    /// Refuses a `<Value Protected="True">`: the XML inside a .kdbx, whose protected values are
    /// encrypted with the database's inner stream. KeePass 2's own export (File > Export >
    /// KeePass XML (2.x)) writes them in plain text, marked `ProtectInMemory="True"`.
    static func refuseProtected(_ reader: xmlTextReaderPtr, source: String) throws {
        guard xmlTextReaderMoveToAttribute(reader, "Protected") == 1 else { return }
        defer { xmlTextReaderMoveToElement(reader) }
        guard let value = xmlTextReaderConstValue(reader), String(cString: value).lowercased() == "true" else { return }
        throw FormatError(
            "\(source) holds encrypted values (Protected=\"True\"): it is the XML inside a .kdbx, not an export; "
                + "nothing was stored. Export the database as XML (keepassxc-cli export, or KeePass 2's File > Export > "
                + "KeePass XML (2.x)), or give the .kdbx itself")
    }
}
