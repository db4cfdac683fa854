import Glibc
import KeychainCore
import KeychainHolder

/// The composition root: every keychain and store the CLI opens is built here, from the
/// ``Settings`` of one invocation.
extension Settings {
    /// The keychain of the chosen service on the chosen backend.
    func keychain(listing: ListingDetail = .full) throws -> Keychain {
        Keychain(service: try serviceName(), store: try store(listing: listing))
    }

    /// The store of the chosen backend, never another one: an unknown $KEYCHAIN_BACKEND is an
    /// error, and vault options without the vault backend are refused rather than ignored.
    /// The vault goes through `unlock`'s holder when it holds it and no passphrase is given
    /// (`throughHolder`; serve keeps what only its own store keeps, and opens the file itself).
    func store(listing: ListingDetail = .full, throughHolder: Bool = true) throws -> any SecretStore {
        let timeout = try resolvedTimeout()
        switch try resolvedBackend() {
        case .secretService: return try secretServiceStore(timeout: timeout, listing: listing)
        case .vault:
            let direct: any SecretStore
            let path: String
            if let tree = try treeVaultStore(timeout: timeout, listing: listing) {
                // A team tree vault too: `unlock` holds the identity that opens it (an ssh key's
                // passphrase asked once), and a passphrase-protected key given is never opened.
                (direct, path) = (tree, tree.directory)
            } else {
                let file = try vaultStore(timeout: timeout)
                (direct, path) = (file, file.path)
            }
            // The holder reads the vault's files itself, and checks no signature: a signed vault
            // is read and written here, where the signatures are checked and made.
            guard throughHolder, case .terminal = PassphraseInput(self), try !signaturesInEffect() else {
                return direct
            }
            let place = HolderPlace.current()
            guard HeldVaultStore.mayHold(place) else { return direct }
            return HeldVaultStore(vault: path, place: place, timeout: timeout, direct: direct)
        case .openbao: return try openBaoStore(timeout: timeout, listing: listing)
        }
    }

    /// The Secret Service store of these settings.
    func secretServiceStore(timeout: Double? = nil, listing: ListingDetail = .full) throws -> SecretServiceStore {
        SecretServiceStore(timeout: try timeout ?? resolvedTimeout(), listing: listing)
    }

    /// The vault of these settings: --vault, else $KEYCHAIN_VAULT, else the default; a file, or
    /// the directory of a tree vault (`initializing`: one that `vault init` is to make).
    /// - Throws: ``CommandFailure`` (usage) for a secret given as its path, or a directory that is
    ///   not a tree vault.
    func vaultPath(initializing: Bool = false) throws -> String {
        try PathValue.check(self)
        guard
            let path = try vault ?? environment("KEYCHAIN_VAULT")
                ?? VaultStore.defaultPath(environment: try dataDirectories())
        else {
            throw CommandFailure.usage("no vault path: pass --vault PATH, or set KEYCHAIN_VAULT or HOME")
        }
        if !initializing && TreeVaultStore.isTree(path)
            && access("\(path)/\(TreeVaultStore.recipientsFile)", F_OK) != 0
        {
            let file = (path.hasSuffix("/") ? path : path + "/") + "vault.age"
            throw CommandFailure.usage(
                "the vault path \(quotedPath(path)) names a directory that is not a tree vault (it has no "
                    + "\(TreeVaultStore.recipientsFile)); make one with 'keychain-cli vault init \(path)', or give a "
                    + "file in it, e.g. \(quotedPath(file))")
        }
        var link = stat()
        if lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK, link.st_uid != geteuid(), link.st_uid != 0 {
            throw CommandFailure.usage(
                "the vault path \(quotedPath(path)) is a symbolic link another user (uid \(link.st_uid)) owns, who would "
                    + "choose where your vault is read and written; give the path it should lead to yourself")
        }
        if !initializing, !TreeVaultStore.isTree(path), let tree = Self.enclosingTreeVault(of: path) {
            throw CommandFailure.usage(
                "the vault path \(quotedPath(path)) is inside the tree vault \(quotedPath(tree)), where a file is one "
                    + "of its items; give the tree vault itself (\(quotedPath(tree))), or a path outside it")
        }
        if !initializing && path.hasSuffix("/") && !TreeVaultStore.isTree(path) {
            throw CommandFailure.usage(
                "the vault path \(quotedPath(path)) names a directory that does not exist; make a tree vault there "
                    + "with 'keychain-cli vault init \(path)', or give a file, e.g. \(quotedPath(path + "vault.age"))"
            )
        }
        return path
    }

    /// The tree vault (a directory with its recipients file) that `path` lies inside, if any.
    private static func enclosingTreeVault(of path: String) -> String? {
        // The nearest directory that exists, by its real path (`..` and links resolved).
        var directory = path
        var resolved: String?
        while resolved == nil, let slash = directory.lastIndex(of: "/") {
            directory = String(directory[..<slash])
            if let real = realpath(directory.isEmpty ? "/" : directory, nil) {
                resolved = String(cString: real) + "/"
                free(real)
            }
        }
        if resolved == nil, let cwd = getcwd(nil, 0) {
            defer { free(cwd) }
            resolved = String(cString: cwd) + "/"
        }
        directory = resolved ?? "/"
        while let slash = directory.lastIndex(of: "/") {
            directory = String(directory[..<slash])
            let tree = directory.isEmpty ? "/" : directory
            if access("\(tree)/\(TreeVaultStore.recipientsFile)", F_OK) == 0 { return tree }
            if directory.isEmpty { return nil }
        }
        return nil
    }

    /// The tree vault of these settings when their vault path names a directory; nil otherwise.
    func treeVaultStore(timeout: Double? = nil, listing: ListingDetail = .full, newPassphrase: PassphraseInput? = nil)
        throws -> TreeVaultStore?
    {
        let path = try vaultPath()
        guard TreeVaultStore.isTree(path) else { return nil }
        let timeout = try timeout ?? resolvedTimeout()
        configureAgePlugins(timeout: timeout)
        return TreeVaultStore(
            directory: path, workFactor: try vaultWorkFactor(), lockTimeout: timeout, listing: listing,
            identities: try identities(self, vault: path), signing: try vaultSigning(),
            passphrase: passphraseSource(vault: path, newPassphrase: newPassphrase))
    }

    /// The vault store of these settings, whatever the backend says (the `vault` commands are
    /// about the file). `newPassphrase`: where `vault passwd` reads the new passphrase.
    func vaultStore(timeout: Double? = nil, newPassphrase: PassphraseInput? = nil) throws -> VaultStore {
        let timeout = try timeout ?? resolvedTimeout()
        configureAgePlugins(timeout: timeout)
        let path = try vaultPath()
        return VaultStore(
            path: path, workFactor: try vaultWorkFactor(), lockTimeout: timeout,
            identities: try identities(self, vault: path), signing: try vaultSigning(),
            passphrase: passphraseSource(vault: path, newPassphrase: newPassphrase))
    }

    /// Where a vault's passphrase comes from: the new one of `vault passwd` from `newPassphrase`,
    /// the current one as ``PassphraseInput`` says (a prompt only when these settings allow one).
    func passphraseSource(vault path: String, newPassphrase: PassphraseInput?) -> VaultStore.PassphraseSource {
        let source = PassphraseInput(self)
        let mayPrompt = mayPrompt
        return { purpose throws(KeychainError) in
            if purpose == .change, let newPassphrase {
                do throws(KeychainError) {
                    return try newPassphrase.read(purpose, vault: path)
                } catch .noPassphrase(let detail) {
                    throw .noNewPassphrase(detail: detail)
                } catch {
                    throw error
                }
            }
            if case .terminal = source, !mayPrompt {
                throw .noPassphrase(detail: PassphraseInput.notAsked)
            }
            return try source.read(purpose, vault: path)
        }
    }

    /// The OpenBao store the environment describes (BAO_*, VAULT_*, KEYCHAIN_OPENBAO_*, HOME).
    func openBaoStore(timeout: Double? = nil, listing: ListingDetail = .full) throws -> OpenBaoStore {
        var variables: [String: String] = [:]
        for prefix in ["BAO_", "VAULT_"] {
            for name in ["ADDR", "TOKEN", "NAMESPACE", "CACERT", "CAPATH"] {
                variables[prefix + name] = try environment(prefix + name)
            }
        }
        for name in [
            "MOUNT", "ROLE_ID", "ROLE_ID_FILE", "SECRET_ID", "SECRET_ID_FILE", "APPROLE_MOUNT", "JWT", "JWT_FILE",
            "JWT_ROLE", "JWT_MOUNT",
        ] {
            variables["KEYCHAIN_OPENBAO_" + name] = try environment("KEYCHAIN_OPENBAO_" + name)
        }
        variables["HOME"] = try environment("HOME")
        return OpenBaoStore(
            configuration: try OpenBaoConfiguration.fromEnvironment(variables),
            timeout: try timeout ?? resolvedTimeout(), readsCreationDates: listing == .full)
    }

    /// $KEYCHAIN_VAULT_WORK_FACTOR, else the default: log2 of scrypt's N for a new passphrase.
    func vaultWorkFactor() throws -> Int {
        guard let text = try environment("KEYCHAIN_VAULT_WORK_FACTOR") else { return VaultStore.defaultWorkFactor }
        guard let value = Int(text), VaultStore.workFactors.contains(value) else {
            throw CommandFailure.usage(
                "KEYCHAIN_VAULT_WORK_FACTOR is \(quotedValue(text, expected: "a number")); it must be a whole number from "
                    + "\(VaultStore.workFactors.lowerBound) to \(VaultStore.workFactors.upperBound) (log2 of scrypt's N)"
            )
        }
        return value
    }

    private func dataDirectories() throws -> [String: String] {
        ["XDG_DATA_HOME": try environment("XDG_DATA_HOME"), "HOME": try environment("HOME")].compactMapValues { $0 }
    }
}
