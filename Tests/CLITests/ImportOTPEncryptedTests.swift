import Foundation
import TestSupport
import Testing

/// Encrypted Aegis vaults and andOTP backups through the real binary: the password from
/// --source-passphrase-fd or --source-passphrase-file, a wrong one denied (77), a damaged or
/// hostile file refused (65), nothing stored either way; and pass-import reading the same files.
@Suite("import encrypted authenticator backups", .keyringSession)
struct ImportOTPEncryptedTests {
    /// Encrypts `plaintext` as Aegis (scrypt with Aegis's own n=2^15, r=8, p=1 unless
    /// `options["logN"]`; `writeN`: what the file claims instead) or andOTP does (PBKDF2 with
    /// `iterations`, or `old`: the old format), into `path`.
    static func encrypt(
        _ kind: String, _ plaintext: String, password: String, to path: String, _ options: [String: Int]
    )
        throws
    {
        let script = """
            import base64, hashlib, json, os, sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            kind, password, options, path = sys.argv[1], sys.argv[2].encode(), json.loads(sys.argv[3]), sys.argv[4]
            plain = sys.stdin.buffer.read()
            def seal(key, data):
                nonce = os.urandom(12)
                sealed = AESGCM(key).encrypt(nonce, data, None)
                return nonce, sealed[:-16], sealed[-16:]
            if kind == "aegis":
                master, salt, n = os.urandom(32), os.urandom(32), 2 ** options.get("logN", 15)
                nonce, wrapped, tag = seal(hashlib.scrypt(password, salt=salt, n=n, r=8, p=1, maxmem=2**27, dklen=32),
                                           master)
                slot = {"type": 1, "uuid": "a8325752-c1be-458a-9b3e-5e0a8154d9ec", "key": wrapped.hex(),
                        "key_params": {"nonce": nonce.hex(), "tag": tag.hex()}, "n": options.get("writeN", n),
                        "r": 8, "p": 1, "salt": salt.hex(), "repaired": True, "is_backup": False}
                nonce, content, tag = seal(master, plain)
                out = json.dumps({"version": 1, "header": {"slots": [slot], "params": {"nonce": nonce.hex(),
                                  "tag": tag.hex()}}, "db": base64.b64encode(content).decode()}).encode()
            elif options.get("old"):
                nonce, content, tag = seal(hashlib.sha256(password).digest(), plain)
                out = nonce + content + tag
            else:
                iterations, salt = options["iterations"], os.urandom(12)
                nonce, content, tag = seal(hashlib.pbkdf2_hmac("sha1", password, salt, iterations, 32), plain)
                out = iterations.to_bytes(4, "big") + salt + nonce + content + tag
            open(path, "wb").write(out)
            """
        let options = String(decoding: try JSONSerialization.data(withJSONObject: options), as: UTF8.self)
        let made = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, kind, password, options, path], stdin: Data(plaintext.utf8),
            environment: ProcessInfo.processInfo.environment, timeout: 120)
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// keychain-cli with `arguments`, the password written on descriptor 3 from `passwordFile`.
    static func cliWithDescriptor(_ arguments: [String], passwordFile: String) throws -> ProcessResult {
        try runProcess(
            "/bin/sh",
            ["-c", "exec \"$0\" \"$@\" --source-passphrase-fd 3 3<\"$PASSWORD_FILE\"", keychainCLIPath]
                + arguments, environment: cliEnvironment().merging(["PASSWORD_FILE": passwordFile]) { $1 })
    }

    @Test func encryptedBackupsOpenWithThePasswordGiven() throws {
        let scratch = try ScratchDirectory("otp-encrypted")
        defer { scratch.remove() }
        let (right, wrong) = (scratch.path("right"), scratch.path("wrong"))
        try Data("pässwörd\n".utf8).write(to: URL(fileURLWithPath: right))
        try Data("password\n".utf8).write(to: URL(fileURLWithPath: wrong))
        let aegis = scratch.path("aegis-export.json")
        try Self.encrypt("aegis", ImportOTPTests.aegisContent, password: "pässwörd", to: aegis, [:])
        let andOTP = scratch.path("otp_accounts.json.aes")
        try Self.encrypt(
            "andotp", ImportOTPTests.andOTPExport, password: "pässwörd", to: andOTP, ["iterations": 150_000])
        let oldAndOTP = scratch.path("old.json.aes")
        try Self.encrypt("andotp", ImportOTPTests.andOTPExport, password: "pässwörd", to: oldAndOTP, ["old": 1])
        let andOTPKeys = ["GitHub (octocat)", "AWS (root@example.com)", "Bank (me)", "Mail (me)", "Work VPN"]
        try CLIBackend.withVault { _ in
            let fromAegis = try Self.cliWithDescriptor(
                ["-s", "aegis", "import", "--format", "aegis", aegis], passwordFile: right)
            #expect(fromAegis.stdoutText == "added 7, replaced 0, skipped 0\n", "\(fromAegis.stderr)")
            try ImportOTPTests.expectCodes(service: "aegis")
            let fromAndOTP = try cli([
                "-s", "andotp", "import", "--format", "andotp", andOTP, "--source-passphrase-file", right,
            ])
            #expect(fromAndOTP.stdoutText == "added 5, replaced 0, skipped 0\n", "\(fromAndOTP.stderr)")
            try ImportOTPTests.expectCodes(service: "andotp", keys: andOTPKeys, tokens: Array(0..<5))
            let fromOld = try Self.cliWithDescriptor(
                ["-s", "old", "import", "--format", "andotp", oldAndOTP], passwordFile: right)
            #expect(fromOld.stdoutText == "added 5, replaced 0, skipped 0\n", "\(fromOld.stderr)")
            try ImportOTPTests.expectCodes(service: "old", keys: andOTPKeys, tokens: [2])

            // A wrong password is denied (77), from a file or a descriptor; nothing is stored.
            for (file, format) in [(aegis, "aegis"), (andOTP, "andotp"), (oldAndOTP, "andotp")] {
                let denied = try cli([
                    "-s", "denied", "import", "--format", format, file, "--source-passphrase-file", wrong,
                ])
                #expect(denied.status == 77 && denied.stderr.contains("the password is wrong"), "\(denied.stderr)")
                let byDescriptor = try Self.cliWithDescriptor(
                    ["-s", "denied", "import", "--format", format, file], passwordFile: wrong)
                #expect(byDescriptor.status == 77, "\(byDescriptor.stderr)")
            }
            // Without a password and without a terminal: denied too, saying how to give one.
            let none = try cli(["-s", "denied", "import", "--format", "aegis", aegis])
            #expect(none.status == 77 && none.stderr.contains("--source-passphrase-file"), "\(none.stderr)")
            #expect(try cli(["-s", "denied", "list"]).stdoutText == "")
        }
    }

    /// A truncated or altered encrypted backup, and one asking for more key derivation work than
    /// any app writes, are refused with what is wrong (65), quickly, nothing stored.
    @Test func damagedAndHostileBackupsStoreNothing() throws {
        let scratch = try ScratchDirectory("otp-damaged")
        defer { scratch.remove() }
        let password = scratch.path("password")
        try Data("pw".utf8).write(to: URL(fileURLWithPath: password))
        let aegis = scratch.path("aegis.json")
        try Self.encrypt("aegis", ImportOTPTests.aegisContent, password: "pw", to: aegis, ["logN": 10])
        var text = try String(contentsOfFile: aegis, encoding: .utf8)
        let db = text.range(of: #""db": ""#)!.upperBound
        text.replaceSubrange(db...db, with: text[db] == "A" ? "B" : "A")
        let altered = scratch.path("altered.json")
        try Data(text.utf8).write(to: URL(fileURLWithPath: altered))
        let truncatedAegis = scratch.path("truncated.json")
        try Data(try Data(contentsOf: URL(fileURLWithPath: aegis)).dropLast(30)).write(
            to: URL(fileURLWithPath: truncatedAegis))
        let hostile = scratch.path("hostile.json")
        try Self.encrypt(
            "aegis", ImportOTPTests.aegisContent, password: "pw", to: hostile, ["logN": 10, "writeN": 1 << 30])
        let truncatedAndOTP = scratch.path("truncated.json.aes")
        try Self.encrypt(
            "andotp", ImportOTPTests.andOTPExport, password: "pw", to: truncatedAndOTP, ["iterations": 140_000])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: truncatedAndOTP))
        try bytes.prefix(bytes.count - 7).write(to: URL(fileURLWithPath: truncatedAndOTP))
        try CLIBackend.withVault { _ in
            func run(_ format: String, _ file: String) throws -> ProcessResult {
                try cli(["-s", "bad", "import", "--format", format, file, "--source-passphrase-file", password])
            }
            let tag = try run("aegis", altered)
            #expect(
                tag.status == 65 && tag.stderr.contains("does not match its tag: the file is damaged"), "\(tag.stderr)")
            let start = Date()
            let refused = try run("aegis", hostile)
            #expect(
                refused.status == 65 && refused.stderr.contains("asks scrypt for n=1073741824"), "\(refused.stderr)")
            // A guard against a hang, not a speed target: scrypt at n=2^30 would take 128 GiB and minutes.
            #expect(Date().timeIntervalSince(start) < 60)
            let cut = try run("aegis", truncatedAegis)
            #expect(cut.status == 65 && cut.stderr.contains("is not valid JSON"), "\(cut.stderr)")
            let truncated = try run("andotp", truncatedAndOTP)
            #expect(
                truncated.status == 77 && truncated.stderr.contains("or the file is damaged"), "\(truncated.stderr)")
            // A note of 1 MiB makes an entry larger than a secret may be: refused whole.
            let large = scratch.path("large.json")
            try Data(
                ImportOTPTests.aegisPlain.replacingOccurrences(
                    of: #""note 2""#, with: "\"" + String(repeating: "n", count: 1 << 20) + "\""
                ).utf8
            ).write(to: URL(fileURLWithPath: large))
            let tooLarge = try cli(["-s", "bad", "import", "--format", "aegis", large])
            #expect(tooLarge.status == 65 && tooLarge.stderr.contains("'Bank (me)'"), "\(tooLarge.stderr)")
            #expect(try cli(["-s", "bad", "list"]).stdoutText == "")
        }
    }

    /// pass-import (its Aegis, AegisCipher, AndOTP and FreeOTPPlus managers) finds the same
    /// secrets, algorithms, digits and periods in the same files.
    @Test func passImportReadsTheSameTokens() throws {
        let scratch = try ScratchDirectory("otp-pass-import")
        defer { scratch.remove() }
        let files = [
            ("aegis", "Aegis", scratch.path("aegis.json")), ("aegis", "AegisCipher", scratch.path("aegis-enc.json")),
            ("andotp", "AndOTP", scratch.path("andotp.json")), ("freeotp", "FreeOTPPlus", scratch.path("freeotp.json")),
        ]
        try Data(ImportOTPTests.aegisPlain.utf8).write(to: URL(fileURLWithPath: files[0].2))
        try Self.encrypt("aegis", ImportOTPTests.aegisContent, password: "pw", to: files[1].2, ["logN": 10])
        try Data(ImportOTPTests.andOTPExport.utf8).write(to: URL(fileURLWithPath: files[2].2))
        try Data(ImportOTPTests.freeOTPExport.utf8).write(to: URL(fileURLWithPath: files[3].2))
        let script = """
            import json, sys, urllib.parse
            import pass_import.managers.aegis as aegis
            from pass_import.managers.andotp import AndOTP
            from pass_import.managers.freeotp import FreeOTPPlus
            aegis.getpassword = lambda prefix: "pw"
            manager = {"Aegis": aegis.Aegis, "AegisCipher": aegis.AegisCipher, "AndOTP": AndOTP,
                       "FreeOTPPlus": FreeOTPPlus}[sys.argv[1]]
            with manager(sys.argv[2]) as importer:
                importer.parse()
                tokens = []
                for entry in importer.data:
                    query = urllib.parse.parse_qs(urllib.parse.urlparse(entry["otpauth"]).query)
                    tokens.append([query["secret"][0].rstrip("="), query.get("algorithm", ["SHA1"])[0],
                                   int(query.get("digits", ["6"])[0]), int(query.get("period", ["30"])[0])])
                print(json.dumps(tokens))
            """
        for (_, manager, file) in files {
            let parsed = try runProcess(
                "/usr/bin/env", ["python3", "-c", script, manager, file],
                environment: ProcessInfo.processInfo.environment,
                timeout: 60)
            #expect(parsed.status == 0, "\(manager): \(parsed.stderr)")
            let theirs = try JSONSerialization.jsonObject(with: parsed.stdout) as? [[Any]] ?? []
            let expected = ImportOTPTests.tokens.prefix(manager.hasPrefix("Aegis") ? 6 : 5)
            #expect(theirs.count >= expected.count, "\(manager)")
            for (index, token) in expected.enumerated() where index < theirs.count {
                #expect(theirs[index][0] as? String == token.secret, "\(manager) \(index)")
                #expect(theirs[index][1] as? String == token.algorithm, "\(manager) \(index)")
                #expect(theirs[index][2] as? Int == token.digits && theirs[index][3] as? Int == token.period)
            }
        }
        // And keychain-cli stores the same secrets from each of them.
        try Data("pw".utf8).write(to: URL(fileURLWithPath: scratch.path("pw")))
        try CLIBackend.withVault { _ in
            for (format, manager, file) in files {
                let password = format == "freeotp" ? [] : ["--source-passphrase-file", scratch.path("pw")]
                let imported = try cli(["-s", manager, "import", "--format", format, file] + password)
                #expect(imported.status == 0, "\(manager): \(imported.stderr)")
            }
            let uri = try cli(["-s", "FreeOTPPlus", "get", "Bank (me)", "--field", "otp"]).stdoutText
            #expect(uri.contains("secret=\(ImportOTPTests.tokens[2].secret)&"), "\(uri)")
        }
    }
}
