import Foundation
import TestSupport
import Testing

/// Signing keys that are not a plain file: a key only a real ssh-agent holds, and a
/// passphrase-protected key file, asked for at the terminal (expect).
@Suite("Signed vaults: keys in an ssh-agent, keys with a passphrase")
struct SignedVaultKeyTests {
    @Test func aKeyOnlyTheAgentHoldsSignsAndAKeyItDoesNotHoldIs77() throws {
        try SignedTree.run { signed in
            let socket = signed.tree.scratch.path("agent.sock")
            let agent = try startQuietly("/usr/bin/ssh-agent", ["-D", "-a", socket])
            defer { agent.stop() }
            #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: socket) })
            let added = try runProcess(
                "/usr/bin/ssh-add", [signed.alice], environment: ["SSH_AUTH_SOCK": socket, "PATH": "/usr/bin:/bin"])
            #expect(added.status == 0, "\(added.stderr)")
            // The private key goes: only the agent can sign now.
            try FileManager.default.removeItem(atPath: signed.alice)
            let agentKey = ["KEYCHAIN_SIGNING_KEY": signed.alice + ".pub", "SSH_AUTH_SOCK": socket]
            let set = try cli(["-s", "ci", "set", "token"], stdin: Data("through the agent".utf8), extra: agentKey)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(
                try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "through the agent")
            let verified = try sshKeygen(
                [
                    "-Y", "verify", "-f", signed.allowedSigners, "-I", "alice@example.com", "-n",
                    SignedTree.namespace, "-s", signed.item("ci", "token") + ".sig",
                ], stdin: try signed.message("ci/token.age"))
            #expect(verified.status == 0, "\(verified.stderr)")
            // Mallory's .pub names a key the agent does not hold; without a socket, nothing to ask.
            let absent = agentKey.merging(["KEYCHAIN_SIGNING_KEY": signed.mallory + ".pub"]) { $1 }
            let refused = try cli(
                ["-s", "ci", "set", "token"], stdin: Data("x".utf8),
                extra: absent.merging(["KEYCHAIN_ALLOWED_SIGNERS": ""]) { $1 })
            #expect(refused.status == 77 && refused.stderr.contains("ssh-agent"), "\(refused.stderr)")
            let noSocket = try cli(
                ["-s", "ci", "set", "token"], stdin: Data("x".utf8),
                extra: ["SSH_AUTH_SOCK": ""]
                    .merging(["KEYCHAIN_SIGNING_KEY": signed.alice + ".pub"]) { $1 })
            #expect(noSocket.status == 77 && noSocket.stderr.contains("SSH_AUTH_SOCK"), "\(noSocket.stderr)")
            #expect(
                try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "through the agent")
        }
    }

    @Test func aPassphraseProtectedKeyIsAskedForAtTheTerminalAndRefusedWithoutOne() throws {
        try SignedTree.run { signed in
            let carol = signed.tree.scratch.path("carol")
            #expect(try sshKeygen(["-q", "-t", "ed25519", "-N", "carol's pass phrase", "-f", carol]).status == 0)
            let carolPublic = try String(contentsOfFile: carol + ".pub", encoding: .utf8)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: signed.allowedSigners))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("carol@example.com \(carolPublic)".utf8))
            try handle.close()
            #expect(try cli(["-s", "ci", "set", "token"], input: "v").status == 0)
            try signed.forge("ci", "token", secret: "reviewed")
            // No terminal: refused, with what to do, and nothing signed.
            let carolKey = ["KEYCHAIN_SIGNING_KEY": carol]
            let headless = try cli(["vault", "sign"], extra: carolKey)
            #expect(headless.status == 77 && headless.stderr.contains("ssh-agent"), "\(headless.stderr)")
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).status == 77)
            let typed = try expect(
                """
                set env(KEYCHAIN_SIGNING_KEY) {\(carol)}
                spawn $env(KEYCHAIN_CLI) vault sign
                expect "Passphrase for the signing key"
                send "carol's pass phrase\\r"
                expect eof
                catch wait result
                exit [lindex $result 3]
                """, session: nil)
            #expect(typed.status == 0, "\(typed.stdoutText)")
            let read = try cli(["-s", "ci", "get", "token"], extra: SignedTree.required)
            #expect(read.stdoutText == "reviewed", "\(read.stderr)")
            #expect(try cli(["vault", "verify"]).stdoutText.contains("ci/token: signed by carol@example.com"))
        }
    }
}
