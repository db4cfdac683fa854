import Glibc
import KeychainCore

/// The editor `edit` opens a secret in, chosen and run as git runs its own: `$VISUAL`, else
/// `$EDITOR`, else `vi`, through `sh -c '$EDITOR "$@"'`, so that it may hold arguments
/// (`code --wait`, `sed -i s/a/b/`). It gets keychain-cli's terminal (standard input, output and
/// error) and process group: Ctrl-Z stops both, and `fg` continues both; keychain-cli ignores
/// Ctrl-C and Ctrl-\ while it waits (the editor has them), and ends by the same signal when they
/// end the editor.
struct Editor {
    /// The shell command line, and where it came from (for messages).
    let command: String
    let origin: String

    init() {
        // An editor of blanks alone is none: `sh -c ' "$@"'` would run the file itself.
        for name in ["VISUAL", "EDITOR"] {
            if let value = Environment.value(name), value.contains(where: { $0 != " " && $0 != "\t" }) {
                (command, origin) = (value, "$\(name)")
                return
            }
        }
        (command, origin) = ("vi", "the default editor")
    }

    /// Runs the editor on `path`, with `variables` (NAME=value) as its environment, and waits for
    /// it to end.
    /// - Returns: its wait status.
    /// - Throws: ``CommandFailure`` (126) when no shell can be started.
    func run(on path: String, variables: [String]) throws -> Int32 {
        let interrupt = signal(SIGINT, SIG_IGN)
        let quit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, interrupt)
            signal(SIGQUIT, quit)
        }
        var mask = sigset_t()
        sigemptyset(&mask)
        let pid = try spawn(
            ["/bin/sh", "-c", command + " \"$@\"", command] + memoryOnlyArguments + [path], mask: mask,
            variables: variables, ownArguments: true,
            resetting: [SIGINT, SIGQUIT])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status
    }

    /// Vim and Neovim keep copies of what they edit elsewhere (a swap file, a backup, an undo
    /// file, registers in viminfo or shada, wherever the user's vimrc puts them): turned off for
    /// this file, as pass's redact_pass.vim and gopass do. Other editors are given the file alone.
    private var memoryOnlyArguments: [String] {
        guard let first = command.split(whereSeparator: { $0 == " " || $0 == "\t" }).first,
            let found = executable(named: String(first)), let real = realpath(found, nil)
        else { return [] }
        defer { free(real) }
        let name = String(cString: real).split(separator: "/").last ?? ""
        guard ["vim", "nvim", "gvim"].contains(where: { name.hasPrefix($0) }) else { return [] }
        return ["-n", "-i", "NONE", "-c", "set nobackup nowritebackup noundofile"]
    }

    /// What the editor's wait `status` means for `edit`: nil when it exited 0; otherwise the
    /// failure (the editor not found 127, not runnable 126, else 1), nothing stored.
    func failure(_ status: Int32) -> CommandFailure? {
        let signal = status & 0x7f
        let code = (status >> 8) & 0xff
        if signal == 0 && code == 0 { return nil }
        let named = "the editor \(quotedValue(command, expected: "an editor command")) (\(origin))"
        let next = "Set VISUAL or EDITOR to an editor that waits until you close the file (code --wait)"
        switch (signal, code) {
        case (0, 127):
            return CommandFailure(
                kind: .commandNotFound, message: "cannot find \(named); nothing was stored. \(next)")
        case (0, 126):
            return CommandFailure(kind: .cannotExecute, message: "cannot run \(named); nothing was stored. \(next)")
        case (0, _):
            return CommandFailure(
                kind: .editorFailed,
                message: "\(named) exited with status \(code); nothing was stored. Run edit again to start over")
        default:
            return CommandFailure(
                kind: .editorFailed,
                message: "\(named) was ended by signal \(signal) (\(String(cString: strsignal(signal)))); nothing was "
                    + "stored. Run edit again to start over")
        }
    }
}
