import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Env: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "env",
            abstract: "Print shell lines that export secrets, for eval in direnv's .envrc, mise or a shell.",
            discussion: """
                Reads every variable exec would set from --env, --env-file and --from (see exec: a \
                .env file's literals pass as they are, its keychain://SERVICE/KEY values are read), \
                all before anything is printed: if one cannot be read, nothing is printed and the \
                exit is as for get (1 when missing). Then prints one line per variable, quoted for \
                --shell so that eval reads each value back byte for byte as data: $( ), backticks, \
                quotes, line breaks and bytes that are not UTF-8 run nothing. posix (the default: \
                dash, bash, zsh, ksh) writes export NAME='value'; bash and zsh write $'…' with \\xHH \
                for control characters; fish writes set -gx NAME with \\XHH outside quotes. A value \
                with a NUL byte cannot be a variable (65). The lines hold the secrets: eval them, \
                do not keep them in a file.

                  eval "$(keychain-cli env --env-file .env.keychain)"        # in .envrc
                  keychain-cli env --from ci --shell fish | source
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @OptionGroup var sources: VariableSources

        @Option(help: ArgumentHelp("The shell that reads the lines: posix, bash, zsh or fish.", valueName: "shell"))
        var shell: ShellDialect = .posix

        func validate() throws {
            if sources.isEmpty {
                throw ValidationError("give at least one --env NAME=KEY, an --env-file or a --from SERVICE")
            }
        }

        func run() throws {
            let keychain = try keychain()
            var variables = try sources.read(
                try sources.parsedMappings(), from: keychain, outcome: "nothing was printed", text: false)
            defer { for index in variables.indices { wipe(&variables[index].value) } }
            var text: [UInt8] = []
            defer { wipe(&text) }
            for variable in variables { text += shell.exportLine(name: variable.name, value: variable.value) }
            try settings.writeResult(to: nil) { sink throws(FileError) in try sink.write(text) }
        }
    }
}

extension ShellDialect: ExpressibleByArgument {}
