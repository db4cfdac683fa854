// TEMPORARY stand-in until the agent client lands (helper); deleted then.
package struct SSHAgentSigner: SSHSigner {
    package let publicKey: SSHPublicKey
    package init(socket: String, publicKey: SSHPublicKey, timeout: Double = 30) throws(SSHKeyError) {
        throw .agent("not yet")
    }
    package func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] { throw .agent("not yet") }
}
