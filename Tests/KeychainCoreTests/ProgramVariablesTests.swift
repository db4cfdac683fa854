import Foundation
import Testing

@testable import KeychainFormats

/// The variables `--from` and export's formats refuse are the ones security.md lists: a name
/// added to one and not the other (zsh's PROMPT, found by an attack) shows here.
@Suite("Variables that change what runs")
struct ProgramVariablesTests {
    @Test func securityMdListsEveryNameAndPrefix() throws {
        let text = try String(
            contentsOf: FuzzCorpusTests.packageRoot.appendingPathComponent("docs/security.md"), encoding: .utf8)
        let section =
            try #require(text.components(separatedBy: "## Variables that change what runs").last)
            .components(separatedBy: "\n## ").first ?? ""
        let written = Set(section.matches(of: /`([A-Z0-9_]+)`/).map { String($0.output.1) })
        // PS0–PS4 and PROMPT2–PROMPT4 are written as ranges.
        let ranges: Set<String> = ["PS1", "PS2", "PS3", "PROMPT3"]
        let missing = ProgramVariables.names.filter { !written.contains($0) && !ranges.contains($0) }
        #expect(missing.isEmpty, "security.md does not list \(missing.sorted())")
        let prefixes = ProgramVariables.prefixes.filter { !written.contains($0) }
        #expect(prefixes.isEmpty, "security.md does not list the prefixes \(prefixes)")
        for name in ["PROMPT", "RPROMPT", "READNULLCMD", "KUBECONFIG", "prompt", "Kubeconfig"] {
            #expect(ProgramVariables.changesWhatRuns(name), "\(name)")
        }
        #expect(!ProgramVariables.changesWhatRuns("GITHUB_TOKEN"))
    }
}
