import Foundation
import TestSupport
import Testing

/// The repository's root, found from this file.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

private func read(_ path: String) throws -> String {
    try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
}

/// The lines of `text` outside fenced code blocks.
private func proseLines(_ text: String) -> [Substring] {
    var inFence = false
    var lines: [Substring] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
            inFence.toggle()
        } else if !inFence {
            lines.append(line)
        }
    }
    return lines
}

/// The anchor GitHub makes of a heading: lowercased, punctuation but `-` and `_` dropped, spaces as `-`.
private func anchor(_ heading: String) -> String {
    String(
        heading.lowercased().unicodeScalars.compactMap { scalar -> Character? in
            if scalar == " " { return "-" }
            if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                return Character(scalar)
            }
            return nil
        })
}

/// The anchors of a Markdown file's headings, numbered as GitHub numbers repeated ones.
private func anchors(of text: String) -> Set<String> {
    var seen: [String: Int] = [:]
    var result: Set<String> = []
    for line in proseLines(text) where line.hasPrefix("#") {
        let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
        let base = anchor(title)
        let count = seen[base, default: 0]
        seen[base] = count + 1
        result.insert(count == 0 ? base : "\(base)-\(count)")
    }
    return result
}

/// The `(target)` of every inline link `[text](target)` in the prose of `text`.
private func linkTargets(_ text: String) -> [String] {
    let link = /\[[^\]\n]*\]\(([^)\s]+)\)/
    return proseLines(text).flatMap { line in line.matches(of: link).map { String($0.output.1) } }
}

/// The `| code | meaning |` rows of a Markdown table, and the lines `  CODE  MEANING` of --help's
/// exit-code list, as (codes, name): the name is the meaning up to its first `:`, `(` or `,`.
private struct ExitCodeRow: Equatable, CustomStringConvertible {
    var codes: String
    var name: String
    var description: String { "\(codes) \(name)" }

    init(codes: some StringProtocol, meaning: some StringProtocol) {
        self.codes = String(codes)
        let plain = meaning.filter { $0 != "`" && $0 != "*" }
        name = String(plain.prefix { !":(,".contains($0) }).trimmingCharacters(in: .whitespaces).lowercased()
    }
}

/// Every Swift string literal of `text` (comments skipped), multi-line literals included.
private func stringLiterals(_ text: String) -> [String] {
    var literals: [String] = []
    var index = text.startIndex
    func starts(_ prefix: String) -> Bool { text[index...].hasPrefix(prefix) }
    while index < text.endIndex {
        if starts("//") {
            index = text[index...].firstIndex(of: "\n") ?? text.endIndex
        } else if starts("/*") {
            index = text.range(of: "*/", range: index..<text.endIndex)?.upperBound ?? text.endIndex
        } else if starts("\"\"\"") {
            let start = text.index(index, offsetBy: 3)
            let end = text.range(of: "\"\"\"", range: start..<text.endIndex) ?? start..<text.endIndex
            literals.append(String(text[start..<end.lowerBound]))
            index = end.upperBound
        } else if text[index] == "\"" {
            var cursor = text.index(after: index)
            while cursor < text.endIndex && text[cursor] != "\"" && text[cursor] != "\n" {
                cursor = text.index(after: text[cursor] == "\\" ? text.index(after: cursor) : cursor)
            }
            literals.append(String(text[text.index(after: index)..<min(cursor, text.endIndex)]))
            index = cursor < text.endIndex ? text.index(after: cursor) : cursor
        } else {
            index = text.index(after: index)
        }
    }
    return literals
}

@Suite("docs/ is the contract: short README, links, exit codes, variables, no numbers")
struct DocsTests {
    @Test func theReadmeIsAtMost250Lines() throws {
        let text = try read("README.md")
        let lines = text.filter { $0 == "\n" }.count + (text.hasSuffix("\n") || text.isEmpty ? 0 : 1)
        #expect(lines <= 250, "README.md has \(lines) lines")
    }

    @Test func theReadmeLinksEveryDocsFile() throws {
        let targets = Set(linkTargets(try read("README.md")).map { $0.prefix { $0 != "#" } })
        let docs = try documentationFiles().filter { $0.hasPrefix("docs/") }
        #expect(docs.count >= 10, "\(docs)")
        for file in docs {
            #expect(targets.contains(Substring(file)), "README.md does not link \(file)")
        }
    }

    @Test func everyRelativeLinkPointsToAFileThatExists() throws {
        var checked = 0
        for file in try documentationFiles() {
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent().relativePath
            for target in linkTargets(try read(file)) {
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = parts[0].isEmpty ? file : (directory == "." ? "" : directory + "/") + parts[0]
                let resolved = repository.appendingPathComponent(path).standardizedFileURL
                #expect(
                    FileManager.default.fileExists(atPath: resolved.path), "\(file): the link \(target) leads nowhere")
                if parts.count == 2, resolved.pathExtension == "md",
                    let text = try? String(contentsOf: resolved, encoding: .utf8)
                {
                    #expect(anchors(of: text).contains(String(parts[1])), "\(file): no heading for \(target)")
                }
                checked += 1
            }
        }
        #expect(checked > 30, "found only \(checked) links")
    }

    @Test func theExitCodesAreThoseOfHelpAndOfFailureSwift() throws {
        let table = try read("docs/exit-codes.md")
        let documented = table.split(separator: "\n").compactMap { line -> ExitCodeRow? in
            guard let row = line.wholeMatch(of: /\| (\d+(?:, \d+)*) \| (.+) \|/) else { return nil }
            return ExitCodeRow(codes: row.output.1, meaning: row.output.2)
        }

        let help = try runProcess(keychainCLIPath, ["--help"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(help.status == 0)
        let list = try #require(help.stdoutText.split(separator: "Exit codes:").dropFirst().first)
            .split(separator: "USAGE:")[0]
        // A row goes on in lines indented by six spaces.
        var rows: [(codes: Substring, meaning: String)] = []
        for line in list.split(separator: "\n") {
            if let row = line.wholeMatch(of: /\ \ (\d+(?:, \d+)*)\ \ +(\S.*)/) {
                rows.append((row.output.1, String(row.output.2)))
            } else if line.hasPrefix("      "), !rows.isEmpty {
                rows[rows.count - 1].meaning += " " + line.trimmingCharacters(in: .whitespaces)
            }
        }
        let printed = rows.map { ExitCodeRow(codes: $0.codes, meaning: $0.meaning) }
        #expect(printed.count >= 10, "\(help.stdoutText)")
        #expect(documented == printed, "docs/exit-codes.md lists \(documented), --help \(printed)")
        // The same table in fewer words: each command and option a row of exit-codes.md names,
        // --help's row names too.
        let commands = Set(
            help.stdoutText.split(separator: "SUBCOMMANDS:").last?.split(separator: "\n")
                .compactMap { $0.firstMatch(of: /^  ([a-z-]+)\ /)?.output.1 }.map(String.init) ?? [])
        #expect(commands.contains("serve") && commands.contains("doctor"))
        for line in table.split(separator: "\n") {
            guard let row = line.wholeMatch(of: /\| (\d+(?:, \d+)*) \| (.+) \|/),
                let meaning = rows.first(where: { $0.codes == row.output.1 })?.meaning
            else { continue }
            let named = row.output.2.matches(of: /`([^`]+)`/).flatMap {
                $0.output.1.split(whereSeparator: { " /".contains($0) })
            }
            .map(String.init).filter { commands.contains($0) || $0.wholeMatch(of: /--[a-z-]+|-[io]/) != nil }
            let words = Set(meaning.split(whereSeparator: { " ,;:()/".contains($0) }).map(String.init))
            let missing = named.filter { !words.contains($0) }
            #expect(missing.isEmpty, "--help's row \(row.output.1) does not name \(missing): \(meaning)")
        }

        let failure = try read("Sources/keychain-cli/Errors/Failure.swift")
        let body = try #require(failure.split(separator: "func exitStatus").dropFirst().first)
            .split(separator: "\n}\n")[0]
        var returned: Set<String> = ["0"]  // success is no error: nothing maps to it
        for line in body.split(separator: "\n") {
            guard let statement = line.firstMatch(of: /\breturn\b(.*)/) else { continue }
            returned.formUnion(statement.output.1.matches(of: /\b\d+\b/).map { String($0.output) })
        }
        let codes = Set(documented.flatMap { $0.codes.split(separator: ", ").map(String.init) })
        #expect(
            codes == returned, "docs/exit-codes.md lists \(codes.sorted()), Failure.swift returns \(returned.sorted())")
    }

    /// Every example of every command's help (a block of lines indented by two spaces, as the
    /// man page takes them) is printed as it was written: never wrapped in the middle of a
    /// command, so that it can be pasted.
    @Test func everyHelpExampleLineIsAWholeCommand() throws {
        let dump = try runProcess(keychainCLIPath, ["--experimental-dump-help"], environment: ["PATH": "/usr/bin:/bin"])
        let root = try #require(try JSONSerialization.jsonObject(with: dump.stdout) as? [String: Any])["command"]
        func commands(_ command: Any?, _ path: [String]) -> [([String], String)] {
            guard let command = command as? [String: Any] else { return [] }
            let own = (path, command["discussion"] as? String ?? "")
            let subcommands = command["subcommands"] as? [[String: Any]] ?? []
            return [own]
                + subcommands.filter { $0["commandName"] as? String != "help" }.flatMap {
                    commands($0, path + [$0["commandName"] as? String ?? ""])
                }
        }
        var examples = 0
        for (path, discussion) in commands(root, []) {
            let blocks = discussion.split(separator: "\n\n").map { $0.split(separator: "\n") }
            let lines = blocks.filter { $0.allSatisfy { $0.hasPrefix("  ") } }.joined()
            guard !lines.isEmpty else { continue }
            let help = try runProcess(keychainCLIPath, path + ["--help"], environment: ["PATH": "/usr/bin:/bin"])
            let printed = Set(help.stdoutText.split(separator: "\n"))
            for line in lines {
                examples += 1
                #expect(printed.contains(line), "'keychain-cli \(path.joined(separator: " ")) --help' wraps: \(line)")
            }
        }
        #expect(examples > 30)
    }

    @Test func everyKeychainVariableOfTheSourcesIsDocumented() throws {
        var variables: Set<String> = []
        let sources = repository.appendingPathComponent("Sources")
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources.path))
        for case let path as String in enumerator where path.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            for literal in stringLiterals(text) {
                variables.formUnion(literal.matches(of: /KEYCHAIN_[A-Z0-9_]*[A-Z0-9]/).map { String($0.output) })
            }
            // for name in ["MOUNT", …] { variables["KEYCHAIN_OPENBAO_" + name] = … }
            for loop in text.matches(of: /for name in \[([^\]]*)\]\s*\{\s*\w+\["(KEYCHAIN_\w*_)" \+ name\]/) {
                for name in loop.output.1.matches(of: /"(\w+)"/) {
                    variables.insert(String(loop.output.2) + String(name.output.1))
                }
            }
        }
        #expect(variables.count >= 15, "found only \(variables.sorted())")
        var documented: Set<String> = []
        for file in try documentationFiles() where file.hasPrefix("docs/") {
            documented.formUnion(try read(file).matches(of: /KEYCHAIN_[A-Z0-9_]*[A-Z0-9]/).map { String($0.output) })
        }
        let missing = variables.subtracting(documented)
        #expect(missing.isEmpty, "not documented in docs/: \(missing.sorted())")
    }

    @Test func performanceHoldsNoMeasuredNumbers() throws {
        let text = try read("docs/performance.md")
        let measured = text.matches(of: /\d[\d.,]*\s*(?:ms|µs)\b|\d[\d.,]*\s*[×x](?![0-9A-Za-z])|×\s*\d/)
            .map { String($0.output) }
        #expect(measured.isEmpty, "docs/performance.md has measured numbers: \(measured)")
        #expect(text.contains("(../bench/RESULTS.md)"), "docs/performance.md does not link bench/RESULTS.md")
    }

    @Test func everyTestedSnippetIsMarkedOnceAndRun() throws {
        var markers: [String] = []
        for file in try documentationFiles() {
            markers += try read(file).matches(of: /<!-- tested: ([a-z-]+) -->/).map { String($0.output.1) }
        }
        // ReadmeRecipeTests runs exactly these; a new marker needs a test there.
        #expect(
            markers.sorted() == [
                "op-run-migration", "secret-service-recipe", "serve-recipe", "tree-vault-recipe", "vault-recipe",
            ],
            "\(markers)")
    }
}
