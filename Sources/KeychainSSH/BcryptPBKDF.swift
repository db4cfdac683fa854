/// OpenSSH's bcrypt_pbkdf: not written yet, so passphrase-protected keys are refused for now.
enum BcryptPBKDF {
    static func derive(passphrase: [UInt8], salt: [UInt8], rounds: Int, count: Int) throws(SSHKeyError) -> [UInt8] {
        throw .unsupported("passphrase-protected private keys (bcrypt_pbkdf is not written yet)")
    }
}
