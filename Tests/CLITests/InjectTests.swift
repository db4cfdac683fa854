import Foundation
import TestSupport
import Testing

@Suite("inject: secrets into templates", .keyringSession)
final class InjectTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory("inject")
    }

    deinit { scratch.remove() }

    private func path(_ name: String) -> String { scratch.path(name) }

    @Test(arguments: CLIBackend.allCases)
    func referencesAreReplacedAndOtherBracesKept(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            _ = try cli(["-s", s, "set", "token"], input: "T0K")
            _ = try cli(["-s", other, "set", "dir/key"], input: "with/slash")
            let template = """
                token: {{ keychain://\(s)/token }}
                again: {{keychain://\(s)/token}}
                nested: {{   keychain://\(other)/dir/key   }}
                helm: {{ .Values.image }}

                """
            let piped = try cli(["inject"], input: template)
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(
                piped.stdoutText == "token: T0K\nagain: T0K\nnested: with/slash\nhelm: {{ .Values.image }}\n")
            try template.write(toFile: path("in.tmpl"), atomically: true, encoding: .utf8)
            let filed = try cli(["inject", "-i", path("in.tmpl"), "-o", path("out.yaml")])
            #expect(filed.status == 0)
            #expect(filed.stdout.isEmpty)
            #expect(try String(contentsOfFile: path("out.yaml"), encoding: .utf8) == piped.stdoutText)
            let mode = try FileManager.default.attributesOfItem(atPath: path("out.yaml"))[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func anUnresolvedReferenceWritesNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "present"], input: "p")
            try "previous content".write(toFile: path("out"), atomically: true, encoding: .utf8)
            let result = try cli(
                ["inject", "-o", path("out")],
                input: "a: {{ keychain://\(s)/present }}\nb: {{ keychain://\(s)/absent }}\n")
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("keychain-cli: standard input:2: no secret named 'absent'"))
            #expect(try String(contentsOfFile: path("out"), encoding: .utf8) == "previous content")
            let stray = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { $0 != "out" }
            #expect(stray.isEmpty, "temporary files left: \(stray)")
            #expect(try cli(["inject", "-o", path("new")], input: "{{ keychain://\(s)/absent }}").status == 1)
            #expect(!FileManager.default.fileExists(atPath: path("new")))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func malformedReferencesBinarySecretsAndBadInput(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0xff, 0x00]))
            let malformed = try cli(["inject"], input: "ok\n{{ keychain://only-service }}")
            #expect(malformed.status == 64)
            #expect(malformed.stderr.contains("standard input:2"))
            let binary = try cli(["inject"], input: "{{ keychain://\(s)/bin }}")
            #expect(binary.status == 65)
            #expect(binary.stdout.isEmpty)
            let notText = try cli(["inject"], stdin: Data([0xff, 0xfe]))
            #expect(notText.status == 65)
            let missingFile = try cli(["inject", "-i", path("nope.tmpl")])
            #expect(missingFile.status == 74)
        }
    }
}
