import Foundation
import TestSupport
import Testing

/// What the holder's memory keeps of a vault once it is locked: nothing of its file key. Read as
/// root through /proc/PID/mem (a core dump of the holder holds none of its memory at all, so it
/// cannot tell).
@Suite("unlock: a locked vault's key is gone from the holder's memory")
struct UnlockMemoryTests {
    /// Prints the file key of the scrypt vault argv[1] opened with the passphrase argv[2], then
    /// how many times the readable memory of process argv[3] holds the key, its base64 (the
    /// request's text before), and each half of it (what a freed copy keeps past the
    /// allocator's own pointers).
    static let search = """
        import base64, hashlib, struct, sys
        def rotl(v, c): return ((v << c) & 0xffffffff) | (v >> (32 - c))
        def quarter(s, a, b, c, d):
            s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 16)
            s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 12)
            s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 8)
            s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 7)
        def chacha20_block(key, counter, nonce):
            state = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + list(struct.unpack("<8I", key)) \\
                + [counter] + list(struct.unpack("<3I", nonce))
            s = list(state)
            for _ in range(10):
                quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13); quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15)
                quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12); quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14)
            return struct.pack("<16I", *[(x + y) & 0xffffffff for x, y in zip(s, state)])
        def unb64(text): return base64.b64decode(text + "=" * (-len(text) % 4))
        lines = open(sys.argv[1], "rb").read().split(b"\\n")
        stanza = lines[1].decode().split(" ")
        assert stanza[1] == "scrypt", stanza
        salt, log_n = unb64(stanza[2]), int(stanza[3])
        body = unb64(lines[2].decode())
        wrap = hashlib.scrypt(sys.argv[2].encode(), salt=b"age-encryption.org/v1/scrypt" + salt,
                              n=1 << log_n, r=8, p=1, maxmem=1 << 30, dklen=32)
        # ChaCha20-Poly1305's ciphertext is the stream from counter 1 (the tag is not checked here).
        key = bytes(x ^ y for x, y in zip(body[:16], chacha20_block(wrap, 1, bytes(12))))
        print(key.hex())
        needles = {"raw": key, "base64": base64.b64encode(key), "head": key[:8], "tail": key[8:]}
        found = dict.fromkeys(needles, 0)
        with open("/proc/%s/maps" % sys.argv[3]) as maps, open("/proc/%s/mem" % sys.argv[3], "rb") as mem:
            for line in maps:
                fields = line.split()
                if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    mem.seek(start); data = mem.read(end - start)
                except OSError:
                    continue
                for name, needle in needles.items(): found[name] += data.count(needle)
        print(found["raw"], found["base64"], found["head"], found["tail"])
        """

    /// The file key of `vault`, and how often the memory of `pid` holds it: whole, in base64, in part.
    static func traces(vault: String, pid: Int32) throws -> (key: String, whole: Int, base64: Int, halves: Int) {
        let result = try runProcess(
            "/usr/bin/python3", ["-c", search, vault, CLIBackend.passphrase, "\(pid)"],
            environment: ["PATH": "/usr/bin:/bin"])
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(result.status == 0 && lines.count == 2, "\(result.stdoutText) \(result.stderr)")
        let counts = (lines.last ?? "").split(separator: " ").compactMap { Int($0) }
        guard counts.count == 4 else { return (lines.first ?? "", -1, -1, -1) }
        return (lines.first ?? "", counts[0], counts[1], counts[2] + counts[3])
    }

    /// Two vaults unlocked, one read and written through the holder, then locked alone (the
    /// holder stays up for the other): while held, the search finds its key (so it can find
    /// one); once locked, the holder's memory holds neither the key, nor its base64, nor half of it.
    @Test(.enabled(if: geteuid() == 0, "reading another process's memory needs root"))
    func aLockedVaultsKeyLeavesNoTraceInTheHolder() throws {
        let place = try UnlockPlace()
        defer { place.finish() }
        let other = place.scratch.path("w.age")
        let stored = try place.run(
            ["set", "other"], passphrase: true, stdin: Data("x".utf8), extra: ["KEYCHAIN_VAULT": other])
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        #expect(try place.run(["unlock"], passphrase: true, extra: ["KEYCHAIN_VAULT": other]).status == 0)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        #expect(try place.run(["set", "more"], stdin: Data("y".utf8)).status == 0)
        let pid = try #require(place.holders().first)
        let held = try Self.traces(vault: place.vault, pid: pid)
        #expect(held.whole > 0, "the held key \(held.key) should be found while it is held")
        let locked = try place.run(["lock", "--vault", place.vault])
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(place.holders() == [pid], "the holder keeps the other vault")
        let after = try Self.traces(vault: place.vault, pid: pid)
        #expect(after.key == held.key)
        #expect(
            after.whole == 0 && after.base64 == 0 && after.halves == 0,
            "the locked vault's key is still in the holder's memory: \(after)")
    }
}
