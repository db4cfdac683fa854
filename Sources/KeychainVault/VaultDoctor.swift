import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

extension VaultStore {
    /// Checks, in order, what the vault backend needs: a vault file that only this user can read
    /// (or none yet), a directory only this user can write, an identity file only this user can
    /// read (when one is given), then for a team vault which identity opens it, else a
    /// passphrase; and that the vault opens. After a failure the rest are skipped.
    /// - Parameters:
    ///   - passphraseSource: where the passphrase comes from, as the user should read it
    ///     (`$KEYCHAIN_PASSPHRASE`, `--passphrase-file /run/secrets/pw`).
    ///   - identitySource: where the identities come from, as the user should read it, and the
    ///     identity file's path (nil for a descriptor); nil when none are given.
    /// - Returns: the checks, and the error of the first failure (nil when all passed).
    public func diagnose(passphraseSource: String, identitySource: (name: String, path: String?)? = nil) -> (
        checks: [HealthCheck], failure: KeychainError?
    ) {
        var report = HealthReport()
        let (directory, _) = splitPath(path)
        var exists = false
        report.run("vault file") {
            var info = stat()
            guard stat(path, &info) == 0 else {
                guard errno == ENOENT else {
                    throw KeychainError.vaultIO(detail: FileError("cannot stat \(quotedPath(path))").description)
                }
                return "\(path) does not exist yet; the first set creates it (mode 0600)"
            }
            exists = true
            return try checkPrivateFile(path, what: "vault file")
        }
        report.run("vault directory") {
            var existing = directory
            var info = stat()
            while stat(existing, &info) != 0 {
                guard errno == ENOENT, existing != "/" && existing != "." else {
                    throw KeychainError.vaultIO(detail: FileError("cannot stat \(quotedPath(existing))").description)
                }
                existing = splitPath(existing).directory
            }
            guard access(existing, W_OK | X_OK) == 0 else {
                throw KeychainError.vaultIO(detail: FileError("cannot write in \(quotedPath(existing))").description)
            }
            if existing != directory { return "\(directory) will be created (mode 0700)" }
            try checkNotReplaceable(directory, info, what: "the vault's directory")
            return "\(directory) is writable"
        }
        if let file = identitySource?.path {
            report.run("identity file") { try checkPrivateFile(file, what: "identity file") }
        }
        var teamVault = false
        report.run("vault lock") {
            guard exists, let opening = try identitiesThatOpen() else {
                return exists ? "a passphrase (scrypt)" : "a passphrase, unless recipients are added first"
            }
            teamVault = true
            guard let identitySource else {
                throw KeychainError.noMatchingIdentity(
                    path: path, detail: "it is a team vault, and no identity was given")
            }
            guard let first = opening.first else {
                throw KeychainError.noMatchingIdentity(
                    path: path,
                    detail: "none of the identities of \(identitySource.name) is one of its recipients "
                        + "(\(identities.map(\.recipient).joined(separator: ", ")))")
            }
            return "age recipients; \(first) (from \(identitySource.name)) opens it"
        }
        if !teamVault {
            report.run("passphrase") {
                try obtainPassphrase()
                return "from \(passphraseSource)"
            }
        }
        if signing.allowed != nil || access(signatureFile, F_OK) == 0 {
            report.run("signatures") {
                guard let (path, state) = try signatureReport() else { return "no vault file to check" }
                return try VaultSigning.summary(of: [("the vault", path, state)], checked: signing.allowed != nil)
            }
        }
        report.run("vault opens") {
            guard exists else { return "nothing to open yet" }
            let items = try items(service: nil)
            let services = Set(items.map(\.service)).count
            return
                "decrypted: \(items.count) item\(items.count == 1 ? "" : "s") in \(services) service\(services == 1 ? "" : "s")"
        }
        return (report.checks, report.failure)
    }

}

/// That `file` is a regular file of this user's that no one else can open.
func checkPrivateFile(_ file: String, what: String) throws(KeychainError) -> String {
    var info = stat()
    guard stat(file, &info) == 0 else {
        throw KeychainError.vaultIO(detail: FileError("cannot stat the \(what) \(quotedPath(file))").description)
    }
    let mode = info.st_mode & 0o777
    guard info.st_mode & S_IFMT == S_IFREG else {
        throw KeychainError.vaultIO(detail: "the \(what) \(quotedPath(file)) is not a regular file")
    }
    guard info.st_uid == geteuid() else {
        throw KeychainError.insecureFile(
            detail: "the \(what) \(quotedPath(file)) belongs to another user (uid \(info.st_uid)): keep your "
                + "own copy, or run chown \(geteuid()) \(quotedPath(file)) as root")
    }
    guard mode & 0o077 == 0 else {
        throw KeychainError.insecureFile(
            detail: "other users can open the \(what) \(quotedPath(file)) (mode 0\(String(mode, radix: 8))): "
                + "run chmod 600 \(quotedPath(file))")
    }
    return "\(file) (mode 0\(String(mode, radix: 8)), \(info.st_size) bytes)"
}

/// That other users cannot replace files in `directory` (whose `stat` is `info`): not writable by
/// group or others, unless sticky.
func checkNotReplaceable(_ directory: String, _ info: stat, what: String) throws(KeychainError) {
    guard info.st_mode & 0o022 == 0 || info.st_mode & S_ISVTX != 0 else {
        let mode = String(info.st_mode & 0o777, radix: 8)
        throw KeychainError.insecureFile(
            detail: "other users can replace files in \(what) \(quotedPath(directory)) (mode 0\(mode)): "
                + "run chmod 700 \(quotedPath(directory))")
    }
}
