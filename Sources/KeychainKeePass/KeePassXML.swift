internal import CLibXML2
import FoundationEssentials
import KeychainFormats
import KeychainSystem

/// A KeePass database as `keepassxc-cli export --format xml` writes it (KeePass 2 XML, values in
/// plain text): `KeePassFile/Root/Group` holding groups and entries, each entry a list of
/// `<String><Key>…</Key><Value>…</Value></String>`, its `<Tags>`, its attachments' names
/// (`<Binary><Key>`) and the older versions of it (`<History>`, not imported). Read with
/// libxml2's streaming reader, which fetches no DTD and substitutes no entity: a document type
/// declaration, which keepassxc-cli never writes, is refused.
package enum KeePassXML {
    /// The entries of a database, and the attachments they have, which are not imported (the XML of
    /// a KDBX 4 database holds none of their bytes).
    package struct Database {
        package var entries: [PasswordEntry]
        /// Each attachment: the key of its entry and the attachment's name.
        package var attachments: [(entry: String, name: String)]
    }

    /// Every entry of `xml` outside the recycle bin, its key the path of its groups below the root
    /// group and its title; `source` names the database in errors.
    /// - Throws: ``FormatError`` saying what is wrong and where, never quoting a value.
    package static func database(of xml: [UInt8], source: String) throws -> Database {
        var parser = Parser(source: source)
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        try xml.withUnsafeBufferPointer { bytes in
            try bytes.withMemoryRebound(to: CChar.self) { text in
                guard let reader = xmlReaderForMemory(text.baseAddress, Int32(text.count), nil, "UTF-8", options)
                else {
                    throw FormatError("\(source) could not be read as XML (out of memory?); nothing was stored")
                }
                defer { xmlFreeTextReader(reader) }
                while true {
                    let status = xmlTextReaderRead(reader)
                    if status == 0 { break }
                    guard status == 1 else {
                        // libxml2's message may quote the document: only the line is shown.
                        let line = xmlGetLastError()?.pointee.line ?? xmlTextReaderGetParserLineNumber(reader)
                        throw FormatError(
                            "\(source) is not KeePass XML: it is not well-formed XML (line \(line)); nothing was stored"
                        )
                    }
                    try parser.read(reader)
                }
            }
        }
        return try parser.finished()
    }

    /// The reader's state: the open elements, the groups around the node, the entry being read.
    private struct Parser {
        let source: String
        var elements: [String] = []
        var text = ""
        var recycleBin: String?
        var groups: [(uuid: String, name: String, deleted: Bool)] = []
        var entry: [(key: String, value: String)] = []
        var tags = ""
        var attachmentNames: [String] = []
        var key: String?
        var value = ""
        var sawRoot = false
        var database = Database(entries: [], attachments: [])

        init(source: String) { self.source = source }

        mutating func read(_ reader: xmlTextReaderPtr) throws {
            switch xmlTextReaderNodeType(reader) {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                let name = String(cString: xmlTextReaderConstLocalName(reader))
                if name == "Value" { try KeePassXML.refuseProtected(reader, source: source) }
                try start(name)
                if xmlTextReaderIsEmptyElement(reader) == 1 { try end() }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                try end()
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue),
                Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                if let value = xmlTextReaderConstValue(reader) { text += String(cString: value) }
            case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue), Int32(XML_READER_TYPE_ENTITY_REFERENCE.rawValue):
                throw FormatError(
                    "\(source) is not KeePass XML as keepassxc-cli exports it: it declares a document type; "
                        + "nothing was stored")
            default:
                break
            }
        }

        /// Whether the open elements end with `path` (the innermost last), outside any `<History>`.
        private func at(_ path: String...) -> Bool {
            elements.count >= path.count && elements.suffix(path.count).elementsEqual(path)
                && !elements.contains("History")
        }

        private mutating func start(_ name: String) throws {
            if elements.isEmpty && name != "KeePassFile" {
                throw FormatError(
                    "\(source) is not KeePass XML (its root element is \(quotedValue(name, expected: "an element name")), "
                        + "not KeePassFile); nothing was stored")
            }
            elements.append(name)
            text = ""
            if at("Root", "Group") || at("Group", "Group") {
                groups.append((uuid: "", name: "", deleted: groups.last?.deleted ?? false))
            } else if at("Group", "Entry") {
                (entry, tags, attachmentNames) = ([], "", [])
            } else if at("Entry", "String") {
                (key, value) = (nil, "")
            } else if at("KeePassFile", "Root") {
                sawRoot = true
            }
        }

        private mutating func end() throws {
            let closing = text
            text = ""
            defer { elements.removeLast() }
            if at("Meta", "RecycleBinUUID") {
                recycleBin = closing
            } else if at("Group", "UUID"), !groups.isEmpty {
                groups[groups.count - 1].uuid = closing
                if !closing.isEmpty && closing == recycleBin { groups[groups.count - 1].deleted = true }
            } else if at("Group", "Name"), !groups.isEmpty {
                groups[groups.count - 1].name = closing
            } else if at("String", "Key") {
                key = closing
            } else if at("String", "Value") {
                value = closing
            } else if at("Entry", "String") {
                guard let key else {
                    throw FormatError("\(source): an entry \(place) has a String without a Key; nothing was stored")
                }
                entry.append((key, value))
            } else if at("Entry", "Tags") {
                tags = closing
            } else if at("Binary", "Key") {
                attachmentNames.append(closing)
            } else if at("Group", "Entry") {
                if groups.last?.deleted == false { try finishEntry() }
            } else if at("Root", "Group") || at("Group", "Group") {
                // Exactly the groups start(_:) pushed: a Group under another element (a damaged
                // file's <Grgup><Group>) was never pushed, and is not popped.
                groups.removeLast()
            }
        }

        /// Where the reader is, for errors: the group path.
        private var place: String {
            let path = groups.dropFirst().map(\.name).joined(separator: "/")
            return path.isEmpty ? "in the root group" : "in the group \(quotedValue(path, expected: "a group path"))"
        }

        private mutating func finishEntry() throws {
            var strings = entry
            func take(_ name: String) -> String? {
                guard let index = strings.firstIndex(where: { $0.key == name }) else { return nil }
                return strings.remove(at: index).value
            }
            let title = take("Title").flatMap { $0.isEmpty ? nil : $0 } ?? "(no title)"
            var result = PasswordEntry(
                path: groups.dropFirst().map(\.name) + [title], password: take("Password") ?? "",
                notes: take("Notes") ?? "")
            func add(_ name: String, _ value: String?) {
                if let value, !value.isEmpty { result.fields.append(.init(name, value)) }
            }
            add("username", take("UserName"))
            add("url", take("URL"))
            // KeePass2Android's and KeePassXC's further URLs.
            while let index = strings.firstIndex(where: { $0.key.hasPrefix("KP2A_URL") }) {
                add("url", strings.remove(at: index).value)
            }
            // The TOTP: KeePassXC's `otp` (an otpauth:// URI, or KeeOTP's `key=…&step=…`), or the
            // older `TOTP Seed` with its `TOTP Settings` ("30;6" means what a bare seed does);
            // anything else (a Steam code) stays a field.
            if let index = strings.firstIndex(where: { $0.key == "otp" }),
                let uri = strings[index].value.hasPrefix("key=")
                    ? OTPSeed.keeOTP(strings[index].value, label: title)
                    : OTPSeed.uri(strings[index].value, label: title)
            {
                result.totp = uri
                strings.remove(at: index)
            } else if let index = strings.firstIndex(where: { $0.key == "TOTP Seed" }),
                strings.first(where: { $0.key == "TOTP Settings" }).map({ $0.value == "30;6" }) ?? true,
                let uri = OTPSeed.uri(strings[index].value, label: title)
            {
                result.totp = uri
                strings.remove(at: index)
                _ = take("TOTP Settings")
            }
            for (name, value) in strings { add(name, value) }
            for tag in tags.split(whereSeparator: { $0 == "," || $0 == ";" }) {
                add("tag", String(tag.trimming()))
            }
            let imported = result.withReadableFieldNames()
            database.entries.append(imported)
            for name in attachmentNames { database.attachments.append((imported.key, name)) }
        }

        func finished() throws -> Database {
            guard sawRoot else {
                throw FormatError("\(source) is not KeePass XML: it has no Root element; nothing was stored")
            }
            return database
        }
    }
}

extension KeePassXML {
    /// The entries of `xml` as ``database(of:source:)`` reads them, each attachment the export
    /// holds no bytes of named in `notImported`.
    package static func export(of xml: [UInt8], source: String) throws -> ManagerExport {
        let xml = try KeePassXXML.utf8(xml, source: source)
        if KeePassXXML.isKeePassX(xml) { return try KeePassXXML.export(of: xml, source: source) }
        let database = try database(of: xml, source: source)
        return ManagerExport(
            entries: database.entries,
            notImported: database.attachments.map {
                "the entry \(quotedValue($0.entry, expected: "an entry name")) has the attachment "
                    + "\(quotedValue($0.name, expected: "a file name")), which is not imported "
                    + "(save it with keepassxc-cli attachment-export, then store it with keychain-cli set --from-file)"
            })
    }
}
