import ArgumentParser
import KeychainCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

extension KeychainCLI {
    struct Inject: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fill a template's {{ keychain://SERVICE/KEY }} references with secrets.",
            discussion: """
                Reads the template (standard input, or -i), replaces every reference \
                {{ keychain://SERVICE/KEY }} with that secret (the key runs to the closing braces \
                and may contain /), and writes the result (standard output, or -o, created 0600 \
                and replaced atomically). Other {{ … }} text is left alone. If any reference \
                cannot be resolved, nothing is written.

                  keychain-cli inject -i config.tmpl -o config.yaml
                  keychain-cli inject < .npmrc.tmpl > .npmrc
                """)

        @OptionGroup var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(name: [.customShort("i"), .long], help: ArgumentHelp("The template file.", valueName: "path"))
        var input: String?

        @Option(
            name: [.customShort("o"), .long],
            help: ArgumentHelp("The file to write (0600, replaced atomically).", valueName: "path"))
        var output: String?

        func run() throws {
            let name = input ?? "standard input"
            guard let bytes = try readInput(path: input, limit: Self.maximumTemplateSize) else {
                throw CommandFailure.badData("\(name) is larger than 16 MiB")
            }
            guard let template = String(validating: bytes, as: UTF8.self) else {
                throw CommandFailure.badData("\(name) is not UTF-8 text; templates are text")
            }
            let references = try TemplateReference.all(in: template, source: name)
            // Every secret is read before anything is written.
            let keychain = try keychain()
            var secrets: [String: String] = [:]
            for reference in references where secrets[reference.text] == nil {
                secrets[reference.text] = try reference.resolve(with: keychain)
            }
            var result = ""
            var cursor = template.startIndex
            for reference in references {
                result += template[cursor..<reference.range.lowerBound]
                result += secrets[reference.text]!
                cursor = reference.range.upperBound
            }
            result += template[cursor...]
            if let output {
                try writeFileAtomically(output, Array(result.utf8))
            } else {
                try writeOutput(Array(result.utf8))
            }
        }

        static let maximumTemplateSize = 16 << 20
    }
}

/// One `{{ keychain://SERVICE/KEY }}` in a template.
struct TemplateReference {
    var range: Range<String.Index>
    /// The whole reference, as written.
    var text: String
    var service: String
    var key: String
    /// "FILE:LINE", for messages.
    var location: String

    static let scheme = "keychain://"

    /// The references of `template`, in order; `{{ … }}` that do not start with keychain:// are
    /// left alone, a malformed keychain:// reference is a usage error.
    static func all(in template: String, source: String) throws -> [TemplateReference] {
        var references: [TemplateReference] = []
        var searchStart = template.startIndex
        while let open = template[searchStart...].firstRange(of: "{{") {
            guard let close = template[open.upperBound...].firstRange(of: "}}") else { break }
            let inner = template[open.upperBound..<close.lowerBound].trimmingSpaces()
            searchStart = close.upperBound
            guard inner.hasPrefix(scheme) else { continue }
            let line = template[..<open.lowerBound].count(where: { $0 == "\n" }) + 1
            let location = "\(source):\(line)"
            let path = inner.dropFirst(scheme.count)
            guard let slash = path.firstIndex(of: "/"), slash != path.startIndex,
                path.index(after: slash) != path.endIndex
            else {
                throw CommandFailure.usage("\(location): '{{ \(inner) }}' should be {{ keychain://SERVICE/KEY }}")
            }
            references.append(
                TemplateReference(
                    range: open.lowerBound..<close.upperBound, text: String(inner), service: String(path[..<slash]),
                    key: String(path[path.index(after: slash)...]), location: location))
        }
        return references
    }

    func resolve(with keychain: Keychain) throws -> String {
        let service = try ServiceName(service)
        let key = try KeychainKey(key)
        guard let secret = try Keychain(service: service, store: keychain.store).data(for: key) else {
            throw CommandFailure(
                kind: .notFound,
                message: "\(location): no secret named '\(key)' in service '\(service)'; nothing was written. "
                    + "Check the reference, or store it with keychain-cli -s \(service) set \(key)")
        }
        guard let text = String(validating: secret, as: UTF8.self) else {
            throw CommandFailure.badData(
                "\(location): the secret '\(key)' of service '\(service)' is binary; nothing was written. "
                    + "Templates take text")
        }
        return text
    }
}
