import Glibc
import KeychainCore

/// `exec --file`: secrets handed to a command as files, as systemd's `LoadCredential=` hands
/// them to a service in `$CREDENTIALS_DIRECTORY`: each file 0400, to be read any number of times,
/// in a ``PrivateMemoryDirectory`` on `$XDG_RUNTIME_DIR`, else /dev/shm.
struct CredentialsDirectory {
    private let directory: PrivateMemoryDirectory
    var path: String { directory.path }

    /// Writes `files` into a new directory.
    /// - Throws: ``CommandFailure``: no tmpfs to write them to, or a failed write (74).
    init(writing files: [(name: String, secret: [UInt8])]) throws {
        directory = try PrivateMemoryDirectory(
            prefix: "keychain-cli-exec.", bases: [Environment.value("XDG_RUNTIME_DIR"), "/dev/shm"],
            refusal: "--file needs a tmpfs that only you (or root) can rename in, and neither $XDG_RUNTIME_DIR "
                + "nor /dev/shm is one: the secrets would be written to disk or where another user could swap "
                + "them. Set XDG_RUNTIME_DIR to a tmpfs directory of yours, or use --env", failure: Self.failure)
        for (name, secret) in files { try directory.write(secret, to: name, mode: 0o400, failure: Self.failure) }
    }

    /// Removes the directory and all it holds now (the remover finds nothing left).
    func remove() { directory.remove() }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure(
            kind: .io,
            message: "\(what) for --file (\(String(cString: strerror(errno)))); nothing was run. Check that it is "
                + "writable and has room")
    }
}
