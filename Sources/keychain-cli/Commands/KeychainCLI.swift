import ArgumentParser
import Glibc
import KeychainCore

struct KeychainCLI: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "keychain-cli",
        abstract:
            "Store, read and list secrets in the desktop keyring (the freedesktop Secret Service), "
            + "an encrypted vault file or an OpenBao/Vault server, and hand them to programs.",
        discussion: """
            Secrets are addressed by a service (a namespace: --service, else $KEYCHAIN_SERVICE, \
            else "keychain-cli") and a key: any UTF-8 text but NUL (a key that starts with - \
            goes after --). Secrets are never taken from the command line; pipe them in, or type \
            them at the hidden prompt.

              printf '%s' "$TOKEN" | keychain-cli set github-token
              TOKEN=$(keychain-cli get github-token)
              keychain-cli -s ci list --json

            Global options (--service, --timeout, --backend, --vault, --identity, --passphrase-file, \
            --passphrase-fd) go before or after the command name.

            Without a desktop keyring (CI, servers), choose the vault: an age-encrypted file \
            (age --decrypt opens it) unlocked by one passphrase, from $KEYCHAIN_PASSPHRASE, \
            --passphrase-file, --passphrase-fd or a prompt. Nothing falls back to it silently.

              export KEYCHAIN_BACKEND=vault KEYCHAIN_VAULT=ci/secrets.age
              keychain-cli -s ci exec --env GITHUB_TOKEN=github-token -- ./deploy.sh

            Secrets a team keeps on an OpenBao or HashiCorp Vault server (KV version 2): \
            --backend openbao, with BAO_ADDR and BAO_TOKEN (or VAULT_*, ~/.vault-token, an \
            AppRole: KEYCHAIN_OPENBAO_ROLE_ID and KEYCHAIN_OPENBAO_SECRET_ID, or a CI job's \
            identity token: KEYCHAIN_OPENBAO_JWT and KEYCHAIN_OPENBAO_JWT_ROLE). A service is a \
            secret path under the mount (KEYCHAIN_OPENBAO_MOUNT, default secret), a key one of \
            its fields, as bao kv put secret/ci github-token=… writes them.

              export KEYCHAIN_BACKEND=openbao BAO_ADDR=https://bao.internal:8200
              keychain-cli -s ci get github-token

            Shell completion of commands, options and key names: \
            --generate-completion-script bash|zsh|fish prints the shell's script.

              source <(keychain-cli --generate-completion-script bash)   # in ~/.bashrc

            Exit codes:
              0   success
              1   not found: get (or its --field), show, edit, delete, otp, the SRC
                  of cp or mv, a secret exec or inject needs; vault passwd, vault
                  recipients list and unlock without a vault; scan: a stored secret
                  found; edit: the editor failed
              64  usage error: a bad option or command, or none (-ss get k); a secret
                  on the command line, or a key where a path goes; reset or export
                  without --yes; cp or mv onto SRC itself; a bad key, exec mapping
                  (or one holding a value),
                  template reference, recipient or OpenBao setting; -o naming the
                  vault's own files; serve --allow-exe naming no program; a bad
                  unlock --ttl or --idle; scan with no secret to look for, or --git
                  outside a git work tree
              65  bad data: empty, over 1 MiB, binary where text goes (a terminal,
                  exec, --clip, show, edit), the two entries differ, a bad import
                  file (a field given twice, an empty secret without --allow-empty,
                  an encrypted Bitwarden export, a pass entry linking out of its
                  store, a file keepassxc-cli cannot read), a damaged vault (watch:
                  still damaged once quiet), a seed otp cannot read, a key exec
                  --from or export would turn into PATH, LD_PRELOAD or their kin
              69  backend unavailable: no session bus, Secret Service or default
                  keyring (watch: it left); OpenBao unreachable, untrusted or sealed,
                  its mount missing or not KV version 2; serve: the name is taken
                  (--replace), or dbus-daemon cannot start; --clip without a display
                  or clipboard program; import --format pass without gpg,
                  --format 1password without unzip, --format keepassxc without
                  keepassxc-cli; unlock: the holder cannot start; history, rollback:
                  the backend keeps no versions (a tree vault outside git)
              70  internal error (a bug)
              73  already there: generate found a secret under KEY, or cp and mv one
                  at DST, and kept it (--force replaces it)
              74  I/O error: the vault or another file (--from-file, -i, -o, import,
                  serve --access-log) cannot be read or written, -o a directory,
                  disk or socket, the vault's directory removed under watch, stdout
                  closed; exec and serve: the command's output cannot be written on
                  (a full disk); exec --file and edit: no tmpfs; doctor: a vault or
                  identity file not private to you; unlock and lock: the holder's directory
                  or socket not yours; scan: a missing PATH, or nothing found but
                  some input unreadable
              75  temporary failure, try again: the keyring, a prompt, the vault's
                  lock or age plugin, the OpenBao server, gpg, keepassxc-cli or the
                  holder of unlock timed out (--timeout); --clip: the clipboard, after
                  5 seconds; edit: another writer changed the secret meanwhile; mv:
                  SRC changed while it was moved (both kept)
              77  locked (no prompter, prompt dismissed), reset or export not
                  confirmed, permission denied, a wrong or missing vault passphrase
                  (or new one, vault passwd) or identity, an age plugin missing,
                  failing or needing a terminal, a vault re-keyed under
                  watch, a credential helper that would have to ask, a pass entry gpg
                  cannot decrypt, a KeePass database's wrong password or none (no
                  --source-passphrase-file, --source-passphrase-fd or terminal);
                  OpenBao denied it (token, policy) or no token; a vault file no
                  allowed signer signed (--require-signed), a signing key that cannot
                  sign, vault verify finding an unsigned file
              126, 127  exec and serve -- COMMAND: the command cannot be run, or is
                  not found; edit: its editor
            A reader of standard output that goes away (list | head -1) ends keychain-cli
            quietly by SIGPIPE, as it ends other filters.
            """,
        version: version,
        subcommands: [
            SetCommand.self, Get.self, Show.self, Edit.self, Generate.self, OTP.self, Delete.self, Copy.self,
            Move.self, Reset.self, List.self, Exec.self, Env.self,
            Inject.self, Scan.self, Export.self, Import.self, Watch.self, History.self, Rollback.self,
            GitCredential.self, DockerCredential.self, Vault.self,
            Unlock.self, Lock.self, Serve.self, SSHAgent.self, Doctor.self, Holder.self,
        ]
    )

    @OptionGroup(title: "Global options") var globals: GlobalOptions

    /// No command was named: a script's `TOKEN=$(keychain-cli -ss get k)` (`-ss` is `-s` twice,
    /// which takes `get` and `k` as services) must not read the help text as a token.
    func run() throws {
        throw missingCommand(Self.self, arguments: Array(CommandLine.arguments.dropFirst()))
    }
}
