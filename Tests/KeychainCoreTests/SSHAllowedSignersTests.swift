import Foundation
import Testing

@testable import KeychainSSH

private let now = Date()

/// allowed_signers files as `man ssh-keygen` describes them, and as ssh-keygen reads them.
@Suite("AllowedSigners: OpenSSH's allowed_signers")
struct SSHAllowedSignersTests {
    private let keys: SSHKeyDirectory
    private let alice: SSHPublicKey
    private let bob: SSHPublicKey

    init() throws {
        keys = try SSHKeyDirectory("allowed")
        try keys.makeKey("alice")
        try keys.makeKey("bob")
        alice = try keys.publicKey("alice")
        bob = try keys.publicKey("bob")
    }

    @Test func principalsNamespacesAndCommentsAreRead() throws {
        defer { keys.remove() }
        let signers = try AllowedSigners(
            """
            # the team
              
            alice@example.com,*@ops.example.com \(alice.line) alice's laptop
            bob@example.com namespaces="keychain-cli-*,file" \(bob.line)
            carol@example.com namespaces="git" \(bob.line)
            """)
        #expect(
            signers.principals(for: alice, namespace: "anything", at: now) == [
                "alice@example.com", "*@ops.example.com",
            ])
        #expect(signers.principals(for: bob, namespace: "keychain-cli-vault", at: now) == ["bob@example.com"])
        #expect(signers.principals(for: bob, namespace: "file", at: now) == ["bob@example.com"])
        #expect(signers.principals(for: bob, namespace: "git", at: now) == ["carol@example.com"])
        #expect(signers.principals(for: bob, namespace: "email", at: now).isEmpty)
        #expect(AllowedSigners.principal("dave@ops.example.com", matches: ["alice@example.com", "*@ops.example.com"]))
        #expect(!AllowedSigners.principal("dave@example.com", matches: ["alice@example.com", "*@ops.example.com"]))
        #expect(AllowedSigners.principal("al1", matches: ["al?"]))
        #expect(!AllowedSigners.principal("eve@ops.example.com", matches: ["*@ops.example.com", "!eve@*"]))
    }

    @Test func validityTimesBoundTheKey() throws {
        defer { keys.remove() }
        let signers = try AllowedSigners(
            """
            old@example.com valid-before="20200101Z" \(alice.line)
            future@example.com valid-after="29990101Z" \(alice.line)
            now@example.com valid-after="20200101120000Z",valid-before="29991231" \(alice.line)
            """)
        #expect(signers.principals(for: alice, namespace: "x", at: now) == ["now@example.com"])
        #expect(
            signers.principals(for: alice, namespace: "x", at: Date(timeIntervalSince1970: 1_500_000_000)) == [
                "old@example.com"
            ])
        // 2020-01-01 12:00:00 UTC: "now" starts at that second, not before it.
        #expect(
            signers.principals(for: alice, namespace: "x", at: Date(timeIntervalSince1970: 1_577_880_000)) == [
                "now@example.com"
            ])
        #expect(
            signers.principals(for: alice, namespace: "x", at: Date(timeIntervalSince1970: 1_577_880_000 - 1)).isEmpty)
        #expect(signers.principals(for: bob, namespace: "x", at: now).isEmpty)
    }

    @Test func quotedOptionsMayHoldSpacesAndCommas() throws {
        defer { keys.remove() }
        let signers = try AllowedSigners(
            "\"alice@example.com\" namespaces=\"a b,c\\\"d\",VALID-BEFORE=\"29990101\" \(alice.line) comment \"x")
        #expect(signers.principals(for: alice, namespace: "a b", at: now) == ["alice@example.com"])
        #expect(signers.principals(for: alice, namespace: "c\"d", at: now) == ["alice@example.com"])
        #expect(signers.principals(for: alice, namespace: "a", at: now).isEmpty)
    }

    @Test func whatIsNotUnderstoodIsRefusedNamingTheLine() throws {
        defer { keys.remove() }
        func failure(_ text: String) -> SSHKeyError? {
            do {
                _ = try AllowedSigners(text)
                return nil
            } catch { return error }
        }
        let good = "a@example.com \(alice.line)\n"
        #expect(
            failure("# c\n" + good + "b@example.com cert-authority \(bob.line)")
                == .unsupported(
                    "line 3: cert-authority (certificates are not supported)"))
        guard case .malformed(let unknown)? = failure(good + "b@example.com no-touch-required \(bob.line)") else {
            Issue.record("an unknown option was accepted")
            return
        }
        #expect(unknown.hasPrefix("line 2: unknown option"))
        guard case .malformed(let base64)? = failure(good + good + "c@example.com ssh-ed25519 AAAA!!!") else {
            Issue.record("bad base64 was accepted")
            return
        }
        #expect(base64.hasPrefix("line 3:"))
        for bad in [
            "lonely@example.com", "a@example.com valid-before=\"2020\" \(alice.line)",
            "a@example.com valid-after=\"20201345\" \(alice.line)",
            "a@example.com valid-after=20200101 \(alice.line)", "a@example.com namespaces=\"x \(alice.line)",
            "a@example.com namespaces=\"x\",namespaces=\"y\" \(alice.line)",
        ] {
            guard case .malformed(let message)? = failure(bad) else {
                Issue.record("accepted: \(bad)")
                continue
            }
            #expect(message.hasPrefix("line 1: "), "\(message)")
        }
    }

    /// Our principals for a signature's key are the ones `ssh-keygen -Y find-principals` prints
    /// (9.2's prints the first line that allows the key now, whatever its namespaces, so each key
    /// here has one such line, after an expired one).
    @Test func ourPrincipalsAreSSHKeygensFindPrincipals() throws {
        defer { keys.remove() }
        let file = """
            old@example.com valid-before="20200101" \(alice.line)
            alice@example.com,*@ops.example.com \(alice.line)
            later@example.com valid-after="29990101" \(bob.line)
            bob@example.com,robert@* namespaces="keychain-cli-*" \(bob.line)
            """
        try keys.write("allowed", file)
        let signers = try AllowedSigners(file)
        for name in ["alice", "bob"] {
            try keys.write(
                "\(name).sig", String(decoding: try keys.sshKeygenSign([1, 2, 3], key: name), as: UTF8.self))
            let found = try runSSHTool(
                "ssh-keygen", ["-Y", "find-principals", "-s", keys.path("\(name).sig"), "-f", keys.path("allowed")])
            #expect(found.status == 0, "\(found.stderr)")
            let theirs = found.stdoutText.split(whereSeparator: \.isNewline).flatMap { $0.split(separator: ",") }
                .map(String.init)
            let signature = try SSHSignature(armored: try keys.read("\(name).sig"))
            let ours = signers.principals(for: signature.publicKey, namespace: signature.namespace, at: now)
            #expect(ours == theirs)
            #expect(ours.count == 2)
        }
    }
}
