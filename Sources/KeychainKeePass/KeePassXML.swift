internal import CLibXML2
import FoundationEssentials
import KeychainFormats
import KeychainStore
import KeychainSystem

/// A KeePass database as `keepassxc-cli export --format xml` writes it (KeePass 2 XML, values in
/// plain text): `KeePassFile/Root/Group` holding groups and entries, each entry a list of
/// `<String><Key>…</Key><Value>…</Value></String>`, its `<Tags>`, its attachments' names
/// (`<Binary><Key>`, their bytes in `<Meta><Binaries>` when the database is KDBX 3.1) and the
/// older versions of it (`<History>`: their passwords kept as `previous password`). Read with
/// libxml2's streaming reader, which fetches no DTD and substitutes no entity: a document type
/// declaration, which keepassxc-cli never writes, is refused.
package enum KeePassXML {
    /// The entries of a database, the attachments whose bytes its XML holds (a KDBX 3.1
    /// database's), and those it does not, which are not imported (the XML of a KDBX 4 database
    /// holds none of their bytes).
    package struct Database {
        package var entries: [PasswordEntry]
        package var files: [ManagerFile] = []
        /// Each attachment not imported: the key of its entry, the attachment's name, and why.
        package var attachments: [(entry: String, name: String)]
        package var attachmentReasons: [String] = []
        /// The entries of the recycle bin, which are not imported.
        package var deletedEntries = 0
    }

    /// Every entry of `xml` outside the recycle bin, its key the path of its groups below the root
    /// group and its title; `source` names the database in errors.
    /// - Throws: ``FormatError`` saying what is wrong and where, never quoting a value.
    package static func database(of xml: [UInt8], source: String) throws -> Database {
        var parser = Parser(source: source)
        try read(xml, source: source, kind: "KeePass XML") { try parser.read($0) }
        return try parser.finished()
    }

    /// Reads `xml` node by node with libxml2's streaming reader (no network, no DTD fetched, no
    /// entity substituted), handing each node to `visit`.
    /// - Throws: ``FormatError`` for XML that is not well-formed, naming the line only (libxml2's
    ///   message may quote the document), as not `kind`.
    static func read(_ xml: [UInt8], source: String, kind: String, _ visit: (xmlTextReaderPtr) throws -> Void) throws {
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
                        let line = xmlGetLastError()?.pointee.line ?? xmlTextReaderGetParserLineNumber(reader)
                        throw FormatError(
                            "\(source) is not \(kind): it is not well-formed XML (line \(line)); nothing was stored")
                    }
                    try visit(reader)
                }
            }
        }
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
        var attachmentNames: [KeePassEntryParts.Attachment] = []
        var binary = KeePassEntryParts.Attachment()
        /// Every entry's attachments, by the key of the entry, resolved when the document ends.
        var attachments: [(entry: String, attachment: KeePassEntryParts.Attachment)] = []
        /// The open element's attributes that matter (`ID`, `Compressed`, `Ref`).
        var attributes: [String: String] = [:]
        /// Meta's binaries by their ID: base64, and whether it is gzip.
        var binaries: [String: (text: String, compressed: Bool)] = [:]
        /// The passwords of the entry's older versions, oldest first, and the one being read.
        var history: [String] = []
        var historyString: (key: String?, value: String) = (nil, "")
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
                if name == "Binary" || name == "Value" {
                    for attribute in ["ID", "Compressed", "Ref"] {
                        guard let value = xmlTextReaderGetAttribute(reader, attribute) else { continue }
                        attributes[attribute] = String(cString: value)
                        free(value)  // xmlFree is free unless a program sets another allocator
                    }
                }
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
            attributes = [:]
            if at("Root", "Group") || at("Group", "Group") {
                groups.append((uuid: "", name: "", deleted: groups.last?.deleted ?? false))
            } else if at("Group", "Entry") {
                (entry, tags, attachmentNames, history) = ([], "", [], [])
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
            if elements.contains("History") {
                // An older version of the entry: its password is kept, the rest is not.
                if elements.suffix(2).elementsEqual(["String", "Key"]) {
                    historyString.key = closing
                } else if elements.suffix(2).elementsEqual(["String", "Value"]) {
                    historyString.value = closing
                } else if elements.suffix(2).elementsEqual(["Entry", "String"]) {
                    if historyString.key == "Password" { history.append(historyString.value) }
                    historyString = (nil, "")
                }
                return
            }
            if at("Meta", "Binaries", "Binary"), let id = attributes["ID"] {
                binaries[id] = (closing, attributes["Compressed"] == "True")
            } else if at("Entry", "Binary", "Value") {
                // A reference to Meta's binaries, or (older files) the bytes themselves.
                binary.reference = attributes["Ref"]
                if binary.reference == nil { binary.inline = (closing, attributes["Compressed"] == "True") }
            } else if at("Entry", "Binary") {
                attachmentNames.append(binary)
                binary = KeePassEntryParts.Attachment()
            } else if at("Meta", "RecycleBinUUID") {
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
            } else if at("Entry", "Binary", "Key") {
                binary.name = closing
            } else if at("Group", "Entry") {
                if groups.last?.deleted == false { try finishEntry() } else { database.deletedEntries += 1 }
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
            // The TOTP: KeePassXC's `otp` (an otpauth:// URI, or KeeOTP's `key=…&step=…`; one
            // `otp` does not compute, a Steam code, kept as it is under otp), the older `TOTP Seed`
            // with its `TOTP Settings` ("30;6": period and digits), or KeePass's own `TimeOtp-*`.
            if let otp = take("otp") {
                result.totp =
                    (otp.hasPrefix("key=") ? OTPSeed.keeOTP(otp, label: title) : OTPSeed.uri(otp, label: title)) ?? otp
            } else if let index = strings.firstIndex(where: { $0.key == "TOTP Seed" }),
                let uri = OTPSeed.uri(strings[index].value, label: title),
                let settings = Self.totpSettings(strings.first { $0.key == "TOTP Settings" }?.value ?? "30;6")
            {
                result.totp = uri + settings
                strings.remove(at: index)
                _ = take("TOTP Settings")
            } else if let uri = KeePassEntryParts.timeOTP(&strings, label: title) {
                result.totp = uri
            }
            for (name, value) in strings { add(name, value) }
            for tag in tags.split(whereSeparator: { $0 == "," || $0 == ";" }) {
                add("tag", String(tag.trimming()))
            }
            for old in KeePassEntryParts.previousPasswords(history, current: result.password) {
                add("previous password", old)
            }
            let imported = result.withReadableFieldNames()
            database.entries.append(imported)
            attachments += attachmentNames.map { (imported.key, $0) }
        }

        /// `TOTP Settings` ("PERIOD;DIGITS") as the URI's parameters beyond a bare seed's; nil for
        /// settings `otp` does not compute (a Steam code's `S`).
        private static func totpSettings(_ settings: String) -> String? {
            let parts = settings.split(separator: ";", omittingEmptySubsequences: false)
            guard parts.count == 2, let period = Int(parts[0]), period > 0, let digits = Int(parts[1]),
                (6...8).contains(digits)
            else { return nil }
            return (period == 30 ? "" : "&period=\(period)") + (digits == 6 ? "" : "&digits=\(digits)")
        }

        func finished() throws -> Database {
            guard sawRoot else {
                throw FormatError("\(source) is not KeePass XML: it has no Root element; nothing was stored")
            }
            var database = database
            (database.files, database.attachments, database.attachmentReasons) = KeePassEntryParts.files(
                of: attachments, binaries: binaries)
            return database
        }
    }
}

extension KeePassXML {
    /// The entries of `xml` as ``database(of:source:)`` reads them, each attachment the export
    /// holds no bytes of named in `notImported`.
    package static func export(of xml: [UInt8], source: String) throws -> ManagerExport {
        // keepassxc-cli's decrypted XML: a converted copy (UTF-16, a byte order mark) is wiped
        // here, the caller wipes its own.
        var converted = try KeePassXXML.utf8(xml, source: source)
        defer { if !converted.sharesStorage(with: xml) { wipe(&converted) } }
        if KeePassXXML.isKeePassX(converted) { return try KeePassXXML.export(of: converted, source: source) }
        let database = try database(of: converted, source: source)
        let deleted =
            database.deletedEntries == 0
            ? [] : ["the recycle bin's \(database.deletedEntries) entries are left out (deleted)"]
        return ManagerExport(
            entries: database.entries, files: database.files,
            notImported: deleted
                + zip(database.attachments, database.attachmentReasons).map { attachment, reason in
                    "the entry \(quotedValue(attachment.entry, expected: "an entry name")) has the attachment "
                        + "\(quotedValue(attachment.name, expected: "a file name")), which is not imported: \(reason) "
                        + "(save it with keepassxc-cli attachment-export, then store it with keychain-cli set --from-file)"
                })
    }
}
