import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// A signed tree vault (``VaultSigning``): each item's file and `.recipients` with its signature
// beside it (`SERVICE/KEY.age.sig`, `.recipients.sig`), over a message naming the vault's id
// (`.vault-id`, made by `vault init` or the first signed write) and the file's path in the vault.
extension TreeVaultStore {
    /// The vault's id, relative to the directory: one line, made once, that every signature names.
    public static let vaultIDFile = ".vault-id"
    /// The largest signature file read: an armoured SSHSIG of an RSA key is under 2 KiB.
    static let maximumSignatureFile = 64 << 10

    /// `SERVICE/KEY.age`, escaped as on disk: what a signature names.
    static func relativePath(_ address: SecretAddress) throws(KeychainError) -> String {
        "\(try TreeVaultNames.directory(of: address.service))/\(try TreeVaultNames.fileName(of: address.key))"
    }

    /// `SERVICE/KEY` as messages show it.
    static func shown(_ address: SecretAddress) -> String {
        "\(escapedForDisplay(address.service.rawValue))/\(escapedForDisplay(address.key.rawValue))"
    }

    /// The vault's id (`.vault-id`); nil when it has none.
    /// - Throws: ``KeychainError/vaultCorrupt(path:reason:)`` for a file that is not one.
    func vaultID() throws(KeychainError) -> String? {
        let file = path(Self.vaultIDFile)
        guard let bytes = try readSmallFile(file, limit: 4096) else { return nil }
        var line = bytes[...]
        if line.last == UInt8(ascii: "\n") { line = line.dropLast() }
        let allowed = { (byte: UInt8) in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard !line.isEmpty, line.count <= 128, line.allSatisfy(allowed) else {
            throw .vaultCorrupt(
                path: file, reason: "it is not a vault id (one line of at most 128 letters, digits, - and _)")
        }
        let id = String(decoding: line, as: UTF8.self)
        if let expected = signing.expectedVaultID, id != expected {
            // Another vault's id, items and recipients, all signed, copied in whole.
            throw .notSigned(
                what: "the vault", path: file,
                reason: "its id is \(id), not the one $KEYCHAIN_VAULT_ID pins (\(escapedForDisplay(expected))): "
                    + "is it another vault?")
        }
        return id
    }

    /// The vault's id (`.vault-id`), for a reader to pin (`$KEYCHAIN_VAULT_ID`); nil when none.
    public func id() throws(KeychainError) -> String? { try vaultID() }

    /// The vault's id as this store first read it, for reads (a listing checks 10,000 signatures
    /// against one id); a write reads the file under the lock.
    func knownVaultID() throws(KeychainError) -> String? {
        if let known = readVaultID.withLock({ $0 }) { return known }
        let id = try vaultID()
        readVaultID.withLock { $0 = id }
        return id
    }

    /// The vault's id, made now (32 random hexadecimal digits) when it has none: the caller holds
    /// the lock, or makes the vault.
    func vaultIDMade() throws(KeychainError) -> String {
        if let id = try vaultID() { return id }
        let id = signing.expectedVaultID ?? Self.newVaultID()
        do {
            try writeFileAtomically(path(Self.vaultIDFile), Array("\(id)\n".utf8))
        } catch {
            throw .vaultIO(detail: error.description)
        }
        return id
    }

    static func newVaultID() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        fillWithSystemRandomBytes(&bytes)
        return bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The signature of `content`, the vault's file at `file` (relative); nil when this store
    /// does not sign.
    func signature(of content: [UInt8], file: String) throws(KeychainError) -> [UInt8]? {
        guard signing.signs else { return nil }
        guard Self.hasRoomForSignature(file) else {
            throw .invalidName(
                kind: "key",
                reason: "it is longer than a signed tree vault's names can be (at most "
                    + "\(TreeVaultNames.longestSignedKey) bytes escaped, so that KEY.age.sig is a file name)")
        }
        return try signing.signature(of: content, vault: try vaultIDMade(), file: file)
    }

    /// That a signature can be written beside each of `files`: none has a directory or another
    /// kind of file where its `.sig` goes (git can bring one), so no item is written without one.
    /// - Throws: ``KeychainError/itemCorrupt(path:reason:)`` naming it.
    func requireSignaturePlaces(for files: [String]) throws(KeychainError) {
        for file in files {
            var info = stat()
            let signatureFile = file + VaultSigning.suffix
            guard lstat(signatureFile, &info) != 0 || info.st_mode & S_IFMT == S_IFREG else {
                throw .itemCorrupt(
                    path: signatureFile,
                    reason: "it is where a signature goes, and not a regular file: remove it (git rm -r)")
            }
        }
    }

    /// Whether a signature's file name fits beside the vault's file `relative` (NAME_MAX).
    static func hasRoomForSignature(_ relative: String) -> Bool {
        splitPath(relative).name.utf8.count + VaultSigning.suffix.utf8.count <= 255
    }

    /// Puts `signature` beside `file`, or, when nil, removes the one there (made for what the file
    /// held before; an item whose name leaves no room for one has none).
    func writeSignature(_ signature: [UInt8]?, of file: String) throws {
        let signatureFile = file + VaultSigning.suffix
        guard let signature else {
            if unlink(signatureFile) != 0 && errno == EISDIR { rmdir(signatureFile) }  // one git brought
            if unlink(signatureFile) != 0 && errno != ENOENT && errno != ENAMETOOLONG {
                throw FileError("cannot remove \(quotedPath(signatureFile))")
            }
            return
        }
        try writeFileChecked(signatureFile, signature, sweeping: false, check: writeCheck)
    }

    /// What the signature beside the file at `file` (`relative` in the vault) says of `content`.
    func signatureState(of content: [UInt8], relative: String, file: String) throws(KeychainError) -> SignatureState {
        guard Self.hasRoomForSignature(relative) else {
            return .invalid(reason: "its name is too long for a signature's file beside it, so it cannot be signed")
        }
        let signature: [UInt8]?
        do {
            signature = try readFileIfPresent(
                file + VaultSigning.suffix, limit: Self.maximumSignatureFile, regular: true)
        } catch  where [EISDIR, EINVAL, EFBIG].contains(error.code) {
            // A directory, a FIFO, a file too large (git can bring any): no signature.
            return .invalid(reason: "its signature's file is not a signature (\(error))")
        } catch {
            throw .vaultIO(detail: error.description)
        }
        return try signatureState(of: content, signature: signature, relative: relative)
    }

    /// What `signature` (a signature file's bytes, nil: none) says of `content`, the vault's file
    /// `relative`, in this vault (its id: read again under the lock, else as reads first found it).
    func signatureState(of content: [UInt8], signature: [UInt8]?, relative: String) throws(KeychainError)
        -> SignatureState
    {
        guard let id = try VaultSigning.underLock ? vaultID() : knownVaultID() else {
            return .invalid(reason: "the vault has no id (\(Self.vaultIDFile)), so nothing in it is signed")
        }
        return signing.state(of: content, signature: signature, vault: id, file: relative)
    }

    /// `bytes`, the item's file as read at `file`, once its signature says an allowed signer
    /// signed it. When it does not, both files are read again under the vault's lock (a writer
    /// replaces the item, then its signature); nil when the item is gone by then.
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)``.
    func verified(_ bytes: [UInt8], at address: SecretAddress, file: String) throws(KeychainError) -> [UInt8]? {
        let relative = try Self.relativePath(address)
        let state = try signatureState(of: bytes, relative: relative, file: file)
        if state.isAllowed { return bytes }
        if VaultSigning.underLock { try signing.require(state, what: Self.shown(address), path: file) }
        let again: ([UInt8], SignatureState)?? = try underLock(authenticated: false) {
            () throws(KeychainError) -> ([UInt8], SignatureState)? in
            guard let bytes = try readItem(file) else { return nil }
            return (bytes, try signatureState(of: bytes, relative: relative, file: file))
        }
        guard let again, let (bytes, state) = again else { return nil }
        try signing.require(state, what: Self.shown(address), path: file)
        return bytes
    }

    /// That `.recipients`, as `bytes` hold it, is signed by an allowed signer.
    func requireSigned(recipients bytes: [UInt8]) throws(KeychainError) {
        let file = path(Self.recipientsFile)
        try signing.require(
            try signatureState(of: bytes, relative: Self.recipientsFile, file: file), what: "the recipients list",
            path: file)
    }

    /// That the vault has the id `$KEYCHAIN_VAULT_ID` pins, when one is pinned: a write (a delete
    /// too) changes no other vault.
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)``.
    func requirePinnedID() throws(KeychainError) {
        guard let expected = signing.expectedVaultID, try vaultID() == nil else { return }
        throw .notSigned(
            what: "the vault", path: path(Self.vaultIDFile),
            reason: "it has no id, and $KEYCHAIN_VAULT_ID pins \(escapedForDisplay(expected)): is it another vault?")
    }

    /// Whether this vault is signed: it has `.recipients.sig`.
    public var isSigned: Bool { access(path(Self.recipientsFile + VaultSigning.suffix), F_OK) == 0 }

    /// That `bytes`, `.recipients` as the commit `revision` holds it, with `signature` (its
    /// `.recipients.sig` there), is signed by an allowed signer: a merge of a signed vault
    /// encrypts to no other list (the merge driver).
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)``.
    public func requireSigned(recipients bytes: [UInt8], signature: [UInt8]?, at revision: String)
        throws(KeychainError)
    {
        try signing.require(
            try signatureState(of: bytes, signature: signature, relative: Self.recipientsFile),
            what: "the recipients list at \(revision)", path: path(Self.recipientsFile))
    }

    /// That `.recipients`, as it is now, is signed by an allowed signer (the merge driver, before
    /// it encrypts to a list git may have merged into the work tree).
    public func requireSignedRecipientsNow() throws(KeychainError) {
        guard let bytes = try readSmallFile(path(Self.recipientsFile)) else {
            _ = try recipients()  // its error
            return
        }
        try requireSigned(recipients: bytes)
    }

    /// For reads that require signatures: that `.recipients` is signed, checked once per store.
    func requireSignedRecipients() throws(KeychainError) {
        guard !recipientsVerified.withLock({ $0 }) else { return }
        _ = try recipients()  // verifies
        recipientsVerified.withLock { $0 = true }
    }

    /// That a write may go ahead as to signatures: a vault that is signed (it has
    /// `.recipients.sig`), or whose reads require signatures, takes signed writes only, by a key
    /// the allowed signers list when they are given.
    /// - Throws: ``KeychainError/cannotSign(detail:)``.
    func requireSigner() throws(KeychainError) {
        try requirePinnedID()
        guard signing.signs else {
            if signing.required || isSigned {
                throw .cannotSign(
                    detail: "\(quotedPath(directory)) is a signed vault (it has \(Self.recipientsFile)"
                        + "\(VaultSigning.suffix)), so every write to it is signed, and no signing key was given")
            }
            return
        }
        try signing.requireAllowed()
    }

    /// That a change which signs every item again (a recipients change) can check each first:
    /// a signed vault's needs the allowed signers, or it would sign a forgery planted among them.
    /// - Throws: ``KeychainError/cannotSign(detail:)``.
    func requireCheckedResigning() throws(KeychainError) {
        guard signing.signs, signing.allowed == nil, isSigned else { return }
        throw .cannotSign(
            detail: "this signs every item of \(quotedPath(directory)) again, and checks each first: give the allowed "
                + "signers (--allowed-signers or $KEYCHAIN_ALLOWED_SIGNERS)")
    }
}
