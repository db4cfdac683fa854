import Foundation
import TestSupport
import Testing

@testable import KeychainSSH

private let message = Array("a key ssh-add gave the agent\n".utf8)

/// A listener standing for ssh-agent that records the first SSH_AGENTC_ADD_IDENTITY (17) or
/// ADD_ID_CONSTRAINED (25) the real ssh-add sends it, answers SSH_AGENT_SUCCESS (6), and prints
/// the message (from its type byte) in hexadecimal; anything else is answered with FAILURE (5).
private let capturingAgent = """
    import os, socket, struct, subprocess, sys
    path, key, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(30)
    env = {"PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": path, "HOME": os.path.dirname(path), "LC_ALL": "C"}
    add = subprocess.Popen(["/usr/bin/ssh-add", *extra, key], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    def exactly(conn, count):
        data = b""
        while len(data) < count:
            chunk = conn.recv(count - len(data))
            if not chunk:
                return None
            data += chunk
        return data
    captured = None
    while captured is None:
        conn, _ = server.accept()
        with conn:
            while True:
                header = exactly(conn, 4)
                if header is None:
                    break
                body = exactly(conn, struct.unpack(">I", header)[0])
                if body and body[0] in (17, 25):
                    captured = body
                    conn.sendall(b"\\0\\0\\0\\1\\6")
                    break
                conn.sendall(b"\\0\\0\\0\\1\\5")
    _, err = add.communicate(timeout=30)
    if add.returncode != 0:
        sys.stderr.write(err.decode())
        sys.exit(1)
    sys.stdout.write(captured.hex())
    """

extension SSHKeyDirectory {
    /// What `ssh-add [extra] NAME` sends an agent to add the key: the message from its type byte.
    func sshAddMessage(_ name: String, extra: [String] = []) throws -> [UInt8] {
        let socket = path("agent-\(name).sock")
        let result = try runProcess(
            "/usr/bin/python3", ["-c", capturingAgent, socket, path(name)] + extra, environment: [:])
        guard result.status == 0 else { throw SSHToolFailure(result: result) }
        let hex = Array(String(decoding: result.stdout, as: UTF8.self).utf8)
        return stride(from: 0, to: hex.count - 1, by: 2).map {
            UInt8(String(decoding: hex[$0...($0 + 1)], as: UTF8.self), radix: 16)!
        }
    }
}

/// The key of `fields` (what follows the message type), with what it left unread; or the error.
private func agentKey(_ fields: [UInt8]) -> Result<(SSHPrivateKey, [UInt8]), SSHKeyError> {
    var reader = SSHWireReader(fields, "the agent request")
    do throws(SSHKeyError) {
        let key = try SSHPrivateKey(agentFields: &reader)
        return .success((key, Array(reader.bytes)))
    } catch { return .failure(error) }
}

private func agentError(_ fields: [UInt8]) -> SSHKeyError? {
    if case .failure(let error) = agentKey(fields) { return error }
    return nil
}

/// `init(agentFields:)` fed the bytes the real ssh-add sends: the same key as its file; and
/// damaged ones: an `SSHKeyError`, never a crash nor a key that signs garbage.
@Suite("SSHAgentFields: keys as ssh-add sends them")
struct SSHAgentFieldsTests {
    @Test(arguments: SSHKeyKind.all)
    func whatSSHAddSendsIsTheKeyOfTheFile(kind: SSHKeyKind) throws {
        let keys = try SSHKeyDirectory("agent-fields")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind)
        let sent = try keys.sshAddMessage("id")
        try #require(sent.first == 17)
        let (key, rest) = try agentKey(Array(sent.dropFirst())).get()
        #expect(rest.isEmpty)
        let file = try openKey(try keys.read("id"))
        #expect(key.publicKey == (try keys.publicKey("id")))
        #expect(key.comment == "id@test")
        #expect(try key.material.privateFields() == file.material.privateFields())
        // The fields we write are the fields ssh-add sends: the one reader and writer.
        #expect(try key.material.privateFields() + SSHWire.string("id@test") == Array(sent.dropFirst()))
        let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: key)
        #expect(try keys.sshKeygenAccepts(signature, of: message, by: key.publicKey))

        // Cut short anywhere: refused.
        let fields = Array(sent.dropFirst())
        var accepted = 0
        for length in 0..<fields.count where agentError(Array(fields.prefix(length))) == nil { accepted += 1 }
        #expect(accepted == 0)
    }

    @Test(arguments: [SSHKeyKind(type: "ed25519", bits: nil), SSHKeyKind(type: "rsa", bits: 2048)])
    func theConstraintsAfterTheKeyAreLeftToTheCaller(kind: SSHKeyKind) throws {
        let keys = try SSHKeyDirectory("agent-constrained")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind)
        let sent = try keys.sshAddMessage("id", extra: ["-t", "300"])
        try #require(sent.first == 25)
        let (key, rest) = try agentKey(Array(sent.dropFirst())).get()
        #expect(key.publicKey == (try keys.publicKey("id")))
        // SSH_AGENT_CONSTRAIN_LIFETIME (1), uint32 300.
        #expect(rest == [1] + SSHWire.uint32(300))
    }

    /// Every byte of a small key's message flipped: refused, or (a comment byte) the same key.
    @Test(arguments: [SSHKeyKind(type: "ed25519", bits: nil), SSHKeyKind(type: "ecdsa", bits: 256)])
    func everyFlippedByteIsRefusedOrTheComment(kind: SSHKeyKind) throws {
        let keys = try SSHKeyDirectory("agent-flipped")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind)
        let fields = Array(try keys.sshAddMessage("id").dropFirst())
        let original = try agentKey(fields).get().0
        var opened = 0
        for index in fields.indices {
            var changed = fields
            changed[index] ^= 0x01
            // A shorter comment leaves bytes the caller reads as constraints (and refuses).
            guard case .success((let key, let rest)) = agentKey(changed), rest.isEmpty else { continue }
            opened += 1
            #expect(key.publicKey == original.publicKey)
            #expect(index >= fields.count - "id@test".utf8.count)
        }
        #expect(opened <= "id@test".utf8.count)
    }
}
