import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Inject: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fill a template's {{ keychain://SERVICE/KEY }} references with secrets.",
            discussion: """
                Reads the template (standard input, or -i), replaces every reference \
                {{ keychain://SERVICE/KEY }} with that secret (the key runs to the closing braces \
                and may contain /; ?field=NAME after it takes one field of an entry, as get --field; \
                %XX stands for a byte, and a % ? # in a name, or a / in the service, must be \
                written so: %25 %3F %23 %2F), and writes the result (standard output, or -o, created 0600 \
                and replaced atomically). Other {{ … }} text is left alone. A reference is written \
                on one line; one that is not closed by }} there is malformed (exit 64). If any \
                reference cannot be resolved, nothing is written. The result is written as it is \
                made; -o into a FIFO or terminal writes into it, never replaces it.

                  keychain-cli inject -i config.tmpl -o config.yaml
                  keychain-cli inject < .npmrc.tmpl > .npmrc
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(
            name: [.customShort("i"), .long], help: ArgumentHelp("The template file.", valueName: "path"),
            completion: .file())
        var input: String?

        @Option(
            name: [.customShort("o"), .long],
            help: ArgumentHelp(
                "The file to write (0600, replaced atomically; a FIFO or terminal is written into).", valueName: "path"),
            completion: .file()
        )
        var output: String?

        func run() throws {
            let name = input ?? "standard input"
            try settings.checkOutput(output)
            guard let bytes = try readInput(path: input, limit: Self.maximumTemplateSize) else {
                throw CommandFailure.badData(
                    "\(input.map(quotedPath) ?? name) is larger than 16 MiB, the most a template may be; nothing was "
                        + "written. Split it into several templates")
            }
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw CommandFailure.badData("\(name) is not UTF-8 text; templates are text")
            }
            let references = try TemplateReference.all(in: bytes, source: input.map(escapedForDisplay) ?? name)
            // Every secret is read before anything is written.
            let keychain = try keychain()
            // By bytes: "é" and "e\u{301}" name two secrets, which Swift's String calls equal.
            var secrets: [[UInt8]: String] = [:]
            for reference in references where secrets[Array(reference.text.utf8)] == nil {
                secrets[Array(reference.text.utf8)] = try reference.resolve(with: keychain)
            }
            // Written as it is made: the result may be far larger than the template.
            try settings.writeResult(to: output) { sink throws(FileError) in
                try TemplateReference.render(bytes, replacing: references, with: { secrets[Array($0.text.utf8)]! }) {
                    block throws(FileError) in try sink.write(block)
                }
            }
        }

        static let maximumTemplateSize = 16 << 20
    }
}

extension TemplateReference {
    func resolve(with keychain: Keychain) throws -> String {
        try keychain.text(
            of: reference, at: location, outcome: "nothing was written",
            fix: "Write such a secret to a file of its own with get --raw", place: "a template")
    }
}
