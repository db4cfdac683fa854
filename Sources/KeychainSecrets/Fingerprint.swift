import Crypto

/// The SHA-256 of a secret: what `--clip`'s clearer keeps instead of the secret, to tell whether
/// the clipboard still holds it.
package func secretFingerprint(_ bytes: some Collection<UInt8>) -> [UInt8] {
    Array(SHA256.hash(data: Array(bytes)))
}
