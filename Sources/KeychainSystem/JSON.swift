import FoundationEssentials

extension JSONEncoder {
    /// The JSON this project writes everywhere: keys sorted (the same value, the same bytes), `/`
    /// unescaped, dates in ISO 8601; indented when `pretty` (files and listings people read).
    package static func sortedKeys(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
