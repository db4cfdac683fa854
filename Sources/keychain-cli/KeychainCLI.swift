import ArgumentParser
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

@main
struct KeychainCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychain-cli",
        abstract:
            "Store, read and list secrets in the desktop keyring (the freedesktop Secret Service), "
            + "and hand them to programs.",
        discussion: """
            Secrets are addressed by a service (a namespace: --service, else $KEYCHAIN_SERVICE, \
            else "keychain-cli") and a key. Secrets are never taken from the command line; pipe \
            them in, or type them at the hidden prompt.

              printf '%s' "$TOKEN" | keychain-cli set github-token
              TOKEN=$(keychain-cli get github-token)
              keychain-cli -s ci list --json

            Global options (--service, --timeout) go before or after the command name.

            Exit codes:
              0   success
              1   not found (get, delete, a secret exec or inject needs)
              64  usage error
              65  bad data: empty, too large, not text, a bad import file
              69  backend unavailable: no session bus, no Secret Service, no default keyring
              70  internal error (a bug)
              74  I/O error (a file to read or write)
              75  timed out: the keyring or a prompt did not answer for --timeout seconds
              77  locked and not unlocked (no prompter, prompt dismissed), permission denied
              126, 127  exec: the command cannot be run, or is not found
            """,
        version: "0.1.0",
        subcommands: [
            Set.self, Get.self, Delete.self, Reset.self, List.self, Exec.self, Inject.self, Export.self, Import.self,
            Doctor.self,
        ]
    )

    @OptionGroup var globals: GlobalOptions

    /// Parses, runs, and turns every error into one line on stderr and the exit code of the README.
    static func main() {
        InheritedSignals.record()
        if let status = FastPath.run(CommandLine.arguments.dropFirst()) {
            Glibc.exit(status)
        }
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            Glibc.exit(reportingFailure(error))
        }
    }
}
