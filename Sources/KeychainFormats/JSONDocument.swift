import KeychainSystem

extension JSONReader {
    /// The JSON value `text` holds (another program's export: a password manager's, an
    /// authenticator app's), white space and a byte order mark before it allowed.
    /// - Parameters:
    ///   - what: the export expected, for a text that is not JSON (`Aegis's export`).
    ///   - firstLine: the number of the first line of `text` (a part of a file).
    ///   - place: names the entry of the export at a failure's ``Failure/path`` (`item 3`, `token
    ///     5`, as ``place(of:_:)`` does), or nil where there is none.
    /// - Throws: ``FormatError`` naming the line, and the entry where `place` names one: for a
    ///   member given twice in one object (JSON tools differ on which one counts), a comma right
    ///   before a closing bracket, or anything else that is not JSON.
    package static func document(
        _ text: Substring, source: String, what: String, firstLine: Int = 1,
        place: ([Step]) -> String? = { _ in nil }
    ) throws -> JSONNode {
        do {
            return try parse(text.first == "\u{FEFF}" ? text.dropFirst() : text, firstLine: firstLine)
        } catch let failure {
            let (at, entry) = ("\(source), line \(failure.line)", place(failure.path))
            if let name = failure.repeated {
                throw FormatError(
                    "\(at): \(entry ?? "an object") has the field "
                        + "\(quotedValue(name, expected: "a field name")) twice, and tools differ on which one "
                        + "counts; nothing was stored. Keep one")
            }
            if failure.isTrailingComma {
                throw FormatError(
                    "\(at): \(entry ?? "an object or a list") has a comma right before a closing "
                        + "bracket, which JSON does not allow; nothing was stored. Remove the comma")
            }
            throw FormatError(
                "\(source) is not valid JSON (line \(failure.line): \(failure.reason)), so not \(what); nothing was "
                    + "stored. `python3 -m json.tool FILE` shows the place")
        }
    }

    /// The elements on `path` of lists that `lists` names, as the entries they are: with
    /// `["vaults": "vault", "items": "item"]`, `[.member("vaults"), .element(0), .member("items"),
    /// .element(2), …]` is `vault 1, item 3`; the name "" stands for a list that is the document
    /// itself. Nil when the path passes no such list.
    package static func place(of path: [Step], _ lists: [String: String]) -> String? {
        var list: String? = ""
        var places: [String] = []
        for step in path {
            switch step {
            case .member(let name): list = name
            case .element(let index):
                if let kind = list.flatMap({ lists[$0] }) { places.append("\(kind) \(index + 1)") }
                list = nil  // a list in a list is named by no member
            }
        }
        return places.isEmpty ? nil : places.joined(separator: ", ")
    }
}
