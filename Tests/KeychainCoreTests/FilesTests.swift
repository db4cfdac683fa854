import Foundation
import Testing

@testable import KeychainCore

@Suite("Files: atomic writes")
struct FilesTests {
    /// `vault keygen`'s guarantee: an identity file that appeared after its check is never
    /// replaced, because the new file only gets its name by a link.
    @Test func aWriteThatMustNotReplaceLeavesAnExistingFileAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/identity.txt"
        try writeFileAtomically(path, Array("first".utf8), replacing: false)
        #expect(throws: FileError.self) { try writeFileAtomically(path, Array("second".utf8), replacing: false) }
        do {
            try writeFileAtomically(path, Array("second".utf8), replacing: false)
        } catch {
            #expect(error.code == EEXIST)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["identity.txt"])
        try writeFileAtomically(path, Array("third".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "third")
    }
}
