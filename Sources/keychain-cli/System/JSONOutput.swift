import FoundationEssentials

/// Writes `value` as pretty-printed JSON with sorted keys and ISO 8601 dates, then a newline.
func writeJSON(_ value: some Encodable) throws {
    try writeOutput(try JSONEncoder.sortedKeys(pretty: true).encode(value) + [UInt8(ascii: "\n")])
}
