import Testing

@testable import KeychainAge
@testable import KeychainCore

/// BIP173's published test vectors, and age's key formats.
@Suite("Bech32 (BIP173) and age's keys")
struct Bech32Tests {
    @Test(arguments: [
        "A12UEL5L", "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "11" + String(repeating: "q", count: 82) + "c8247j",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", "?1ezyfcl",
    ])
    func validStringsDecodeAndEncodeBack(_ text: String) throws {
        let (hrp, data) = try #require(Bech32.decode(text))
        #expect(Bech32.encode(hrp: hrp, data: data) == text.lowercased())
    }

    @Test(arguments: [
        "\u{20}1nwldj5", "\u{7F}1axkwrx", "\u{80}1eym55h", "pzry9x8gf2tvdw0s3jn54khce6mua7l",
        "1pzry9x8gf2tvdw0s3jn54khce6mua7l", "x1b4n0q5v", "li1dgmt3", "de1lg7wt\u{FF}", "A1G7SGD8", "10a06t8",
        "1qzzfhee", "a12UEL5L",
    ])
    func invalidStringsAreRefused(_ text: String) {
        #expect(Bech32.decode(text) == nil)
    }

    @Test func ageKeysRoundTripAndTheRecipientFollowsFromTheIdentity() throws {
        let identity = AgeX25519.Identity()
        let parsed = try #require(AgeX25519.Identity(identity.encoded))
        #expect(parsed.recipient == identity.recipient)
        #expect(identity.encoded.hasPrefix("AGE-SECRET-KEY-1") && identity.encoded.count == 74)
        let recipient = try #require(AgeX25519.Recipient(identity.recipient.encoded))
        #expect(recipient == identity.recipient && recipient.encoded.hasPrefix("age1"))
        #expect(AgeX25519.Recipient(identity.encoded) == nil)
        #expect(AgeX25519.Identity(recipient.encoded) == nil)
    }

    @Test func aStanzaOpensForItsIdentityOnlyAndALowOrderShareIsRefused() throws {
        let identity = AgeX25519.Identity()
        let fileKey = AgeFile.randomBytes(16)
        let stanza = try identity.recipient.wrap(fileKey)
        #expect(try identity.unwrap(stanza) == fileKey)
        #expect(try AgeX25519.Identity().unwrap(stanza) == nil)
        var lowOrder = stanza
        lowOrder.arguments[1] = AgeFile.base64([UInt8](repeating: 0, count: 32))
        #expect(throws: AgeFile.Failure.self) { try identity.unwrap(lowOrder) }
    }
}
