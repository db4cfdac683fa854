import Foundation
import TestSupport
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Encrypted Aegis vaults and andOTP backups, made by python (hashlib's scrypt and PBKDF2, the
/// cryptography package's AES-GCM) as the apps make them: opened with the right password only,
/// their damage and hostile key derivation parameters refused before any long work.
@Suite("Encrypted authenticator backups")
struct OTPEncryptedBackupTests {
    /// Encrypts `plaintext` as `kind` does under `password`. Options: Aegis's `logN`, `r`, `p`
    /// (scrypt's, 2^10·8·1 unless given), `decoy` (a password slot of another password first);
    /// andOTP's `iterations` (140,000 unless given) and `old` (the old format); `writeN`,
    /// `writeR`, `writeP`, `writeIterations`: what the file claims instead of what was used.
    static func encrypt(_ kind: String, _ plaintext: String, password: String, _ options: [String: Int] = [:]) throws
        -> [UInt8]
    {
        let script = """
            import base64, hashlib, json, os, sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            kind, password, options = sys.argv[1], sys.argv[2].encode(), json.loads(sys.argv[3])
            plain = sys.stdin.buffer.read()
            def seal(key, data):
                nonce = os.urandom(12)
                sealed = AESGCM(key).encrypt(nonce, data, None)
                return nonce, sealed[:-16], sealed[-16:]
            if kind == "aegis":
                master = os.urandom(32)
                n, r, p = 2 ** options.get("logN", 10), options.get("r", 8), options.get("p", 1)
                def slot(secret):
                    salt = os.urandom(32)
                    key = hashlib.scrypt(secret, salt=salt, n=n, r=r, p=p, maxmem=2**28, dklen=32)
                    nonce, wrapped, tag = seal(key, master)
                    return {"type": 1, "uuid": "a8325752-c1be-458a-9b3e-5e0a8154d9ec", "key": wrapped.hex(),
                            "key_params": {"nonce": nonce.hex(), "tag": tag.hex()}, "n": options.get("writeN", n),
                            "r": options.get("writeR", r), "p": options.get("writeP", p), "salt": salt.hex(),
                            "repaired": True, "is_backup": False}
                biometric = {"type": 2, "uuid": "b", "key": os.urandom(32).hex(),
                             "key_params": {"nonce": os.urandom(12).hex(), "tag": os.urandom(16).hex()}}
                slots = [biometric] + ([slot(b"another password")] if options.get("decoy") else []) + [slot(password)]
                nonce, content, tag = seal(master, plain)
                out = json.dumps({"version": 1, "header": {"slots": slots, "params": {"nonce": nonce.hex(),
                                  "tag": tag.hex()}}, "db": base64.b64encode(content).decode()}, indent=4).encode()
            elif options.get("old"):
                nonce, content, tag = seal(hashlib.sha256(password).digest(), plain)
                out = nonce + content + tag
            else:
                iterations, salt = options.get("iterations", 140000), os.urandom(12)
                nonce, content, tag = seal(hashlib.pbkdf2_hmac("sha1", password, salt, iterations, 32), plain)
                out = options.get("writeIterations", iterations).to_bytes(4, "big") + salt + nonce + content + tag
            sys.stdout.buffer.write(out)
            """
        let options = String(decoding: try JSONSerialization.data(withJSONObject: options), as: UTF8.self)
        let made = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, kind, password, options], stdin: Data(plaintext.utf8),
            environment: ProcessInfo.processInfo.environment, timeout: 120)
        #expect(made.status == 0, "\(made.stderr)")
        return Array(made.stdout)
    }

    /// The plain content of OTPExportTests' Aegis vault: its `db` object.
    static var aegisContent: String {
        let aegis = OTPExportTests.aegis
        let start = aegis.range(of: #""db": "#)!.upperBound
        return String(aegis[start...].dropLast())
    }

    /// Reads `bytes` as `kind` with `password`, counting how often the password is asked.
    static func read(_ kind: OTPExport.Kind, _ bytes: [UInt8], password: String, asked: inout Int) throws
        -> ManagerExport
    {
        var count = 0
        defer { asked = count }
        return try OTPExport.read(
            kind,
            ManagerInput(bytes: bytes, source: "'backup'") {
                count += 1
                return Array(password.utf8)
            })
    }

    static func failure(_ kind: OTPExport.Kind, _ bytes: [UInt8], password: String) -> FormatError? {
        var asked = 0
        do {
            _ = try read(kind, bytes, password: password, asked: &asked)
        } catch let error as FormatError {
            return error
        } catch {
            Issue.record("\(error)")
        }
        return nil
    }

    @Test func anEncryptedAegisVaultOpensWithItsPasswordOnly() throws {
        let plain = try OTPExportTests.read(.aegis, OTPExportTests.aegis, source: "'backup'")
        let vault = try Self.encrypt("aegis", Self.aegisContent, password: "correct horse", ["decoy": 1])
        var asked = 0
        let opened = try Self.read(.aegis, vault, password: "correct horse", asked: &asked)
        #expect(opened.entries == plain.entries && opened.notImported == plain.notImported)
        #expect(asked == 1, "asked once, whatever the number of slots")
        let wrong = Self.failure(.aegis, vault, password: "correct hors")
        #expect(wrong?.kind == .wrongPassword)
        #expect(
            wrong?.description == "'backup': the password is wrong: it opens none of the vault's password slots; "
                + "nothing was stored. Give the password the vault was exported with")
        // The first slot's own password opens it (both slots hold the one master key).
        #expect(try Self.read(.aegis, vault, password: "another password", asked: &asked).entries == plain.entries)
    }

    @Test func aDamagedOrHostileAegisVaultIsRefused() throws {
        let vault = try Self.encrypt("aegis", Self.aegisContent, password: "pw")
        var text = String(decoding: vault, as: UTF8.self)
        // A byte of the content altered: the password opens the slot, the content fails its tag.
        let db = text.range(of: #""db": ""#)!.upperBound
        let flipped = text[db] == "A" ? "B" : "A"
        text.replaceSubrange(db...db, with: flipped)
        let altered = Self.failure(.aegis, Array(text.utf8), password: "pw")
        #expect(altered?.kind == .other && altered?.description.contains("does not match its tag") == true)
        #expect(
            Self.failure(.aegis, Array(vault.prefix(vault.count - 40)), password: "pw")?.description.contains(
                "is not valid JSON") == true, "a truncated file")
        // Parameters no Aegis writes: refused before the password is asked, scrypt never run.
        for (options, message) in [
            (["writeN": 1 << 30], "asks scrypt for n=1073741824, r=8, p=1: more than the 2097152 n·r·p this reads"),
            (["writeR": 1 << 20], "asks scrypt for n=1024, r=1048576, p=1"),
            (["writeP": 4096], "asks scrypt for n=1024, r=8, p=4096"),
            (["writeN": 1000], "scrypt's n=1000, r=8, p=1 are no scrypt parameters"),
            (["writeP": 0], "scrypt's n=1024, r=8, p=0 are no scrypt parameters"),
        ] {
            let hostile = try Self.encrypt("aegis", Self.aegisContent, password: "pw", options)
            var asked = 0
            #expect(throws: FormatError.self) { _ = try Self.read(.aegis, hostile, password: "pw", asked: &asked) }
            // Refused before the password is asked, so before any scrypt runs.
            #expect(asked == 0)
            #expect(Self.failure(.aegis, hostile, password: "pw")?.description.contains(message) == true, "\(options)")
        }
        let onlyBiometric = text.replacingOccurrences(of: #""type": 1,"#, with: #""type": 2,"#)
        #expect(
            Self.failure(.aegis, Array(onlyBiometric.utf8), password: "pw")?.description.contains(
                "has no password slot") == true)
    }

    @Test func andOTPBackupsOfBothFormatsOpenWithTheirPasswordOnly() throws {
        let plain = try OTPExportTests.read(.andotp, OTPExportTests.andOTP)
        var asked = 0
        for options in [["iterations": 150_000], ["old": 1]] {
            let backup = try Self.encrypt("andotp", OTPExportTests.andOTP, password: "pässwörd", options)
            let opened = try Self.read(.andotp, backup, password: "pässwörd", asked: &asked)
            #expect(opened.entries == plain.entries && asked == 1, "\(options)")
            let wrong = Self.failure(.andotp, backup, password: "password")
            #expect(wrong?.kind == .wrongPassword && wrong?.description.contains("the password is wrong") == true)
            let truncated = Self.failure(.andotp, Array(backup.dropLast(5)), password: "pässwörd")
            #expect(truncated?.kind == .wrongPassword && truncated?.description.contains("damaged") == true)
            var altered = backup
            altered[40] ^= 1
            #expect(Self.failure(.andotp, altered, password: "pässwörd")?.description.contains("damaged") == true)
        }
        // An iteration count no andOTP writes: never run, the file read as the old format only.
        let hostile = try Self.encrypt(
            "andotp", OTPExportTests.andOTP, password: "pw", ["iterations": 1000, "writeIterations": 2_000_000_000])
        let start = Date()
        let refused = Self.failure(.andotp, hostile, password: "pw")
        // A guard against a hang, not a speed target: 2,000,000,000 rounds would take hours.
        #expect(Date().timeIntervalSince(start) < 60)
        #expect(
            refused?.description.contains(
                "asks for 2000000000 PBKDF2 iterations, outside the 1 to 1280000 this reads") == true)
        #expect(
            Self.failure(.andotp, Array(repeating: 7, count: 20), password: "pw")?.description.contains("too short")
                == true)
    }
}
