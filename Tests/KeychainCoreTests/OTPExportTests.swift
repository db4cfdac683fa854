import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Aegis's, andOTP's and FreeOTP+'s plain JSON backups, as their sources write them (Aegis's
/// docs/vault.md and VaultEntry; andOTP's Entry.toJSON; FreeOTP+'s legacy Token through Gson),
/// read into entries: every field of every token read back from the entry's text.
@Suite("Authenticator apps' backups read into entries")
struct OTPExportTests {
    static func read(_ kind: OTPExport.Kind, _ text: String, source: String = "backup.json") throws -> ManagerExport {
        try OTPExport.read(kind, ManagerInput(bytes: Array(text.utf8), source: source))
    }

    /// Each entry's fields, TOTP and notes read back from its text as `get --field` reads them.
    static func expectReadBack(_ entries: [PasswordEntry]) {
        for entry in entries {
            for field in entry.fields {
                #expect(EntryFields.value(of: field.name, in: entry.text) == field.value, "\(entry.key) \(field.name)")
            }
            #expect(EntryFields.value(of: "otp", in: entry.text) == entry.totp, "\(entry.key)")
            #expect(EntryFields.value(of: "notes", in: entry.text) == (entry.notes.isEmpty ? nil : entry.notes))
            #expect(EntryFields.value(of: "password", in: entry.text) == "")
        }
    }

    static let aegis = #"""
        {"version": 1, "header": {"slots": null, "params": null}, "db": {"version": 3,
          "entries": [
            {"type": "totp", "uuid": "01234567-89ab-cdef-0123-456789abcde1", "name": "bob@example.com", "issuer": "Google",
             "note": "Main account\r\nsecond line", "favorite": true, "icon": "/9j/4AAQ", "icon_mime": "image/jpeg",
             "icon_hash": "ab", "info": {"secret": "JBSWY3DPEHPK3PXP", "algo": "SHA1", "digits": 6, "period": 30},
             "groups": ["00000000-0000-0000-0000-0000000000a1"]},
            {"type": "totp", "uuid": "2", "name": "alice", "issuer": "AT&T", "note": "", "favorite": false,
             "icon": null, "info": {"secret": "gezdgnbvgy3tqojq", "algo": "SHA256", "digits": 8, "period": 60},
             "groups": ["00000000-0000-0000-0000-0000000000A1", "00000000-0000-0000-0000-0000000000b2"]},
            {"type": "totp", "uuid": "3", "name": "", "issuer": "=cmd|' /C calc'!A0", "info": {"secret":
             "KRUGKIDROVUWG2ZAMJZG653OEBTG66BAMJZG653O", "algo": "SHA512", "digits": 8, "period": 30}, "groups": []},
            {"type": "hotp", "uuid": "4", "name": "ops", "issuer": "VPN", "info": {"secret": "JBSWY3DPEHPK3PXP",
             "algo": "SHA1", "digits": 6, "counter": 7}},
            {"type": "steam", "uuid": "5", "name": "gaben", "issuer": "Steam", "info": {"secret": "JBSWY3DPEHPK3PXP",
             "algo": "SHA1", "digits": 5, "period": 30}},
            {"type": "yandex", "uuid": "6", "name": "ivan", "issuer": "Yandex", "info": {"secret":
             "JBSWY3DPEHPK3PXP", "algo": "SHA256", "digits": 8, "period": 30, "pin": "1234"}},
            {"type": "motp", "uuid": "7", "name": "m", "issuer": "", "info": {"secret": "AEBAGBAF", "algo": "MD5",
             "digits": 6, "period": 10, "pin": "5678"}},
            {"type": "totp", "uuid": "8", "name": "long", "issuer": "X", "info": {"secret": "JBSWY3DPEHPK3PXP",
             "algo": "SHA1", "digits": 10, "period": 30}},
            {"type": "totp", "uuid": "9", "name": "", "issuer": "", "info": {"secret": "JBSWY3DPEHPK3PXP",
             "algo": "HmacMD5", "digits": 7, "period": 45}, "group": "Legacy"}
          ],
          "groups": [{"uuid": "00000000-0000-0000-0000-0000000000b2", "name": "Personal"},
                     {"uuid": "00000000-0000-0000-0000-0000000000a1", "name": "Work"}]}}
        """#

    @Test func aegisKeepsEveryTokenAndField() throws {
        let export = try Self.read(.aegis, Self.aegis)
        let entries = export.entries
        #expect(
            entries.map(\.key) == [
                "Work/Google (bob@example.com)", "Personal/AT&T (alice)", "=cmd|' /C calc'!A0", "VPN (ops)",
                "Steam (gaben)", "Yandex (ivan)", "m", "X (long)", "Legacy/token 9",
            ])
        #expect(
            entries[0].text
                == "\nusername: bob@example.com\nissuer: Google\nfavorite: true\notpauth://totp/Google:bob%40example.com"
                + "?secret=JBSWY3DPEHPK3PXP&issuer=Google&algorithm=SHA1&digits=6&period=30\n\nMain account\r\nsecond line"
        )
        #expect(
            entries[1].fields == [
                .init("username", "alice"), .init("issuer", "AT&T"), .init("group", "Work"),
            ])
        #expect(
            entries[1].totp
                == "otpauth://totp/AT%26T:alice?secret=GEZDGNBVGY3TQOJQ&issuer=AT%26T&algorithm=SHA256&digits=8&period=60"
        )
        #expect(entries[2].fields == [.init("issuer", "=cmd|' /C calc'!A0")], "a formula is text, kept exactly")
        #expect(
            entries[2].totp
                == "otpauth://totp/%3Dcmd%7C%27%20%2FC%20calc%27%21A0?secret=KRUGKIDROVUWG2ZAMJZG653OEBTG66BAMJZG653O"
                + "&issuer=%3Dcmd%7C%27%20%2FC%20calc%27%21A0&algorithm=SHA512&digits=8&period=30")
        #expect(
            entries[3].totp
                == "otpauth://hotp/VPN:ops?secret=JBSWY3DPEHPK3PXP&issuer=VPN&counter=7&algorithm=SHA1&digits=6")
        #expect(
            entries[4].totp
                == "otpauth://steam/Steam:gaben?secret=JBSWY3DPEHPK3PXP&issuer=Steam&period=30&algorithm=SHA1&digits=5")
        #expect(
            entries[5].totp
                == "otpauth://yaotp/Yandex:ivan?secret=JBSWY3DPEHPK3PXP&issuer=Yandex&period=30&pin=GEZDGNA"
                + "&algorithm=SHA256&digits=8")
        #expect(entries[5].fields.last == .init("pin", "1234"))
        #expect(entries[6].totp == "motp://m?secret=0102030405")
        #expect(entries[6].text == "\nusername: m\npin: 5678\notp: motp://m?secret=0102030405")
        #expect(entries[7].totp?.hasSuffix("&algorithm=SHA1&digits=10&period=30") == true)
        #expect(
            entries[8].text == "\notpauth://totp/?secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=7&period=45",
            "MD5 outside mOTP is read as SHA1, as Aegis reads it")
        Self.expectReadBack(entries)
        #expect(
            export.notImported == [
                "backup.json: the icon of 1 token is not imported",
                "backup.json: token 4 'VPN (ops)' is a HOTP token: kept as its otpauth URI under otp; otp computes "
                    + "TOTP codes only",
                "backup.json: token 5 'Steam (gaben)' is a Steam token: kept as its otpauth URI under otp; otp "
                    + "computes TOTP codes only",
                "backup.json: token 6 'Yandex (ivan)' is a Yandex token: kept as its otpauth URI under otp; otp "
                    + "computes TOTP codes only",
                "backup.json: token 7 'm' is a mOTP token: kept as the app's own URI under otp; otp computes TOTP "
                    + "codes only",
                "backup.json: token 8 'X (long)' has codes of 10 digits: kept as its otpauth URI under otp; otp "
                    + "computes codes of 6 to 8 digits only",
            ])
    }

    static let andOTP = #"""
        [{"secret":"JBSWY3DPEHPK3PXP","issuer":"GitHub","label":"octocat","digits":6,"type":"TOTP","algorithm":"SHA1",
          "thumbnail":"Github","last_used":1700000000000,"used_frequency":3,"period":30,"tags":["work","code"]},
         {"secret":"GEZDGNBVGY3TQOJQ","issuer":"","label":"legacy - me","digits":8,"type":"TOTP","algorithm":"SHA512",
          "thumbnail":"Default","last_used":0,"used_frequency":0,"period":60,"tags":[]},
         {"secret":"JBSWY3DPEHPK3PXP","issuer":"Bank","label":"me","digits":6,"type":"HOTP","algorithm":"SHA256",
          "thumbnail":"Default","counter":42,"tags":[]},
         {"secret":"JBSWY3DPEHPK3PXP","issuer":"Steam","label":"gaben","digits":5,"type":"STEAM","algorithm":"SHA1",
          "thumbnail":"Default","tags":[]},
         {"secret":"GEZDGNBVGY3TQOLBMJRWIZLG","issuer":"Corp","label":"vpn","digits":6,"type":"MOTP",
          "algorithm":"SHA1","thumbnail":"Default","tags":["a,b"]},
         {"secret":"JBSWY3DPEHPK3PXP","label":"old"}]
        """#

    @Test func andOTPKeepsEveryTokenAndField() throws {
        let export = try Self.read(.andotp, Self.andOTP)
        let entries = export.entries
        #expect(
            entries.map(\.key) == [
                "GitHub (octocat)", "legacy - me", "Bank (me)", "Steam (gaben)", "Corp (vpn)", "old",
            ])
        #expect(
            entries[0].text
                == "\nusername: octocat\nissuer: GitHub\ntag: work\ntag (2): code\notpauth://totp/GitHub:octocat?secret="
                + "JBSWY3DPEHPK3PXP&issuer=GitHub&algorithm=SHA1&digits=6&period=30")
        #expect(
            entries[1].text
                == "\nusername: legacy - me\notpauth://totp/legacy%20-%20me?secret=GEZDGNBVGY3TQOJQ&algorithm=SHA512"
                + "&digits=8&period=60")
        #expect(
            entries[2].totp
                == "otpauth://hotp/Bank:me?secret=JBSWY3DPEHPK3PXP&issuer=Bank&counter=42&algorithm=SHA256&digits=6")
        #expect(
            entries[3].totp
                == "otpauth://steam/Steam:gaben?secret=JBSWY3DPEHPK3PXP&issuer=Steam&period=30&algorithm=SHA1&digits=5")
        #expect(entries[4].totp == "otpauth://motp/Corp:vpn?secret=123456789abcdef&issuer=Corp")
        #expect(entries[4].fields == [.init("username", "vpn"), .init("issuer", "Corp"), .init("tag", "a,b")])
        #expect(
            entries[5].text
                == "\nusername: old\notpauth://totp/old?secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30",
            "andOTP's defaults: TOTP, SHA1, 6 digits, 30 seconds")
        Self.expectReadBack(entries)
        #expect(export.notImported.first == "backup.json: the icon (thumbnail) of 1 token is not imported")
        #expect(export.notImported.count == 4, "\(export.notImported)")
        #expect(export.notImported[3].contains("token 5 'Corp (vpn)' is a mOTP token: kept as its otpauth URI"))
    }

    static let freeOTP = #"""
        {"tokenOrder":["Example:alice","bob","Steam:gaben","hot"],
         "tokens":[{"algo":"SHA256","counter":0,"digits":8,"issuerExt":"Example","issuerInt":"Example Inc",
                    "label":"alice","period":60,"secret":[72,101,108,108,111,33,-34,-83,-66,-17],"type":"TOTP",
                    "image":"content://icon"},
                   {"algo":"SHA1","counter":0,"digits":6,"issuerExt":"","label":"bob","labelAlt":"robert","period":30,
                    "secret":[1,2,3,4,5,6,7,8,9,10],"type":"TOTP","issuerAlt":"Renamed"},
                   {"algo":"SHA1","counter":0,"digits":5,"issuerExt":"Steam","label":"gaben","period":30,
                    "secret":[1,2,3],"type":"TOTP"},
                   {"algo":"SHA512","counter":9,"digits":6,"issuerExt":"","label":"hot","period":30,
                    "secret":[-1,0,127,-128],"type":"HOTP"}]}
        """#

    @Test func freeOTPKeepsEveryTokenAndField() throws {
        let export = try Self.read(.freeotp, Self.freeOTP)
        let entries = export.entries
        #expect(entries.map(\.key) == ["Example (alice)", "Renamed (robert)", "Steam (gaben)", "hot"])
        #expect(
            entries[0].text
                == "\nusername: alice\nissuer: Example\notpauth://totp/Example:alice?secret=JBSWY3DPEHPK3PXP"
                + "&issuer=Example&algorithm=SHA256&digits=8&period=60")
        #expect(entries[1].fields == [.init("username", "robert"), .init("issuer", "Renamed")])
        #expect(
            entries[2].text
                == "\nusername: gaben\nissuer: Steam\notp: otpauth://totp/Steam:gaben?secret=AEBAG&issuer=Steam"
                + "&algorithm=SHA1&digits=5&period=30&encoder=steam",
            "FreeOTP+ computes Steam's codes for the issuer Steam: no TOTP otp computes")
        #expect(entries[3].totp == "otpauth://hotp/hot?secret=74AH7AA&algorithm=SHA512&digits=6&counter=10")
        Self.expectReadBack(entries)
        #expect(
            export.notImported == [
                "backup.json: the image of 1 token is not imported",
                "backup.json: token 3 'Steam (gaben)' is a Steam token: kept as its otpauth URI under otp; otp "
                    + "computes TOTP codes only",
                "backup.json: token 4 'hot' is a HOTP token: kept as its otpauth URI under otp; otp computes TOTP "
                    + "codes only",
            ])
    }
}
