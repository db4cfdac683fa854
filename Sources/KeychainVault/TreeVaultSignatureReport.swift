import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// A tree vault signed whole once reviewed (`vault sign`), and every file's signature reported
// (`vault verify`, `doctor`).
extension TreeVaultStore {
    /// Signs `.recipients` and every item whose signature is not an allowed signer's (all of
    /// them when no allowed signers are given) as they are now, under the vault's lock; the
    /// vault's id is made when it has none. Signing reads no secret: the signer need not be a
    /// recipient. - Returns: how many files were signed, and how many were signed already.
    public func signAll() throws(KeychainError) -> (signed: Int, already: Int) {
        try requireSigner()
        return try underLock(authenticated: false) { () throws(KeychainError) -> (signed: Int, already: Int) in
            var files = [(Self.recipientsFile, path(Self.recipientsFile))]
            for address in try addresses(service: nil) {
                let relative = try Self.relativePath(address)
                // Every name checked before anything is signed: a vault half signed helps nobody.
                guard Self.hasRoomForSignature(relative) else {
                    throw .invalidName(
                        kind: "key",
                        reason: "\(Self.shown(address)) is longer than a signed vault's names can be (at most "
                            + "\(TreeVaultNames.longestSignedKey) bytes escaped); store it under a shorter key first")
                }
                files.append((relative, try itemPath(address)))
            }
            try requireSignaturePlaces(for: files.map(\.1))
            _ = try vaultIDMade()
            var (signed, already) = (0, 0)
            for (relative, file) in files {
                guard let bytes = try relative == Self.recipientsFile ? readSmallFile(file) : readItem(file) else {
                    continue
                }
                if signing.allowed != nil, try signatureState(of: bytes, relative: relative, file: file).isAllowed {
                    already += 1
                    continue
                }
                do {
                    try writeSignature(try signature(of: bytes, file: relative), of: file)
                } catch let error as KeychainError {
                    throw error
                } catch {
                    throw .vaultIO(detail: "\(error)")
                }
                signed += 1
            }
            return (signed, already)
        }
    }

    /// What the signature of `.recipients` and of each item says, in order (`vault verify`,
    /// `doctor`): `what` is "the recipients list" or `SERVICE/KEY`.
    public func signatureReport() throws(KeychainError) -> [(what: String, path: String, state: SignatureState)] {
        let recipientsPath = path(Self.recipientsFile)
        guard let recipients = try readSmallFile(recipientsPath) else {
            _ = try self.recipients()
            return []
        }
        var report = [
            (
                "the recipients list", recipientsPath,
                try signatureState(of: recipients, relative: Self.recipientsFile, file: recipientsPath)
            )
        ]
        for address in try addresses(service: nil) {
            let file = try itemPath(address)
            let state: SignatureState
            do throws(KeychainError) {
                guard let bytes = try readItem(file) else { continue }
                state = try signatureState(of: bytes, relative: try Self.relativePath(address), file: file)
            } catch .itemCorrupt(_, let reason) {
                state = .invalid(reason: reason)
            } catch .vaultIO(let detail) {
                state = .invalid(reason: "it or its signature cannot be read (\(detail))")
            }
            report.append((Self.shown(address), file, state))
        }
        return report
    }
}
