import KeychainSystem

/// One `{{ keychain://SERVICE/KEY }}` in a template (a ``KeychainReference`` in braces).
package struct TemplateReference: Sendable {
    /// Where it is in the template, in bytes.
    package var range: Range<Int>
    /// The whole reference, as written.
    package var text: String
    package var reference: KeychainReference
    /// "FILE:LINE", for messages.
    package var location: String

    package static let scheme = Array(KeychainReference.scheme.utf8)

    /// The references of the UTF-8 `template`, in order, found in one pass over its bytes (lines
    /// are counted as the scan goes, so 20,000 references cost no more than one). `{{ … }}` that do
    /// not start with keychain:// are left alone. A keychain:// reference that is not closed by
    /// `}}` on its line, or has no service or key, is a usage error naming the line.
    package static func all(in template: [UInt8], source: String) throws(FormatError) -> [TemplateReference] {
        let open = (UInt8(ascii: "{"), UInt8(ascii: "{"))
        let close = (UInt8(ascii: "}"), UInt8(ascii: "}"))
        var references: [TemplateReference] = []
        var line = 1
        var counted = 0  // bytes before this offset have been counted into `line`
        var index = 0
        while let start = find(open, in: template, from: index) {
            line += template[counted..<start].count(where: { $0 == UInt8(ascii: "\n") })
            counted = start
            let innerStart = skipSpaces(template, from: start + 2)
            index = start + 2
            guard template[innerStart...].starts(with: scheme) else { continue }
            let location = "\(source):\(line)"
            // The reference ends at the first }} on its line; a line end or another {{ first means
            // it was never closed.
            var end = innerStart
            while end < template.count - 1 && !(template[end] == close.0 && template[end + 1] == close.1) {
                if template[end] == UInt8(ascii: "\n") || (template[end] == open.0 && template[end + 1] == open.1) {
                    break
                }
                end += 1
            }
            guard end < template.count - 1, template[end] == close.0, template[end + 1] == close.1 else {
                throw FormatError(
                    "\(location): a reference {{ keychain://… is not closed by }} on its line; nothing was written. "
                        + "Write {{ keychain://SERVICE/KEY }}", isUsageError: true)
            }
            let inner = String(
                String(decoding: template[innerStart..<end], as: UTF8.self).trimming(
                    leading: false, where: isSpaceOrTab))
            index = end + 2
            let reference: KeychainReference
            do {
                reference = try KeychainReference(parsing: inner)
            } catch {
                throw FormatError(
                    "\(location): the reference \(error.description); nothing was written. "
                        + "Write {{ keychain://SERVICE/KEY }}", isUsageError: true)
            }
            references.append(
                TemplateReference(range: start..<(end + 2), text: inner, reference: reference, location: location))
        }
        return references
    }

    /// `template` with each of `references` (found in it by ``all(in:source:)``) replaced by
    /// `value(reference)`, handed to `write` in blocks of about 64 KiB as it is made, so that a
    /// result of gigabytes (a large secret referenced thousands of times) takes no more memory
    /// than one block and one value. The bytes between references are kept as they are.
    package static func render(
        _ template: [UInt8], replacing references: [TemplateReference], with value: (TemplateReference) -> String,
        into write: ([UInt8]) throws(FileError) -> Void
    ) throws(FileError) {
        let blockSize = 65_536
        var block: [UInt8] = []
        block.reserveCapacity(blockSize)
        func append(_ bytes: some Collection<UInt8>) throws(FileError) {
            if block.count + bytes.count > blockSize && !block.isEmpty {
                try write(block)
                block.removeAll(keepingCapacity: true)
            }
            if bytes.count >= blockSize {
                try write(Array(bytes))
            } else {
                block += bytes
            }
        }
        var cursor = 0
        for reference in references {
            try append(template[cursor..<reference.range.lowerBound])
            try append(value(reference).utf8)
            cursor = reference.range.upperBound
        }
        try append(template[cursor...])
        if !block.isEmpty { try write(block) }
    }

    /// The offset of the next `pair` of bytes at or after `from`.
    private static func find(_ pair: (UInt8, UInt8), in bytes: [UInt8], from: Int) -> Int? {
        var index = from
        while index < bytes.count - 1 {
            guard let next = bytes[index..<(bytes.count - 1)].firstIndex(of: pair.0) else { return nil }
            if bytes[next + 1] == pair.1 { return next }
            index = next + 1
        }
        return nil
    }

    private static func skipSpaces(_ bytes: [UInt8], from: Int) -> Int {
        var index = from
        while index < bytes.count && (bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t")) {
            index += 1
        }
        return index
    }
}
