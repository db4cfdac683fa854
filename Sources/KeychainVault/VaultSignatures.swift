import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// A signed single-file vault (``VaultSigning``): the file is signed whole, its signature beside
// it (`vault.age.sig`), over a message naming the file's own name (a vault copied over another of
// another name does not verify); what it holds, its recipients among them, is covered by it.
extension VaultStore {
    /// What the signature beside `file` (the vault file) says of `content`.
    func signatureState(of content: [UInt8], file: String) throws(KeychainError) -> SignatureState {
        let signature: [UInt8]?
        do {
            signature = try readFileIfPresent(
                file + VaultSigning.suffix, limit: TreeVaultStore.maximumSignatureFile, regular: true)
        } catch {
            throw .vaultIO(detail: error.description)
        }
        return signing.state(
            of: content, signature: signature, vault: VaultSigning.singleFileVault, file: splitPath(file).name)
    }

    /// `bytes`, the vault file as read, once its signature says an allowed signer signed it;
    /// when it does not, both are read again under the vault's lock (a writer replaces the
    /// file, then its signature); nil when the vault is gone by then.
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)``.
    func verified(_ bytes: [UInt8]) throws(KeychainError) -> [UInt8]? {
        let file = filePath
        let state = try signatureState(of: bytes, file: file)
        if state.isAllowed { return bytes }
        if VaultSigning.underLock { try signing.require(state, what: "the vault", path: file) }
        let again: ([UInt8], SignatureState)??
        do {
            again = try withDirectoryLock(splitPath(file).directory, timeout: lockTimeout) {
                () throws(KeychainError) -> ([UInt8], SignatureState)? in
                let bytes: [UInt8]?
                do {
                    bytes = try readFileIfPresent(file, limit: Self.maximumFileSize, regular: true)
                } catch {
                    throw .vaultIO(detail: "\(error)")
                }
                guard let bytes else { return nil }
                return (bytes, try signatureState(of: bytes, file: file))
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw .vaultIO(detail: "\(error)")
        }
        guard let again else { throw .vaultBusy(path: path, seconds: lockTimeout) }
        guard let (bytes, state) = again else { return nil }
        try signing.require(state, what: "the vault", path: file)
        return bytes
    }

    /// The signature of the vault file `content` to be written at `file`; nil when this store
    /// does not sign.
    func signature(of content: [UInt8], at file: String) throws(KeychainError) -> [UInt8]? {
        guard signing.signs else { return nil }
        return try signing.signature(of: content, vault: VaultSigning.singleFileVault, file: splitPath(file).name)
    }

    /// Puts `signature` beside `file`, or, when nil, removes the one there.
    func writeSignature(_ signature: [UInt8]?, of file: String) throws {
        let signatureFile = file + VaultSigning.suffix
        guard let signature else {
            if unlink(signatureFile) != 0 && errno != ENOENT {
                throw FileError("cannot remove \(quotedPath(signatureFile))")
            }
            return
        }
        try writeFileChecked(signatureFile, signature, check: writeCheck)
    }

    /// That a write may go ahead as to signatures (see ``TreeVaultStore``'s): a signed vault (it
    /// has `PATH.sig`), or one whose reads require signatures, takes signed writes only.
    func requireSigner() throws(KeychainError) {
        guard signing.signs else {
            if signing.required || access(filePath + VaultSigning.suffix, F_OK) == 0 {
                throw .cannotSign(
                    detail:
                        "\(quotedPath(path)) is a signed vault (it has \(quotedPath(filePath + VaultSigning.suffix))), "
                        + "so every write to it is signed, and no signing key was given")
            }
            return
        }
        try signing.requireAllowed()
    }

    /// Signs the vault file as it is now, under its lock. - Returns: false when it was signed by
    /// an allowed signer already, or there is no vault.
    public func signAll() throws(KeychainError) -> Bool {
        try signing.requireAllowed()
        let file = filePath
        let signed: Bool?
        do {
            // Signing reads no secret: the signer need not open the vault.
            signed = try withDirectoryLock(splitPath(file).directory, timeout: lockTimeout) { () throws -> Bool in
                guard let bytes = try readFileIfPresent(file, limit: Self.maximumFileSize, regular: true) else {
                    return false
                }
                if signing.allowed != nil, try signatureState(of: bytes, file: file).isAllowed { return false }
                try writeSignature(try signature(of: bytes, at: file), of: file)
                return true
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw .vaultIO(detail: "\(error)")
        }
        guard let signed else { throw .vaultBusy(path: path, seconds: lockTimeout) }
        return signed
    }

    /// What the vault file's signature says (`vault verify`, `doctor`); nil when there is no vault.
    public func signatureReport() throws(KeychainError) -> (path: String, state: SignatureState)? {
        let file = filePath
        let bytes: [UInt8]?
        do {
            bytes = try readFileIfPresent(file, limit: Self.maximumFileSize, regular: true)
        } catch {
            throw .vaultIO(detail: error.description)
        }
        guard let bytes else { return nil }
        return (file, try signatureState(of: bytes, file: file))
    }
}
