import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Scan: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find stored secrets in files, directories, a git history or standard input; never print them.",
            discussion: """
                Looks for every secret of the services named by --from (repeatable; default: the \
                service of --service), or of every service (--all-services), on the backend the \
                global options choose, in every form exec masks: as it is, each line of a secret \
                of several, base64 (also wrapped across lines), URL- and JSON-escaped. Secrets \
                shorter than 8 characters are not looked for (a note names them).

                PATH is a file, a directory (read recursively, in name order; links are not \
                followed, FIFOs, devices and sockets are skipped with a note) or - for standard \
                input. --git reads a directory's files as git lists them (tracked, and untracked \
                ones .gitignore does not ignore); --git-history reads, instead of the files, every \
                blob reachable from the refs of the repository PATH is in (with --git too, both). \
                Files are read in blocks: memory does not \
                grow with their size.

                One line per finding: "PATH:LINE: SERVICE/KEY (FORM)", or \
                "COMMIT:PATH:LINE: SERVICE/KEY (FORM)" for history (the commit that added the \
                file's content); FORM is plain, trimmed, line N, base64, base64 of line N, url, \
                json, xml, escaped, unquoted or part. --json prints one JSON object per line: \
                path, line, offset (bytes), service, key, form, and commit for history. The \
                secret, or any part of it, is never printed.

                Exit status: 0 nothing found, 1 a secret found (even where some input could not \
                be read), 74 nothing found but some input could not be read (a note says which), \
                64 a bad option, or no secret to look for.

                  keychain-cli scan --from ci dist/
                  keychain-cli scan --all-services --git --git-history .
                  docker save app | keychain-cli scan --from ci -
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(
            help: ArgumentHelp("Files and directories to scan; - is standard input.", valueName: "path"),
            completion: .file())
        var paths: [String] = []

        @Option(
            name: .customLong("from"),
            help: ArgumentHelp("Look for the secrets of this service (repeatable).", valueName: "service"))
        var from: [String] = []

        @Flag(help: "Look for the secrets of every service.")
        var allServices = false

        @Flag(help: "Read a directory's files as git lists them: .gitignore is honoured.")
        var git = false

        @Flag(help: "Read every file of the history of the repository PATH is in (every blob the refs reach).")
        var gitHistory = false

        @Flag(help: "Print one JSON object per finding, one per line.")
        var json = false

        func validate() throws {
            if paths.isEmpty { throw ValidationError("name what to scan: one PATH or more (- for standard input)") }
            if allServices && !from.isEmpty { throw ValidationError("choose one of --from and --all-services") }
            if paths.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read once") }
            if gitHistory && paths.contains("-") {
                throw ValidationError("--git-history reads a repository: name its directory, not -")
            }
        }

        func run() throws {
            // A path that is not there stops the scan before the backend is asked for anything.
            for path in paths where path != "-" {
                var status = stat()
                guard stat(path, &status) == 0 else {
                    throw CommandFailure.io(
                        "cannot scan \(quotedPath(path)) (\(String(cString: strerror(errno)))); nothing was "
                            + "scanned. Check the path")
                }
            }
            // Before any secret is read: locked against swap, out of core dumps, as serve.
            for warning in Startup.holdSecretsSafely("scan") { writeError(warning) }
            var (names, values) = try secretsToFind()
            let finder = SecretFinder(secrets: values, minimumLength: Self.minimumLength)
            for index in values.indices { wipe(&values[index]) }
            let scanner = SecretScanner(finder: finder, names: names, json: json)
            for path in paths {
                if path == "-" {
                    try scanner.scanStandardInput()
                } else if gitHistory {
                    try scanner.scanHistory(of: path)
                    if git { try scanner.scan(path: path, gitListed: true) }
                } else {
                    try scanner.scan(path: path, gitListed: git)
                }
            }
            if scanner.found > 0 { throw ExitCode(1) }
            if scanner.incomplete { throw ExitCode(74) }
        }
    }
}
