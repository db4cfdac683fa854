import ArgumentParser
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    struct Lock: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lock the vault unlock holds open (--all: every vault).",
            discussion: """
                Makes your holder forget the vault's file key: the next command on it asks for \
                its passphrase again. A vault that is not unlocked is no error, so that a script \
                can lock on its way out whatever happened before.

                  trap 'keychain-cli lock' EXIT
                  keychain-cli lock --all
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Lock every vault the holder holds.")
        var all = false

        func run() throws {
            let vault = all ? nil : try settings.vaultPath()
            let request = HolderRequest(.forget, vault: vault.map(HolderRequest.vaultKey))
            let reply = try HolderProcess.ask(
                request, place: HolderPlace.current(), start: nil, timeout: try settings.resolvedTimeout())
            let count = reply?.count ?? 0
            if let vault {
                warn(count > 0 ? "\(vault) is locked" : "\(vault) was not unlocked")
            } else {
                warn(count == 1 ? "1 vault is locked" : "\(count) vaults are locked")
            }
        }
    }
}
