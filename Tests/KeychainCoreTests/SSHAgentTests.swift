import Foundation
import TestSupport
import Testing

@testable import KeychainSSH

private let message = Array("a vault signed through the agent\n".utf8)

/// A real ssh-agent started for the test (`ssh-agent -D -a SOCKET`, a child ended by its pid)
/// with keys added by ssh-add; our listener that never answers stands for a stuck agent.
@Suite("SSHAgent: a real ssh-agent", .serialized)
struct SSHAgentTests {
    /// Runs `body` with an agent holding an ed25519 and an rsa key (the directory has them as
    /// "ed" and "rsa", and "absent", a key it does not hold) and its socket's path.
    private func withAgent(_ body: (SSHKeyDirectory, String) throws -> Void) throws {
        let keys = try SSHKeyDirectory("agent")
        defer { keys.remove() }
        let socket = keys.path("agent.sock")
        let agent = try startQuietly("/usr/bin/ssh-agent", ["-D", "-a", socket])
        defer { agent.stop() }
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: socket) })
        try keys.makeKey("ed")
        try keys.makeKey("rsa", type: "rsa", bits: 2048)
        try keys.makeKey("absent")
        for name in ["ed", "rsa"] {
            let added = try runSSHTool("ssh-add", [keys.path(name)], environment: ["SSH_AUTH_SOCK": socket])
            #expect(added.status == 0, "\(added.stderr)")
        }
        try body(keys, socket)
    }

    @Test func itListsItsKeysAndSignsWhatSSHKeygenAccepts() throws {
        try withAgent { keys, socket in
            let listed = try SSHAgent.identities(socket: socket)
            let (ed, rsa) = (try keys.publicKey("ed"), try keys.publicKey("rsa"))
            #expect(listed.map(\.key) == [ed, rsa])
            #expect(listed.map(\.comment) == ["ed@test", "rsa@test"])
            for (name, key) in [("ed", ed), ("rsa", rsa)] {
                let signer = try SSHAgentSigner(socket: socket, publicKey: key, timeout: 10)
                let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: signer)
                #expect(try signature.verify(message, namespace: sshTestNamespace))
                var inner = SSHWireReader(signature.signature, "")
                #expect(try inner.text() == (name == "rsa" ? "rsa-sha2-512" : "ssh-ed25519"))
                let verified = try keys.sshKeygenVerify(
                    message, signature: signature.armored, allowed: "\(name)@example.com \(key.line)",
                    principal: "\(name)@example.com")
                #expect(verified.status == 0, "\(verified.stderr)")
            }
        }
    }

    @Test func aKeyItDoesNotHoldIsAnAgentError() throws {
        try withAgent { keys, socket in
            let absent = try keys.publicKey("absent")
            #expect(throws: SSHKeyError.agent("it does not hold the key \(absent.fingerprint)")) {
                try SSHAgentSigner(socket: socket, publicKey: absent)
            }
            // A key removed after the signer was made: the agent's failure answer.
            let signer = try SSHAgentSigner(socket: socket, publicKey: try keys.publicKey("ed"))
            let removed = try runSSHTool("ssh-add", ["-D"], environment: ["SSH_AUTH_SOCK": socket])
            #expect(removed.status == 0)
            #expect(throws: SSHKeyError.self) { try signer.sign(message) }
            #expect(try SSHAgent.identities(socket: socket).isEmpty)
        }
    }

    @Test func aMissingSocketIsAnAgentError() throws {
        let scratch = try ScratchDirectory("ssh-nosocket")
        defer { scratch.remove() }
        do {
            _ = try SSHAgent.identities(socket: scratch.path("none.sock"), timeout: 1)
            Issue.record("a missing socket listed keys")
        } catch {
            guard case .agent(let what) = error else { throw error }
            #expect(what.contains("none.sock"))
        }
        #expect(throws: SSHKeyError.self) { try SSHAgent.identities(socket: "") }
    }

    @Test func anAgentThatNeverAnswersTimesOut() throws {
        let scratch = try ScratchDirectory("ssh-stuck")
        defer { scratch.remove() }
        let path = scratch.path("stuck.sock")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        #expect(listen(listener, 8) == 0)
        let start = Date()
        do {
            _ = try SSHAgent.identities(socket: path, timeout: 0.5)
            Issue.record("a silent agent listed keys")
        } catch {
            guard case .agent(let what) = error else { throw error }
            #expect(what.contains("timed out"))
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.45 && elapsed < 5, "waited \(elapsed) s")
    }
}
