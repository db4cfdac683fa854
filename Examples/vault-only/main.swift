// A program on the KeychainVault product alone: the facade over an age vault file, with no
// Secret Service, libsecret, GIO, libgcrypt or libcurl linked (LibraryLinkTests checks with ldd).
//
// Usage: vault-only VAULT-FILE KEY  (the passphrase on stdin, the secret to store as the
// environment's VAULT_ONLY_SECRET; prints the secret read back)
import FoundationEssentials
import Glibc
import KeychainFacade
import KeychainStore
import KeychainVault

func fail(_ message: String, status: Int32) -> Never {
    let bytes = Array("vault-only: \(message)\n".utf8)
    _ = write(STDERR_FILENO, bytes, bytes.count)
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let secret = getenv("VAULT_ONLY_SECRET").map({ String(cString: $0) }) else {
    fail("usage: VAULT_ONLY_SECRET=… vault-only VAULT-FILE KEY < passphrase", status: 2)
}
let passphrase = Array((readLine(strippingNewline: true) ?? "").utf8)
do {
    let store = VaultStore(path: arguments[1], workFactor: 10) { _ in passphrase }
    let keychain = try Keychain(service: "vault-only", store: store)
    let key = try KeychainKey(arguments[2])
    try keychain.set(secret, for: key)
    keychain.removeCachedSecrets()
    print(try keychain.string(for: key) ?? "(missing)")
} catch {
    fail("\(error)", status: 1)
}
