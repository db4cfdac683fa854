import KeychainSystem

/// What a recipient type gives age's header: a stanza wrapping the file key for one public key.
package protocol AgeRecipient: Sendable {
    func wrap(_ fileKey: [UInt8]) throws -> AgeFile.Stanza
}

/// What opens a recipient type's stanzas: a private key.
package protocol AgeIdentity: Sendable {
    /// The stanza type it opens (`X25519`, `ssh-ed25519`).
    var stanzaType: String { get }
    /// The recipient it is the identity of, as `vault recipients` prints it.
    var recipientText: String { get }
    /// The file key `stanza` wraps for this identity, or nil when it is made for another one.
    /// Throws for a malformed stanza.
    func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]?
    /// Whether it may be the identity of `recipient` (a ``VaultRecipient/key``): for a key, when
    /// it is its recipient; for a plugin's, when the recipient is of the same plugin.
    func mayBeIdentity(of recipient: String) -> Bool
}

extension AgeIdentity {
    package func mayBeIdentity(of recipient: String) -> Bool { recipientText == recipient }
}

/// A public key a team vault is encrypted to: an age X25519 recipient (`age1…`), an age plugin's
/// (`age1NAME1…`, wrapped by `age-plugin-NAME`) or an OpenSSH ed25519 public key
/// (`ssh-ed25519 AAAA… comment`), as `age -r` and `age -R` take them.
public struct VaultRecipient: Sendable, Hashable, CustomStringConvertible {
    /// The key alone, `age1…` or `ssh-ed25519 AAAA…`: what two recipients are compared by.
    public let key: String
    /// What follows an ssh key (its comment, often user@host), or "".
    public let comment: String
    package let recipient: any AgeRecipient

    /// The recipient `text` names.
    /// - Throws: ``RecipientError`` saying what is wrong with it.
    public init(_ text: String) throws(RecipientError) {
        let text = String(text.trimming(trailing: false, where: isSpaceOrTab).trimming(leading: false))
        if text.hasPrefix("age1"), let plugin = AgePlugin.Recipient(text) {
            (key, comment, recipient) = (plugin.encoded, "", plugin)
        } else if text.hasPrefix("age1") {
            guard let x25519 = AgeX25519.Recipient(text) else {
                throw RecipientError(
                    "\(quotedValue(text, expected: "a recipient")) is not a valid age recipient (age1… or a plugin's "
                        + "age1NAME1…, with a correct checksum)", kind: .invalidAgeRecipient)
            }
            (key, comment, recipient) = (x25519.encoded, "", x25519)
        } else if text.hasPrefix("ssh-ed25519 ") {
            guard let ssh = AgeSSHEd25519.Recipient(text) else {
                // Its key part is shown only when it does not look like a secret pasted there.
                let shown =
                    secretKind(inAnyPartOf: text) == nil ? "'\(escapedForDisplay(String(text.prefix(40))))…' " : ""
                throw RecipientError(
                    "\(shown.isEmpty ? "the ssh-ed25519 line given " : shown)is not a valid ssh-ed25519 public key. "
                        + "Give the whole line of the .pub file (ssh-ed25519 AAAA… comment)")
            }
            let fields = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            (key, comment, recipient) = (ssh.encoded, fields.count > 2 ? String(fields[2]) : "", ssh)
        } else if let registered = try AgeRecipientTypes.parse(text) {
            (key, comment, recipient) = registered
        } else if text.hasPrefix("ssh-") || text.hasPrefix("ecdsa-") || text.hasPrefix("sk-") {
            let type = text.prefix { $0 != " " }
            throw RecipientError(
                "\(type) keys cannot be vault recipients: use an ssh-ed25519 key or an age key",
                kind: .unsupportedKeyType)
        } else if text.hasPrefix("AGE-SECRET-KEY-") || text.hasPrefix("AGE-PLUGIN-") {
            throw RecipientError(
                "that is an identity (a private key, or a plugin's), not a recipient: give its public key, age1… "
                    + "(the '# public key:' line of the identity file, or the recipient its plugin printed)")
        } else {
            // Not repeated: a file given by mistake (an env file) may hold secrets.
            throw RecipientError(
                "it is neither an age recipient (age1…, age1NAME1…) nor an ssh-ed25519 public key (its text is not repeated "
                    + "here, in case it is a secret)")
        }
    }

    /// The recipients of a recipients file as `age -R` reads it: one per line, `#` comments and
    /// blank lines ignored.
    public static func parse(recipientsFile text: String) throws(RecipientError) -> [VaultRecipient] {
        var recipients: [VaultRecipient] = []
        // Lines split on bytes (TextLines.swift): "\r\n" is one Character, so CRLF files need it.
        for (number, line) in lines(of: text) {
            if line.unicodeScalars.allSatisfy(\.properties.isWhitespace) || line.hasPrefix("#") { continue }
            do {
                recipients.append(try VaultRecipient(String(line)))
            } catch {
                throw RecipientError("line \(number): \(error.description)")
            }
        }
        return recipients
    }

    /// The key, then the comment if there is one.
    public var description: String { comment.isEmpty ? key : "\(key) \(comment)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.key == rhs.key }
    public func hash(into hasher: inout Hasher) { hasher.combine(key) }
}

/// Why a recipient was refused.
public struct RecipientError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// Which mistake it is, for a caller that says what to do next.
    public var kind: Kind

    public enum Kind: Sendable, Equatable {
        /// An age1… recipient whose checksum or encoding is wrong (mistyped, cut short).
        case invalidAgeRecipient
        /// A public key of a type vaults cannot be encrypted to (RSA, ECDSA, a security key's).
        case unsupportedKeyType
        case other
    }

    init(_ description: String, kind: Kind = .other) { (self.description, self.kind) = (description, kind) }
}

/// A private key that opens vaults encrypted to its recipient: an age X25519 identity
/// (`AGE-SECRET-KEY-1…`, as age-keygen writes it), an age plugin's identity (`AGE-PLUGIN-NAME-1…`,
/// used by `age-plugin-NAME`) or an unencrypted OpenSSH ed25519 private key.
public struct VaultIdentity: Sendable {
    package let key: any AgeIdentity

    /// A new random X25519 identity.
    public init() { key = AgeX25519.Identity() }

    package init(key: any AgeIdentity) { self.key = key }

    /// Its recipient: `age1…`, or `ssh-ed25519 AAAA…`; for a plugin's identity, which only the
    /// plugin knows, "an identity of age-plugin-NAME".
    public var recipient: String { key.recipientText }

    /// Whether it may open what is encrypted to one of `recipients`: its own recipient is one, or,
    /// for a plugin's identity, a recipient of the same plugin is (only the plugin could tell).
    public func mayOpen(_ recipients: [VaultRecipient]) -> Bool {
        recipients.contains { key.mayBeIdentity(of: $0.key) }
    }

    /// The `AGE-SECRET-KEY-1…` line of an X25519 identity file; nil for an ssh key.
    public var secretKeyLine: String? { (key as? AgeX25519.Identity)?.encoded }

    /// The identities of an identity file as `age -i` reads it: `AGE-SECRET-KEY-1…` and
    /// `AGE-PLUGIN-NAME-1…` lines, `#`
    /// comments and blank lines; or an unencrypted OpenSSH ed25519 private key.
    public static func parse(identityFile text: String) -> Result<[VaultIdentity], IdentityFileError> {
        if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") {
            do {
                return .success([VaultIdentity(key: try AgeSSHEd25519.Identity(openSSH: text))])
            } catch {
                return .failure(error)
            }
        }
        var identities: [VaultIdentity] = []
        for (number, line) in lines(of: text) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if let key = AgeX25519.Identity(String(line)) {
                identities.append(VaultIdentity(key: key))
            } else if let key = AgePlugin.Identity(String(line)) {
                identities.append(VaultIdentity(key: key))
            } else {
                return .failure(
                    IdentityFileError(
                        line: number, reason: "it is neither an AGE-SECRET-KEY-1 nor an AGE-PLUGIN-NAME-1 identity"))
            }
        }
        return identities.isEmpty
            ? .failure(IdentityFileError(line: nil, reason: "it holds no identity")) : .success(identities)
    }
}

/// Why an identity file was refused: the line at fault when there is one, and why.
public struct IdentityFileError: Error, Sendable, CustomStringConvertible {
    public var line: Int?
    public var reason: String

    /// `its line 3: …` or the reason alone.
    public var description: String { line.map { "its line \($0): \(reason)" } ?? reason }
}
