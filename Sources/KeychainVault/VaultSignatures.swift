import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// A signed single-file vault (``VaultSigning``): the file is signed whole, its signature beside
// it (`vault.age.sig`), over a message naming the file's own name (a vault copied over another of
// another name does not verify); what it holds, its recipients among them, is covered by it.
extension VaultStore {
    /// The vault's name as a signature names it, and where its signature is: the path given, not
    /// the file a link there leads to (a link to another vault of another name is that vault).
    var signedName: String { splitPath(path).name }
    var signatureFile: String { path + VaultSigning.suffix }

    /// What the vault's signature says of `content`, the vault file's bytes.
    func signatureState(of content: [UInt8]) throws(KeychainError) -> SignatureState {
        let signature: [UInt8]?
        do {
            signature = try readFileIfPresent(
                signatureFile, limit: TreeVaultStore.maximumSignatureFile, regular: true)
        } catch {
            throw .vaultIO(detail: error.description)
        }
        return signing.state(
            of: content, signature: signature, vault: signing.singleFileVaultID, file: signedName)
    }

    /// `bytes`, the vault file as read, once its signature says an allowed signer signed it;
    /// when it does not, both are read again under the vault's lock (a writer replaces the
    /// file, then its signature); nil when the vault is gone by then.
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)``.
    func verified(_ bytes: [UInt8]) throws(KeychainError) -> [UInt8]? {
        let file = filePath
        let state = try signatureState(of: bytes)
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
                return (bytes, try signatureState(of: bytes))
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

    /// The signature of the vault file `content` to be written; nil when this store does not sign.
    func signature(of content: [UInt8]) throws(KeychainError) -> [UInt8]? {
        guard signing.signs else { return nil }
        return try signing.signature(of: content, vault: signing.singleFileVaultID, file: signedName)
    }

    /// Puts `signature` beside the vault, or, when nil, removes the one there.
    func writeSignature(_ signature: [UInt8]?) throws {
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
            if signing.required || access(signatureFile, F_OK) == 0 {
                throw .cannotSign(
                    detail:
                        "\(quotedPath(path)) is a signed vault (it has \(quotedPath(signatureFile))), "
                        + "so every write to it is signed, and no signing key was given")
            }
            return
        }
        // Each write signs the whole file again, what others wrote in it too: it checks it first.
        if signing.allowed == nil && access(signatureFile, F_OK) == 0 {
            throw .cannotSign(
                detail: "a write signs all of \(quotedPath(path)) again, and checks it first: give the allowed signers "
                    + "(--allowed-signers or $KEYCHAIN_ALLOWED_SIGNERS)")
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
                if signing.allowed != nil, try signatureState(of: bytes).isAllowed { return false }
                try writeSignature(try signature(of: bytes))
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
        return (file, try signatureState(of: bytes))
    }
}
