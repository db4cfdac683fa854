import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainFuzzTargets

/// Every input in `Fuzz/corpus` (the seeds, and each crash or hang `make fuzz` ever found, kept as
/// a regression) goes through its parser again here, in an ordinary build: none may crash or hang.
@Suite("Fuzz corpora replayed")
struct FuzzCorpusTests {
    /// The package's folder (this target does not link TestSupport, which has its own).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let corpus = packageRoot.appendingPathComponent("Fuzz/corpus")

    @Test(arguments: FuzzTargets.names)
    func everyCorpusInputIsParsedWithoutACrash(target: String) throws {
        let folder = Self.corpus.appendingPathComponent(target)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!files.isEmpty, "no seed for \(target)")
        for file in files {
            #expect(FuzzTargets.run(target, Array(try Data(contentsOf: folder.appendingPathComponent(file)))))
        }
    }

    /// `make fuzz` (and so CI) runs every target there is: age-keys was left out of its list
    /// until 2026-11-24.
    @Test func makeFuzzRunsEveryTarget() throws {
        let makefile = try String(contentsOf: Self.packageRoot.appendingPathComponent("Makefile"), encoding: .utf8)
        let line = try #require(makefile.split(separator: "\n").first { $0.hasPrefix("FUZZ_TARGETS = ") })
        #expect(
            Set(line.dropFirst("FUZZ_TARGETS = ".count).split(separator: " ").map(String.init))
                == Set(FuzzTargets.names))
    }

    @Test func theTemplateTargetReachesTheScannerItFuzzes() throws {
        // A sanity check that the fuzz entry point runs the real parser: the same bytes parse here.
        let bytes = Array("a: {{ keychain://s/k }}\r\nb: {{ keychain://s/dir/key }}\n".utf8)
        let references = try TemplateReference.all(in: bytes, source: "t")
        #expect(references.map(\.reference.key) == ["k", "dir/key"])
        #expect(references.map(\.location) == ["t:1", "t:2"])
        #expect(!FuzzTargets.run("no-such-target", bytes))
    }
}
