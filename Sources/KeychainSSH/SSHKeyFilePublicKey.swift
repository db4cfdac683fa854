extension SSHPrivateKey {
    /// The public key an OpenSSH private key file holds in the clear, read without its
    /// passphrase (which key signs, before anything asks for it).
    package static func publicKey(ofFile file: [UInt8]) throws(SSHKeyError) -> SSHPublicKey {
        try SSHPublicKey(wire: try OpenSSHKeyFile(file).publicKey)
    }
}
