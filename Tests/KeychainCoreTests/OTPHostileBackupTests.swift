import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Authenticator backups that are damaged, in another encoding, huge or hostile: read exactly,
/// or refused with a message that says where and what to do, never quoting a secret.
@Suite("Authenticator apps' backups: hostile and damaged files")
struct OTPHostileBackupTests {
    static func read(_ kind: OTPExport.Kind, _ bytes: [UInt8]) throws -> ManagerExport {
        try OTPExport.read(
            kind,
            ManagerInput(bytes: bytes, source: "'b.json'") {
                Issue.record("a plain backup asked for a password")
                return []
            })
    }

    static func refusal(_ kind: OTPExport.Kind, _ text: String) -> String {
        refusal(kind, Array(text.utf8))
    }

    static func refusal(_ kind: OTPExport.Kind, _ bytes: [UInt8]) -> String {
        do {
            let export = try read(kind, bytes)
            Issue.record("read \(export.entries.count) entries")
            return ""
        } catch let error as FormatError {
            #expect(!error.description.contains("\n"), "one line")
            return error.description
        } catch {
            Issue.record("\(error)")
            return ""
        }
    }

    /// UTF-16 with a byte order mark (either order), UTF-8 with one, and CRLF lines read as
    /// UTF-8 does; Latin-1 is refused with how to convert it.
    @Test func encodings() throws {
        let expected = try Self.read(.freeotp, Array(OTPExportTests.freeOTP.utf8)).entries
        let text = OTPExportTests.freeOTP
        let little: [UInt8] =
            [0xFF, 0xFE] + text.utf16.flatMap { unit -> [UInt8] in [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        let big: [UInt8] =
            [0xFE, 0xFF] + text.utf16.flatMap { unit -> [UInt8] in [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        #expect(try Self.read(.freeotp, little).entries == expected)
        #expect(try Self.read(.freeotp, big).entries == expected)
        #expect(try Self.read(.freeotp, [0xEF, 0xBB, 0xBF] + Array(text.utf8)).entries == expected)
        let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try Self.read(.freeotp, Array(crlf.utf8)).entries == expected)
        let andOTP: [UInt8] =
            [0xFE, 0xFF]
            + OTPExportTests.andOTP.utf16.flatMap { unit -> [UInt8] in [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        #expect(try Self.read(.andotp, andOTP).entries == Self.read(.andotp, Array(OTPExportTests.andOTP.utf8)).entries)
        let latin1 = Array(#"[{"secret":"JBSWY3DPEHPK3PXP","label":"caf"#.utf8) + [0xE9] + Array(#""}]"#.utf8)
        for kind in OTPExport.Kind.allCases {
            #expect(
                Self.refusal(kind, latin1).contains(
                    "not UTF-8 text; nothing was stored. If it is Latin-1, convert it (iconv"))
            #expect(Self.refusal(kind, latin1).contains("iconv -f latin1 -t utf-8"))
        }
        #expect(Self.refusal(.aegis, [0xFF, 0xFE, 0x41]).contains("UTF-16 with an odd number of bytes"))
    }

    /// What is not JSON, or JSON the apps do not write, is refused naming the token and the field.
    @Test func malformedBackups() {
        let aegis = OTPExportTests.aegis
        #expect(Self.refusal(.aegis, String(aegis.prefix(aegis.count / 2))).contains("is not valid JSON"))
        #expect(Self.refusal(.andotp, "").contains("is empty"))
        #expect(Self.refusal(.freeotp, "{\"tokens\": [], \u{0}}").contains("is not valid JSON"))
        #expect(
            Self.refusal(.freeotp, #"{"tokens": [{"type": "TOTP", "type": "HOTP"}]}"#)
                == "'b.json', line 1: token 1 has the field 'type' twice, and tools differ on which one counts; "
                + "nothing was stored. Keep one")
        #expect(
            Self.refusal(.andotp, #"[{"secret": "JBSWY3DPEHPK3PXP", "label": "a",}]"#).contains(
                "'b.json', line 1: token 1 has a comma right before a closing bracket"))
        #expect(
            Self.refusal(.andotp, #"[{"secret": "JBSWY3DPEHPK3PXP", "label": "a", "digits": "6"}]"#)
                == "'b.json': token 1: 'digits' should be a whole number (andOTP writes one); nothing was stored")
        let badSecret = Self.refusal(.andotp, #"[{"secret": "JBSWY3DP!!PK3PXP", "label": "a"}]"#)
        #expect(badSecret.hasPrefix("'b.json': token 1: its secret is not base32"))
        #expect(!badSecret.contains("JBSWY3DP"), "a secret is never quoted")
        #expect(
            Self.refusal(.andotp, #"[{"secret": "JBSWY3DPEHPK3PXP", "label": "a", "type": "SMS"}]"#).contains(
                "token 1 is a token of the type 'SMS', which andOTP does not write"))
        #expect(Self.refusal(.andotp, #"{"tokens": []}"#).contains("not andOTP's JSON: it is not a list of tokens"))
        #expect(
            Self.refusal(.freeotp, "[]").contains("is not a JSON object, so not a FreeOTP+ export; nothing was stored"))
        #expect(
            Self.refusal(.freeotp, #"{"tokens": [{"type": "TOTP", "digits": 6, "period": 30, "secret": [1, 300]}]}"#)
                .contains("token 1: 'secret' should be a list of bytes"))
        #expect(Self.refusal(.freeotp, #"{"tokens": [{"type": "TOTP", "secret": []}]}"#).contains("has no 'digits'"))
        #expect(
            Self.refusal(.aegis, aegis.replacingOccurrences(of: #""version": 3"#, with: #""version": 4"#)).contains(
                "Aegis content of version 4, and this reads versions 1 to 3"))
        #expect(
            Self.refusal(.aegis, aegis.replacingOccurrences(of: #"{"version": 1"#, with: #"{"version": 2"#)).contains(
                "an Aegis vault of version 2"))
        #expect(
            Self.refusal(
                .aegis, aegis.replacingOccurrences(of: "0000000000b2\", \"name", with: "0000000000c3\", \"name")
            )
            .contains("token 2 is in the group 00000000-0000-0000-0000-0000000000b2, which the vault does not list"))
        #expect(
            Self.refusal(.aegis, aegis.replacingOccurrences(of: #""type": "steam""#, with: #""type": "sms""#)).contains(
                "token 5 is a token of the type 'sms', which Aegis does not write"))
        #expect(
            Self.refusal(.aegis, aegis.replacingOccurrences(of: #""period": 60"#, with: #""period": 0"#)).contains(
                "token 2's info: 'period' is 0, outside 1...2147483"))
        #expect(Self.refusal(.aegis, #"{"version": 1, "header": {}}"#).contains("has no 'db', which Aegis writes"))
        #expect(Self.refusal(.aegis, #"{"version": 1, "db": "AAAA"}"#).contains("is encrypted but has no 'header'"))
        let own = Self.refusal(.aegis, #"{"format": "keychain-cli-export", "version": 1, "items": []}"#)
        #expect(own.contains("keychain-cli's own export, not Aegis's"))
    }

    /// A field given twice is refused naming its line and its token (or key slot), in a file of
    /// many: each backup's own list of tokens, Aegis's encrypted key slots too.
    @Test func aFieldGivenTwiceIsFoundByLineAndToken() {
        let token = #"{"secret": "JBSWY3DPEHPK3PXP", "label": "L", "type": "TOTP"}"#
        let doubled = #"{"secret": "GEZDGNBVGY3TQOJQ", "secret": "JBSWY3DPEHPK3PXP", "label": "L5"}"#
        let andotp = "[\n" + Array(repeating: token + ",\n", count: 4).joined() + doubled + "\n]"
        let message = Self.refusal(.andotp, andotp)
        #expect(message.hasPrefix("'b.json', line 6: token 5 has the field 'secret' twice, and tools differ"))
        #expect(!message.contains("GEZDGNBVGY3TQOJQ") && !message.contains("JBSWY3DPEHPK3PXP"), "no secret quoted")
        let aegis = OTPExportTests.aegis.replacingOccurrences(
            of: #""algo": "SHA256","#, with: #""algo": "SHA256", "algo": "SHA1","#)
        #expect(Self.refusal(.aegis, aegis).hasPrefix("'b.json', line 8: token 2 has the field 'algo' twice"))
        let freeotp = "{\"tokens\": [{\"type\": \"TOTP\"},\n {\"type\": \"TOTP\", \"digits\": 6, \"digits\": 8}]}"
        #expect(Self.refusal(.freeotp, freeotp).hasPrefix("'b.json', line 2: token 2 has the field 'digits' twice"))
        let slots = #"{"version": 1, "header": {"slots": [{"type": 1, "type": 2}], "params": null}, "db": "AAAA"}"#
        #expect(Self.refusal(.aegis, slots).hasPrefix("'b.json', line 1: key slot 1 has the field 'type' twice"))
    }

    /// 20,000 tokens are all read; a 1 MiB note and NUL characters are read exactly. (How fast
    /// is make bench's to say: the CSV reader's tests read 100,000 rows.)
    @Test func hugeBackupsAndLargeValues() throws {
        let token = #"{"secret":"JBSWY3DPEHPK3PXP","issuer":"I","label":"L","digits":6,"type":"TOTP","period":30}"#
        let many = "[" + Array(repeating: token, count: 20_000).joined(separator: ",") + "]"
        let export = try Self.read(.andotp, Array(many.utf8))
        #expect(export.entries.count == 20_000 && export.entries.last?.key == "I (L)")
        let note = String(repeating: "n", count: 1 << 20) + "\u{0}end"
        let aegis = OTPExportTests.aegis.replacingOccurrences(
            of: #""Main account\r\nsecond line""#, with: "\"" + String(repeating: "n", count: 1 << 20) + "\\u0000end\"")
        let entry = try Self.read(.aegis, Array(aegis.utf8)).entries[0]
        #expect(entry.notes == note)
        #expect(EntryFields.value(of: "notes", in: entry.text) == note)
    }
}
