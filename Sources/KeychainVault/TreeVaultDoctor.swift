import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

extension TreeVaultStore {
    /// Checks, in order, what a tree vault needs: its directory (that other users cannot replace
    /// files in), its recipients, the identity file given (private to this user), which identity
    /// opens it or, for a passphrase tree vault, the passphrase, then that every item opens (each
    /// one it cannot open is named). After a failure the rest are skipped.
    /// - Parameters:
    ///   - passphraseSource: where the passphrase comes from, as the user should read it.
    ///   - identitySource: where the identities come from, and the identity file's path (nil for
    ///     a descriptor); nil when none are given.
    public func diagnose(passphraseSource: String, identitySource: (name: String, path: String?)? = nil) -> (
        checks: [HealthCheck], failure: KeychainError?
    ) {
        var report = HealthReport()
        report.run("vault directory") {
            var info = stat()
            guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw KeychainError.vaultIO(detail: "\(quotedPath(directory)) is not a directory")
            }
            try checkOwned(directory, info, what: "the tree vault")
            try checkNotReplaceable(directory, info, what: "the tree vault")
            return "\(directory) is a tree vault (one age file per item)"
        }
        report.run("vault files") {
            // Whoever may rewrite .recipients is sent every later secret; whoever may rewrite an
            // item or a service's directory may replace a secret.
            // One walk, each name stated once: what `get` refuses, doctor names (a service or an item
            // that is a link, a FIFO, a device); every directory and regular file, item or not,
            // must be this user's and changed by nobody else.
            var checked = 0
            func check(_ file: String, _ info: stat) throws(KeychainError) {
                try checkOwned(file, info, what: "the tree vault's file")
                guard info.st_mode & 0o022 == 0 else {
                    throw KeychainError.insecureFile(
                        detail:
                            "other users can change \(quotedPath(file)) (mode 0\(String(info.st_mode & 0o777, radix: 8))): "
                            + "run chmod go-w \(quotedPath(file))")
                }
                checked += 1
            }
            for own in [Self.recipientsFile, Self.identityFile, Self.fingerprintFile].map(path) {
                var info = stat()
                if lstat(own, &info) == 0 { try check(own, info) }
            }
            for name in Self.names(in: directory) {
                let service = path(name)
                var info = stat()
                guard lstat(service, &info) == 0 else { continue }
                let isDirectory = info.st_mode & S_IFMT == S_IFDIR
                if TreeVaultNames.service(directory: name) != nil && !isDirectory {
                    throw KeychainError.itemCorrupt(path: service, reason: "it is not a directory (a link?)")
                }
                guard isDirectory else { continue }
                try check(service, info)
                for item in Self.names(in: service) {
                    let file = "\(service)/\(item)"
                    guard lstat(file, &info) == 0 else { continue }
                    let isFile = info.st_mode & S_IFMT == S_IFREG
                    if TreeVaultNames.key(fileName: item) != nil && !isFile {
                        throw KeychainError.itemCorrupt(
                            path: file, reason: "it is not a regular file (a link, a FIFO?)")
                    }
                    if isFile { try check(file, info) }
                }
            }
            return "\(checked) files and directories only you can change"
        }
        var recipients: [VaultRecipient] = []
        report.run("recipients") {
            recipients = try self.recipients()
            return "\(recipients.count) in \(Self.recipientsFile)"
        }
        if let file = identitySource?.path {
            report.run("identity file") { try checkPrivateFile(file, what: "identity file") }
        }
        report.run("vault lock") {
            if givenIdentities.isEmpty && keepsIdentity {
                _ = try identities()
                return "its own identity (\(Self.identityFile)), opened with the passphrase from \(passphraseSource)"
            }
            guard let identitySource else {
                throw KeychainError.noMatchingIdentity(
                    path: directory, detail: "it is a team tree vault, and no identity was given")
            }
            let listed = recipients.map(\.key)
            let opening = givenIdentities.first { given in listed.contains { given.key.mayBeIdentity(of: $0) } }
            guard let opening else {
                throw KeychainError.noMatchingIdentity(
                    path: directory,
                    detail: "none of the identities of \(identitySource.name) is one of its recipients "
                        + "(\(givenIdentities.map(\.recipient).joined(separator: ", ")))")
            }
            return "age recipients; \(opening.recipient) (from \(identitySource.name)) opens it"
        }
        if signing.allowed != nil || access(path(Self.recipientsFile + VaultSigning.suffix), F_OK) == 0 {
            report.run("signatures") {
                try VaultSigning.summary(of: try signatureReport(), checked: signing.allowed != nil)
            }
        }
        report.run("vault opens") {
            let addresses = try addresses(service: nil)
            _ = try entries(at: addresses)
            let services = Set(addresses.map(\.service)).count
            return "decrypted: \(addresses.count) item\(addresses.count == 1 ? "" : "s") in \(services) "
                + "service\(services == 1 ? "" : "s")"
        }
        return (report.checks, report.failure)
    }
}

/// That `path` (whose `lstat` is `info`) belongs to this user (or root).
private func checkOwned(_ path: String, _ info: stat, what: String) throws(KeychainError) {
    guard info.st_uid == geteuid() || info.st_uid == 0 else {
        throw KeychainError.insecureFile(
            detail: "\(what) \(quotedPath(path)) belongs to another user (uid \(info.st_uid)), who can change "
                + "who reads it: keep your own clone")
    }
}
