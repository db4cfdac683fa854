import Foundation
import Testing

@testable import KeychainFormats

/// What `env` prints is read back byte for byte by the real shells: every byte alone, the fuzz
/// corpus, and random values, through one run of bash, zsh, dash and fish each.
@Suite("Shell quoting in real shells")
struct ShellQuotingTests {
    static let shells: [(path: String, dialect: ShellDialect)] = [
        ("/bin/dash", .posix), ("/bin/bash", .posix), ("/bin/bash", .bash), ("/usr/bin/zsh", .zsh),
        ("/usr/bin/zsh", .posix), ("/usr/bin/fish", .fish),
    ]

    /// The values: each byte 1–255 alone and between letters, the corpus, and seeded random ones.
    static func values() throws -> [[UInt8]] {
        var values: [[UInt8]] = (1...255).flatMap { byte in
            [[UInt8(byte)], Array("a".utf8) + [UInt8(byte)] + Array("9".utf8)]
        }
        values += ["", "'", "''", "\\'", "$'x'", "$(id)", "`id`", "${HOME}", "\"\\\"", "\\x41", "\\X41", "a\nb\n"].map {
            Array($0.utf8)
        }
        let corpus = FuzzCorpusTests.corpus.appendingPathComponent("shell-quoting")
        for file in try FileManager.default.contentsOfDirectory(atPath: corpus.path) {
            values.append(Array(try Data(contentsOf: corpus.appendingPathComponent(file))).filter { $0 != 0 })
        }
        var generator = SeededGenerator(seed: 62)
        for _ in 0..<200 {
            values.append((0..<Int(generator.next() % 40)).map { _ in UInt8(generator.next() % 255 + 1) })
        }
        return values
    }

    @Test(arguments: 0..<shells.count)
    func everyValueComesBackFromEval(shell index: Int) throws {
        let (path, dialect) = Self.shells[index]
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(path) is missing: make deps installs it")
        let values = try Self.values()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quoting-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var script: [UInt8] = []
        for (number, value) in values.enumerated() { script += dialect.exportLine(name: "V\(number)", value: value) }
        for number in values.indices {
            let reference = dialect == .fish ? "$V\(number)" : "\"$V\(number)\""
            script += Array("printf %s \(reference) > '\(folder.path)/\(number)'\n".utf8)
        }
        let scriptFile = folder.appendingPathComponent("script")
        try Data(script).write(to: scriptFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = [scriptFile.path]
        process.environment = ["LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": folder.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(path) \(dialect)")
        var wrong: [Int] = []
        for (number, value) in values.enumerated() {
            let read = try? Data(contentsOf: folder.appendingPathComponent("\(number)"))
            if read.map(Array.init) != value { wrong.append(number) }
        }
        #expect(
            wrong.isEmpty,
            "\(path) \(dialect): \(wrong.count) values came back changed, e.g. \(wrong.prefix(5).map { values[$0] })")
    }
}
