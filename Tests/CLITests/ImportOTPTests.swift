import Foundation
import TestSupport
import Testing

/// `import --format aegis|andotp|freeotp`: backups written from the apps' documented formats,
/// each token's `otp` compared with codes python computes (hmac, RFC 6238), encrypted backups
/// opened with the password from --source-passphrase-fd and -file, and pass-import reading the
/// same files.
@Suite("import from authenticator apps", .keyringSession)
struct ImportOTPTests {
    /// Issuer, account, base32 secret, algorithm, digits, period: each kind of TOTP the apps make.
    static let tokens:
        [(issuer: String, account: String, secret: String, algorithm: String, digits: Int, period: Int)] =
            [
                ("GitHub", "octocat", "JBSWY3DPEHPK3PXP", "SHA1", 6, 30),
                ("AWS", "root@example.com", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", "SHA256", 8, 60),
                ("Bank", "me", "KRUGKIDROVUWG2ZAMJZG653OEBTG66BAMJZG653O", "SHA512", 8, 30),
                ("Mail", "me", "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43UOV3HO6DZPI", "SHA1", 7, 60),
                ("Work VPN", "", "ORSXG5DTMVRXEZLU", "SHA512", 6, 60),
                ("GitHub", "octocat", "MZXW6YTBOI", "SHA256", 6, 30),
            ]
    static let keys = [
        "Work/GitHub (octocat)", "Work/AWS (root@example.com)", "Bank (me)", "Mail (me)", "Work VPN",
        "Work/GitHub (octocat) (2)",
    ]
    static let times: [Int64] = [0, 59, 1_111_111_109, 1_234_567_890, 2_000_000_000, 20_000_000_000]

    /// The codes of `tokens` at `times`, computed by python's hmac as RFC 6238 says.
    static func pythonCodes() throws -> [[String]] {
        let script = """
            import base64, hashlib, hmac, json, sys
            tokens, times = json.loads(sys.argv[1]), json.loads(sys.argv[2])
            def code(secret, algorithm, digits, period, t):
                key = base64.b32decode(secret + "=" * (-len(secret) % 8))
                mac = hmac.new(key, (t // period).to_bytes(8, "big"), getattr(hashlib, algorithm.lower())).digest()
                offset = mac[-1] & 15
                value = int.from_bytes(mac[offset:offset + 4], "big") & 0x7FFFFFFF
                return str(value % 10 ** digits).zfill(digits)
            print(json.dumps([[code(*token, t) for t in times] for token in tokens]))
            """
        let tokens = try JSONSerialization.data(
            withJSONObject: Self.tokens.map { [$0.secret, $0.algorithm, $0.digits, $0.period] as [Any] })
        let result = try runProcess(
            "/usr/bin/env",
            [
                "python3", "-c", script, String(decoding: tokens, as: UTF8.self),
                "[" + times.map(String.init).joined(separator: ",") + "]",
            ], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONSerialization.jsonObject(with: result.stdout) as? [[String]] ?? []
    }

    /// Aegis's content (docs/vault.md, version 3): the tokens, a HOTP, and two groups.
    static var aegisContent: String {
        let work = "00000000-0000-0000-0000-0000000000a1"
        let groups = [work, work, "", "", "", work]
        var entries = tokens.enumerated().map { index, token in
            #"{"type": "totp", "uuid": "u\#(index)", "name": "\#(token.account)", "issuer": "\#(token.issuer)", "#
                + #""note": "note \#(index)", "favorite": false, "icon": null, "info": {"secret": "\#(token.secret)", "#
                + #""algo": "\#(token.algorithm)", "digits": \#(token.digits), "period": \#(token.period)}, "#
                + #""groups": [\#(groups[index].isEmpty ? "" : "\"\(groups[index])\"")]}"#
        }
        entries[1] = entries[1].replacingOccurrences(
            of: #""groups": ["#, with: #""groups": ["00000000-0000-0000-0000-0000000000b2", "#)
        entries.append(
            #"{"type": "hotp", "uuid": "h", "name": "ops", "issuer": "VPN", "info": {"secret": "JBSWY3DPEHPK3PXP", "#
                + #""algo": "SHA1", "digits": 6, "counter": 3}}"#)
        return #"{"version": 3, "entries": [\#(entries.joined(separator: ",\n"))], "groups": ["#
            + #"{"uuid": "00000000-0000-0000-0000-0000000000a1", "name": "Work"}, {"uuid": "00000000-0000-0000-0000-0000000000b2", "name": "Cloud"}]}"#
    }

    static var aegisPlain: String {
        #"{"version": 1, "header": {"slots": null, "params": null}, "db": \#(aegisContent)}"#
    }

    /// Checks every token of `tokens` stored under `keys` in `service` against python's codes.
    static func expectCodes(service: String, keys: [String] = keys, tokens: [Int] = Array(0..<6)) throws {
        let codes = try pythonCodes()
        for index in tokens {
            for (column, time) in times.enumerated() {
                let shown = try cli(["-s", service, "otp", keys[index], "--at", String(time)])
                #expect(shown.stdoutText == codes[index][column] + "\n", "\(keys[index]) at \(time): \(shown.stderr)")
            }
        }
    }

    /// A plain Aegis vault on every backend: each token's code as python computes it, every field
    /// read back, the HOTP kept under otp and said on stderr, the second `GitHub (octocat)` numbered.
    @Test(arguments: CLIBackend.allCases)
    func anAegisVaultImportsOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("aegis")
        defer { scratch.remove() }
        let file = scratch.path("aegis-export-plain.json")
        try Data(Self.aegisPlain.utf8).write(to: URL(fileURLWithPath: file))
        try backend.run {
            let service = "aegis-\(backend.rawValue)"
            let imported = try cli(["-s", service, "import", "--format", "aegis", file])
            #expect(imported.stdoutText == "added 7, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(
                imported.stderr.contains(
                    "token 7 'VPN (ops)' is a HOTP token: kept as its otpauth URI under otp; otp computes TOTP codes only"
                ))
            #expect(
                imported.stderr.contains("the later is stored as 'Work/GitHub (octocat) (2)'"), "\(imported.stderr)")
            try Self.expectCodes(service: service)
            #expect(
                try cli(["-s", service, "get", "Work/AWS (root@example.com)"]).stdoutText
                    == "\nusername: root@example.com\nissuer: AWS\ngroup: Cloud\notpauth://totp/AWS:root%40example.com"
                    + "?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=AWS&algorithm=SHA256&digits=8&period=60\n\nnote 1"
            )
            for (name, value) in [("username", "me"), ("issuer", "Mail"), ("notes", "note 3"), ("password", "")] {
                #expect(try cli(["-s", service, "get", "Mail (me)", "--field", name]).stdoutText == value, "\(name)")
            }
            #expect(try cli(["-s", service, "get", "Work VPN", "--field", "username"]).status == 1, "no account")
            #expect(
                try cli(["-s", service, "get", "VPN (ops)", "--field", "otp"]).stdoutText
                    == "otpauth://hotp/VPN:ops?secret=JBSWY3DPEHPK3PXP&issuer=VPN&counter=3&algorithm=SHA1&digits=6")
            let hotp = try cli(["-s", service, "otp", "VPN (ops)"])
            #expect(hotp.status == 65 && hotp.stderr.contains("HOTP"), "\(hotp.stderr)")
            _ = try cli(["-s", service, "reset", "--yes"])
        }
    }

    /// FreeOTP+'s export (the secret as signed bytes) and andOTP's plain backup, on the vault and
    /// on the tree vault: the same codes.
    @Test(arguments: [CLIBackend.vault, .treeVault])
    func freeOTPAndAndOTPExportsImport(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("otp-apps")
        defer { scratch.remove() }
        let freeOTP = scratch.path("freeotp-backup.json")
        let andOTP = scratch.path("otp_accounts.json")
        try Data(Self.freeOTPExport.utf8).write(to: URL(fileURLWithPath: freeOTP))
        try Data(Self.andOTPExport.utf8).write(to: URL(fileURLWithPath: andOTP))
        let keys = ["GitHub (octocat)", "AWS (root@example.com)", "Bank (me)", "Mail (me)", "Work VPN"]
        try backend.run {
            let imported = try cli(["-s", "free", "import", "--format", "freeotp", freeOTP])
            #expect(imported.stdoutText == "added 5, replaced 0, skipped 0\n", "\(imported.stderr)")
            try Self.expectCodes(service: "free", keys: keys, tokens: Array(0..<5))
            let fromAndOTP = try cli(["-s", "and", "import", "--format", "andotp", andOTP])
            #expect(fromAndOTP.stdoutText == "added 5, replaced 0, skipped 0\n", "\(fromAndOTP.stderr)")
            try Self.expectCodes(service: "and", keys: keys, tokens: Array(0..<5))
            #expect(
                [
                    try cli(["-s", "and", "get", "Bank (me)", "--field", "tag"]).stdoutText,
                    try cli(["-s", "and", "get", "Bank (me)", "--field", "tag (2)"]).stdoutText,
                ] == ["money", "home"])
            _ = try cli(["-s", "free", "reset", "--yes"])
            _ = try cli(["-s", "and", "reset", "--yes"])
        }
    }

    /// FreeOTP+'s JSON: Gson's fields, the secret as Java's signed bytes.
    static var freeOTPExport: String {
        let tokens = Self.tokens.prefix(5).map { token in
            let bytes = base32Decode(token.secret).map { String(Int8(bitPattern: $0)) }.joined(separator: ",")
            return
                #"{"algo":"\#(token.algorithm)","counter":0,"digits":\#(token.digits),"issuerExt":"\#(token.issuer)","#
                + #""label":"\#(token.account)","period":\#(token.period),"secret":[\#(bytes)],"type":"TOTP"}"#
        }
        return #"{"tokenOrder":[],"tokens":[\#(tokens.joined(separator: ","))]}"#
    }

    /// andOTP's plain backup (Entry.toJSON).
    static var andOTPExport: String {
        let tokens = Self.tokens.prefix(5).map { token in
            #"{"secret":"\#(token.secret)","issuer":"\#(token.issuer)","label":"\#(token.account)","#
                + #""digits":\#(token.digits),"type":"TOTP","algorithm":"\#(token.algorithm)","thumbnail":"Default","#
                + #""last_used":0,"used_frequency":0,"period":\#(token.period),"#
                + #""tags":\#(token.issuer == "Bank" ? #"["money","home"]"# : "[]")}"#
        }
        return "[" + tokens.joined(separator: ",") + "]"
    }

    static func base32Decode(_ text: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var (bits, count, output) = (0, 0, [UInt8]())
        for character in text {
            bits = bits << 5 | alphabet.firstIndex(of: character)!
            count += 5
            if count >= 8 {
                count -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> count))
                bits &= (1 << count) - 1
            }
        }
        return output
    }
}
