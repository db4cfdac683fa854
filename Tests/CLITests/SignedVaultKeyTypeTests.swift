import Foundation
import TestSupport
import Testing

/// --signing-key's contract (docs/backends/vault.md): a private key file is ed25519, although
/// the library now reads ECDSA and RSA keys for the ssh-agent; those sign a vault through an agent.
@Suite("Signed vaults: a private key file is ed25519")
struct SignedVaultKeyTypeTests {
    @Test func ecdsaAndRSAKeyFilesAreRefusedAsBefore() throws {
        try SignedTree.run { signed in
            for (name, type, bits, passphrase) in [
                ("ecdsa", "ecdsa", "256", ""), ("rsa", "rsa", "2048", ""), ("small", "rsa", "1024", ""),
                ("locked", "ecdsa", "384", "a pass phrase"),
            ] {
                let key = signed.tree.scratch.path(name)
                #expect(try sshKeygen(["-q", "-t", type, "-b", bits, "-N", passphrase, "-f", key]).status == 0)
                let wireType = type == "rsa" ? "ssh-rsa" : "ecdsa-sha2-nistp\(bits)"
                let refused = try cli(["vault", "sign"], extra: ["KEYCHAIN_SIGNING_KEY": key])
                // The same words as before, for a passphrase-protected key too (without asking for it).
                #expect(refused.status == 77, "\(refused.stderr)")
                #expect(
                    refused.stderr.contains("unsupported: \(wireType) private keys (ed25519 only)"), "\(refused.stderr)"
                )
            }
        }
    }
}
