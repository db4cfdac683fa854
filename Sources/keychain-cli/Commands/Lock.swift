import ArgumentParser
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    struct Lock: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lock what unlock holds open: every vault, or the one --vault names.",
            discussion: """
                Makes your holder forget the file keys of the vaults it holds (their decrypted \
                secrets too, and a write still waiting for a vault's lock writes nothing): the \
                next command on one asks for its passphrase again. It locks every vault you \
                unlocked, whatever $KEYCHAIN_VAULT says; with --vault, that vault alone, and it \
                names on stderr the vaults that stay unlocked. A vault that is not \
                unlocked is no error, so that a script can lock on its way out whatever happened \
                before. Exits 75 when the holder does not answer within --timeout.

                  trap 'keychain-cli lock' EXIT
                  keychain-cli --vault ~/work.age lock
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Lock every vault, even with --vault given.")
        var all = false

        func run() throws {
            // --vault alone narrows it: $KEYCHAIN_VAULT is the job's setting, not a choice made at
            // lock time (a relative one may name another file once a step has changed directory).
            let vault = !all && settings.vault != nil ? try settings.vaultPath() : nil
            let reply = try HolderProcess.ask(
                .forget(vault: vault.map(HolderRequest.vaultKey)), place: HolderPlace.current(), start: nil,
                timeout: try settings.resolvedTimeout())
            let (count, held) = if case .forgotten(let count, let held) = reply { (count, held) } else { (0, []) }
            if let vault {
                warn(count > 0 ? "\(vault) is locked" : "\(vault) was not unlocked")
                let others = held.map(\.vault).sorted()
                if !others.isEmpty {
                    warn(
                        "still unlocked: \(others.map { quotedPath($0) }.joined(separator: ", ")); "
                            + "keychain-cli lock --all locks them")
                }
            } else {
                warn(count == 1 ? "1 vault is locked" : "\(count) vaults are locked")
            }
        }
    }
}
