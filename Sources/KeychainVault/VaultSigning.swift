import Crypto
import FoundationEssentials
import KeychainSSH
import KeychainStore
import KeychainSystem

/// Who signs a vault's writes, and whose signatures its reads accept (docs/backends/vault.md,
/// "Signed vaults").
///
/// Each signed file has its signature beside it (`KEY.age.sig`, `.recipients.sig`,
/// `vault.age.sig`): OpenSSH's SSHSIG, armoured, in the namespace ``namespace``, over
/// ``message(vault:file:content:)``, which binds the file's bytes to its name in the vault and
/// to the vault's id, so that a signed file moved to another name or copied from another vault
/// does not verify. `ssh-keygen -Y verify` checks it, and accepts what `ssh-keygen -Y sign` made.
public struct VaultSigning: Sendable {
    /// The SSHSIG namespace of every signature (`ssh-keygen -Y sign|verify -n keychain-cli-vault`).
    public static let namespace = "keychain-cli-vault"
    /// What a signature's file name adds to the name of the file it signs.
    public static let suffix = ".sig"
    /// The vault id a single-file vault's signature names, unless one is pinned: its file is the
    /// whole vault.
    public static let singleFileVault = "-"

    /// The vault id a single-file vault's signatures name.
    var singleFileVaultID: String { expectedVaultID ?? Self.singleFileVault }

    /// Gives the key that signs every file a write writes, asked at each write that signs (a read
    /// asks nothing: no passphrase, no agent); the source keeps what it opened. nil: writes are
    /// unsigned (refused on a signed vault).
    private let signerSource: (@Sendable () throws(KeychainError) -> any SSHSigner)?
    /// Whose signatures verify; nil: none given (a report names each key, and nothing is required).
    let allowed: AllowedSigners?
    /// Whether every read verifies before it decrypts, and a write verifies the recipients it
    /// encrypts to: `--require-signed`.
    public let required: Bool
    /// The vault id the reader expects (`$KEYCHAIN_VAULT_ID`): a tree vault with another
    /// `.vault-id` is refused, and a vault file's signatures name it instead of `-`. nil: any.
    public let expectedVaultID: String?

    /// Whether this thread holds the vault's lock: a signature that does not verify then cannot be
    /// a writer's moment between replacing a file and its signature, and is not read again.
    @TaskLocal static var underLock = false

    /// Runs `body` marked as holding the vault's lock.
    static func holdingLock<Result>(_ body: () throws(KeychainError) -> Result) throws(KeychainError) -> Result {
        do {
            return try $underLock.withValue(true) { try body() }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw .vaultIO(detail: "\(error)")
        }
    }

    /// Nothing signed, nothing required: a vault as it was before signatures.
    public static let none = VaultSigning()

    package init(
        signer: (@Sendable () throws(KeychainError) -> any SSHSigner)? = nil, allowed: AllowedSigners? = nil,
        required: Bool = false, expectedVaultID: String? = nil
    ) {
        self.expectedVaultID = expectedVaultID
        signerSource = signer
        self.allowed = allowed
        self.required = required
    }

    /// Whether writes are signed.
    public var signs: Bool { signerSource != nil }

    /// Whether what is read must verify: with `--require-signed`, and for a writer that signs
    /// given allowed signers, whose every read checks as `--require-signed` does (what a write
    /// reads it may sign again: an allowed signer's key must never vouch for a forgery).
    var verifiesNow: Bool { required || (signs && allowed != nil) }

    /// The key that signs.
    /// - Throws: ``KeychainError/cannotSign(detail:)`` when there is none, or what its source throws.
    func signer() throws(KeychainError) -> any SSHSigner {
        guard let signerSource else { throw .cannotSign(detail: "no signing key was given") }
        return try signerSource()
    }

    /// The bytes a signature covers: a fixed first line, the vault's id, the file's path in the
    /// vault (its names escaped as they are on disk) and the SHA-256 of its bytes, each on a line.
    /// `printf 'keychain-cli-vault-signature v1\nvault %s\nfile %s\nsha256 %s\n' …` makes the same
    /// bytes, for `ssh-keygen -Y sign` and `-Y verify`.
    public static func message(vault: String, file: String, content: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var message = Array("keychain-cli-vault-signature v1\nvault \(vault)\nfile \(file)\nsha256 ".utf8)
        for byte in SHA256.hash(data: content) {
            message += [digits[Int(byte >> 4)], digits[Int(byte & 15)]]
        }
        message.append(0x0A)
        return message
    }

    /// That `bytes`, the allowed signers file at `path`, have the SHA-256 `pinned`: 64
    /// hexadecimal digits (as sha256sum prints it) or `SHA256:` and unpadded base64.
    /// - Throws: ``KeychainError/badConfiguration(detail:)`` for a pin that is neither,
    ///   ``KeychainError/notSigned(what:path:reason:)`` for another file.
    public static func checkPin(_ bytes: [UInt8], pinned: String, path: String) throws(KeychainError) {
        let digest = Array(SHA256.hash(data: bytes))
        let hex = digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        var base64 = Data(digest).base64EncodedString()
        while base64.hasSuffix("=") { base64.removeLast() }
        let given = pinned.lowercased()
        var encoded = pinned.hasPrefix("SHA256:") ? String(pinned.dropFirst(7)) : ""
        while encoded.hasSuffix("=") { encoded.removeLast() }  // padded or not, as tools print it
        let isHex = given.count == 64 && given.allSatisfy(\.isHexDigit)
        let isBase64 = encoded.count == 43 && Data(base64Encoded: encoded + "=") != nil
        guard isHex || isBase64 else {
            throw .badConfiguration(
                detail: "KEYCHAIN_ALLOWED_SIGNERS_SHA256 is not a SHA-256: give 64 hexadecimal digits "
                    + "(sha256sum FILE) or SHA256:BASE64")
        }
        guard isHex ? given == hex : encoded == base64 else {
            throw .notSigned(
                what: "the allowed signers file", path: path,
                reason: "its SHA-256 is \(hex), not the one $KEYCHAIN_ALLOWED_SIGNERS_SHA256 pins (was it changed?)")
        }
    }

    /// The armoured signature of `content`, the file `file` of the vault `vault`.
    /// - Throws: ``KeychainError/cannotSign(detail:)`` when there is no signer or it fails.
    func signature(of content: [UInt8], vault: String, file: String) throws(KeychainError) -> [UInt8] {
        let signer = try signer()
        do {
            let signature = try SSHSignature.sign(
                Self.message(vault: vault, file: file, content: content), namespace: Self.namespace, with: signer)
            return Array(signature.armored.utf8)
        } catch {
            throw .cannotSign(detail: "the key \(signer.publicKey.fingerprint) did not sign (\(error))")
        }
    }

    /// What the signature file's bytes `signature` (nil: there is none) say of `content`, the
    /// file `file` of the vault `vault`, at `date`.
    public func state(of content: [UInt8], signature: [UInt8]?, vault: String, file: String, at date: Date = Date())
        -> SignatureState
    {
        guard let signature else { return .unsigned }
        let parsed: SSHSignature
        do {
            parsed = try SSHSignature(armored: signature)
        } catch {
            return .invalid(reason: "its signature file is not an SSH signature (\(error))")
        }
        guard parsed.namespace == Self.namespace else {
            return .invalid(
                reason: "it is signed for another purpose (namespace \(escapedForDisplay(parsed.namespace)))")
        }
        do {
            guard
                try parsed.verify(Self.message(vault: vault, file: file, content: content), namespace: Self.namespace)
            else {
                return .invalid(
                    reason: "its signature is not of this content at this name in this vault (changed, moved, "
                        + "or copied from another vault)")
            }
        } catch {
            return .invalid(reason: "its signature cannot be checked (\(error))")
        }
        let key = parsed.publicKey
        guard let allowed else { return .signedByUnknown(fingerprint: key.fingerprint) }
        let principals = allowed.principals(for: key, namespace: Self.namespace, at: date)
        guard !principals.isEmpty else {
            return allowed.lists(key)
                ? .signedByKeyNotAllowedNow(fingerprint: key.fingerprint)
                : .signedByUnknown(fingerprint: key.fingerprint)
        }
        return .signed(principals: principals, fingerprint: key.fingerprint)
    }

    /// That `signer` is one the allowed signers list, when they are given: its signatures would
    /// verify nowhere else.
    /// - Throws: ``KeychainError/cannotSign(detail:)``.
    func requireAllowed() throws(KeychainError) {
        let signer = try signer()
        guard let allowed, allowed.principals(for: signer.publicKey, namespace: Self.namespace, at: Date()).isEmpty
        else { return }
        throw .cannotSign(
            detail: "the signing key \(signer.publicKey.fingerprint) is not one the allowed signers list for "
                + "\(Self.namespace), so no reader would accept its signatures")
    }

    /// `state`, required to be ``SignatureState/signed(principals:fingerprint:)``.
    /// - Throws: ``KeychainError/notSigned(what:path:reason:)`` naming `what` and `path`.
    func require(_ state: SignatureState, what: String, path: String) throws(KeychainError) {
        guard case .signed = state else { throw .notSigned(what: what, path: path, reason: state.description) }
    }
}

extension VaultSigning {
    /// The doctor's line on `report` (each file and its signature's state): what the signatures
    /// say, or the first file an allowed signer did not sign. With no allowed signers given, any
    /// valid signature passes (nothing says whose must).
    static func summary(of report: [(what: String, path: String, state: SignatureState)], checked: Bool)
        throws(KeychainError) -> String
    {
        let refused = report.filter { entry in
            switch entry.state {
            case .signed: false
            case .signedByUnknown: checked
            case .signedByKeyNotAllowedNow, .unsigned, .invalid: true
            }
        }
        if let first = refused.first {
            throw .notSigned(
                what: first.what, path: first.path,
                reason: first.state.description
                    + (refused.count > 1 ? " (and \(refused.count - 1) more: vault verify lists them)" : ""))
        }
        let files = "\(report.count) file\(report.count == 1 ? "" : "s")"
        return checked
            ? "\(files) signed by allowed signers" : "\(files) signed (not checked: no allowed signers given)"
    }
}

/// What a vault file's signature says (``VaultSigning/state(of:signature:vault:file:at:)``).
public enum SignatureState: Sendable, Equatable, CustomStringConvertible {
    /// Signed by a key the allowed signers list for these principals.
    case signed(principals: [String], fingerprint: String)
    /// A valid signature by a key no allowed signer has (or with no allowed signers given).
    case signedByUnknown(fingerprint: String)
    /// A valid signature by a key the allowed signers list, but not for this namespace now
    /// (`valid-before` passed, `valid-after` not yet, or `namespaces` without ours).
    case signedByKeyNotAllowedNow(fingerprint: String)
    /// No signature file.
    case unsigned
    /// A signature that does not verify, or no signature at all.
    case invalid(reason: String)

    /// Whether it is signed by an allowed signer.
    public var isAllowed: Bool {
        if case .signed = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .signed(let principals, let fingerprint):
            return "signed by \(principals.map(escapedForDisplay).joined(separator: ", ")) (\(fingerprint))"
        case .signedByUnknown(let fingerprint):
            return "signed by \(fingerprint), a key no allowed signer has"
        case .signedByKeyNotAllowedNow(let fingerprint):
            return "signed by \(fingerprint), a key the allowed signers list but do not allow to sign "
                + "\(VaultSigning.namespace) now (valid-before, valid-after or namespaces)"
        case .unsigned: return "it is not signed"
        case .invalid(let reason): return reason
        }
    }
}
