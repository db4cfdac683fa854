import Foundation
import TestSupport
import Testing

@Suite("scan: a 1 GiB file in bounded memory")
struct ScanLargeFileTests {
    /// A sparse file of 1 GiB with a secret across the boundary of two 1 MiB blocks near its end
    /// (and a form of it wrapped across that boundary's line) is found on the right line, and
    /// scan's peak memory (its max RSS, as time(1) reads it from the kernel) stays far below the
    /// file's size.
    @Test func aSecretNearTheEndOfAGibibyteFileIsFoundInBoundedMemory() throws {
        try CLIBackend.withVault { _ in
            let s = try ScanSecrets.store()
            let tree = try ScanTree()
            defer { tree.directory.remove() }
            let path = tree.path("big.bin")
            #expect(FileManager.default.createFile(atPath: path, contents: Data("line one\nline two\nthree\n".utf8)))
            let handle = try FileHandle(forWritingAtPath: path).unwrap()
            let size: UInt64 = 1 << 30
            let boundary = size - (1 << 20)
            try handle.truncate(atOffset: size)
            try handle.seek(toOffset: boundary - 7)
            handle.write(Data(ScanSecrets.token.utf8))
            let wrapped = Data(ScanSecrets.long.utf8).base64EncodedString(options: [.lineLength64Characters])
            try handle.seek(toOffset: boundary + (1 << 19))
            handle.write(Data(("\n" + wrapped + "\n").utf8))
            try handle.close()

            let rss = tree.path("rss")
            var environment = cliEnvironment()
            environment["KEYCHAIN_CLI_NO_FAST_PATH"] = nil
            let result = try runProcess(
                "/usr/bin/time", ["-f", "%M", "-o", rss, keychainCLIPath, "scan", "--from", s, path],
                environment: environment, timeout: 300)
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stdoutText == "\(path):4: \(s)/token (plain)\n\(path):5: \(s)/long (base64)\n",
                "\(result.stdoutText)\(result.stderr)")
            // time(1) writes "Command exited with non-zero status 1" first, then the number.
            let report = try String(contentsOfFile: rss, encoding: .utf8)
            let peakKiB = try #require(report.split(separator: "\n").last.flatMap { Int($0) }, "\(report)")
            #expect(peakKiB > 0 && peakKiB < 128 << 10, "scan's max RSS was \(peakKiB) KiB for a 1 GiB file")
            ScanSecrets.expectNoSecret(in: result)
        }
    }
}

extension Optional {
    fileprivate func unwrap() throws -> Wrapped {
        guard let self else { throw FixtureFailed(detail: "nil") }
        return self
    }
}
