#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Writes `value` as pretty-printed JSON with sorted keys and ISO 8601 dates, then a newline.
func writeJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    try writeOutput(try encoder.encode(value) + [UInt8(ascii: "\n")])
}
