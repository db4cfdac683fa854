import Foundation
import KeychainSSH
import TestSupport

/// The namespace the vault signs under, as the interop tests give it to ssh-keygen.
let sshTestNamespace = "keychain-cli-vault"

/// Runs `program` (ssh-keygen, ssh-add, …) from /usr/bin with `arguments`, in a plain
/// environment plus `environment`.
func runSSHTool(
    _ program: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]
) throws -> ProcessResult {
    try runProcess(
        "/usr/bin/\(program)", arguments, stdin: stdin,
        environment: ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LC_ALL": "C"].merging(
            environment, uniquingKeysWith: { $1 }))
}

/// A scratch directory with keys made by the real ssh-keygen.
struct SSHKeyDirectory {
    let scratch: ScratchDirectory

    init(_ label: String) throws { scratch = try ScratchDirectory("ssh-\(label)") }

    func path(_ name: String) -> String { scratch.path(name) }

    /// `ssh-keygen -t TYPE [-b BITS] -N PASSPHRASE -f NAME [extra]`: the private key file's path.
    @discardableResult
    func makeKey(
        _ name: String, type: String = "ed25519", bits: Int? = nil, passphrase: String = "", extra: [String] = []
    ) throws -> String {
        let file = path(name)
        let bitsArguments = bits.map { ["-b", "\($0)"] } ?? []
        let result = try runSSHTool(
            "ssh-keygen",
            ["-q", "-t", type] + bitsArguments + ["-N", passphrase, "-C", "\(name)@test", "-f", file] + extra)
        guard result.status == 0 else { throw SSHToolFailure(result: result) }
        return file
    }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
    }

    /// The public key of `name.pub`.
    func publicKey(_ name: String) throws -> SSHPublicKey {
        try SSHPublicKey(line: String(decoding: try read("\(name).pub"), as: UTF8.self))
    }

    /// `ssh-keygen -Y sign -f KEY -n NAMESPACE` over `message`: the armoured signature.
    func sshKeygenSign(_ message: [UInt8], key: String, namespace: String = sshTestNamespace) throws -> [UInt8] {
        let result = try runSSHTool(
            "ssh-keygen", ["-Y", "sign", "-f", path(key), "-n", namespace], stdin: Data(message))
        guard result.status == 0 else { throw SSHToolFailure(result: result) }
        return Array(result.stdout)
    }

    /// `ssh-keygen -Y verify` of `signature` over `message` for `principal` with `allowed` as
    /// the allowed_signers file: its result.
    func sshKeygenVerify(
        _ message: [UInt8], signature: String, allowed: String, principal: String,
        namespace: String = sshTestNamespace
    ) throws -> ProcessResult {
        try write("allowed_signers", allowed)
        try write("message.sig", signature)
        return try runSSHTool(
            "ssh-keygen",
            [
                "-Y", "verify", "-f", path("allowed_signers"), "-I", principal, "-n", namespace, "-s",
                path("message.sig"),
            ], stdin: Data(message))
    }

    func remove() { scratch.remove() }
}

/// A tool that failed: its status and stderr.
struct SSHToolFailure: Error, CustomStringConvertible {
    let result: ProcessResult
    var description: String { "exit \(result.status): \(result.stderr)" }
}
