import ArgumentParser
import Glibc
import KeychainCore

/// Where the variables of `exec` and `env` come from: `--env` mappings, `--env-file` files and
/// every key of `--from` services (`--only`, `--except`, `--prefix`).
struct VariableSources: ParsableArguments {
    @Option(
        name: .customLong("env"),
        help: ArgumentHelp(
            "Set NAME to a secret: NAME=KEY, NAME=SERVICE/KEY or NAME=keychain://SERVICE/KEY. Repeatable.",
            valueName: "mapping"))
    var mappings: [String] = []

    @Option(
        name: .customLong("env-file"),
        help: ArgumentHelp(
            "Read variables from this file: a .env (NAME=value, NAME=keychain://SERVICE/KEY) or NAME=KEY lines. "
                + "Repeatable.", valueName: "path"),
        completion: .file())
    var environmentFiles: [String] = []

    @Option(
        name: .customLong("from"),
        help: ArgumentHelp(
            "Set a variable for every key of SERVICE, named as export --format env names it. Repeatable.",
            valueName: "service"))
    var fromServices: [String] = []

    @Option(help: ArgumentHelp("With --from: only the keys that match this glob. Repeatable.", valueName: "glob"))
    var only: [String] = []

    @Option(help: ArgumentHelp("With --from: not the keys that match this glob. Repeatable.", valueName: "glob"))
    var except: [String] = []

    @Option(help: ArgumentHelp("With --from: put this before every variable name (CI_).", valueName: "text"))
    var prefix: String = ""

    /// Whether no variable is asked for.
    var isEmpty: Bool { mappings.isEmpty && environmentFiles.isEmpty && fromServices.isEmpty }

    /// Whether --only and --except let `key` of a --from service through.
    func selects(_ key: String) -> Bool {
        (only.isEmpty || only.contains { fnmatch($0, key, 0) == 0 }) && !except.contains { fnmatch($0, key, 0) == 0 }
    }

    func validate() throws {
        if fromServices.isEmpty && (!only.isEmpty || !except.isEmpty || !prefix.isEmpty) {
            throw ValidationError("--only, --except and --prefix choose the keys of --from SERVICE; give one")
        }
        if !prefix.isEmpty && !DotEnv.isVariableName(prefix + "X") {
            throw ValidationError("--prefix must start a variable name: letters, digits and _, no digit first")
        }
    }
}
