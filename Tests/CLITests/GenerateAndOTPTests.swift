import Foundation
import Synchronization
import Testing

@testable import TestSupport

/// `generate` and `otp` on every backend; `otp` side by side with oathtool (Debian's oathtool).
@Suite("generate and otp", .keyringSession)
struct GenerateAndOTPTests {
    /// Two `generate --print` of one key at once, both past the check for it (another writer holds
    /// the vault's lock meanwhile): one stores and prints what it stored, the other exits 73 and
    /// prints nothing. (Shown before stored, the loser printed a secret that was never stored.)
    @Test func ofTwoGeneratesOfOneKeyTheOneThatLostShowsNothing() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "seed"], input: "x")  // the vault and its directory exist
            let environment = cliEnvironment()
            let directory = open((vault as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { close(directory) }
            #expect(flock(directory, LOCK_EX) == 0)
            let results = Mutex<[ProcessResult]>([])
            let ended = DispatchGroup()
            for _ in 0..<2 {
                ended.enter()
                Thread.detachNewThread {
                    if let result = try? runProcess(
                        keychainCLIPath, ["generate", "pw", "--print"], environment: environment, timeout: 30)
                    {
                        results.withLock { $0.append(result) }
                    }
                    ended.leave()
                }
            }
            // Until both found no "pw" and wait for the lock (each has the directory open then).
            let waiting = eventually { processesWithOpen((vault as NSString).deletingLastPathComponent).count >= 2 }
            #expect(waiting, "the two generates never waited for the lock together")
            flock(directory, LOCK_UN)
            ended.wait()
            let (winner, loser) = try results.withLock { results in
                try #require(results.count == 2)
                return results[0].status == 0 ? (results[0], results[1]) : (results[1], results[0])
            }
            #expect(winner.status == 0 && loser.status == 73, "\(winner.stderr) \(loser.stderr)")
            #expect(loser.stdout.isEmpty, "the generate that lost printed a secret")
            let stored = try cli(["get", "pw"]).stdoutText
            #expect(winner.stdoutText.count == 32 && winner.stdoutText == stored)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func generateStoresQuietlyAndKeepsWhatIsThere(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let generated = try cli(["-s", s, "generate", "k"])
            #expect(generated.status == 0, "\(generated.stderr)")
            #expect(generated.stdout.isEmpty && generated.stderr.isEmpty)
            let stored = try cli(["-s", s, "get", "k"]).stdoutText
            #expect(stored.count == 32 && stored.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })

            let again = try cli(["-s", s, "generate", "k", "--print"])
            #expect(again.status == 73)
            #expect(again.stdout.isEmpty)
            #expect(again.stderr.contains("already stored") && again.stderr.contains("--force"))
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == stored)

            let forced = try cli(["-s", s, "generate", "k", "--force", "--length", "64", "--charset", "hex", "--print"])
            #expect(forced.status == 0)
            #expect(forced.stdoutText.count == 64 && forced.stdoutText.allSatisfy { "0123456789abcdef".contains($0) })
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == forced.stdoutText)

            let huge = try cli(["-s", s, "generate", "big", "--length", "1048576", "--charset", "digits"])
            #expect(huge.status == 0, "\(huge.stderr)")
            #expect(try cli(["-s", s, "get", "big"]).stdout.count == 1_048_576)
        }
    }

    @Test func everyCharsetDrawsOnlyItsCharacters() throws {
        try CLIBackend.vault.run {
            let alphabets: [(arguments: [String], allowed: String)] = [
                (["--charset", "alnum"], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
                (
                    ["--charset", "symbols"],
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&()*+,-./:;<=>?@[]^_{|}~"
                ),
                (["--charset", "hex"], "0123456789abcdef"),
                (["--charset", "base64url"], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                (["--charset", "digits"], "0123456789"),
                (["--unambiguous"], "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"),
            ]
            for (index, alphabet) in alphabets.enumerated() {
                let printed = try cli(["generate", "k\(index)", "--length", "5000", "--print"] + alphabet.arguments)
                #expect(printed.status == 0)
                #expect(Set(printed.stdoutText) == Set(alphabet.allowed), "\(alphabet.arguments)")
            }
        }
    }

    @Test func badOptionsAreUsageErrorsAndStoreNothing() throws {
        try CLIBackend.vault.run {
            for arguments in [
                ["--length", "0"], ["--length", "1048577"], ["--length", "-5"], ["--length", "abc"],
                ["--charset", "emoji"], ["--charset", "hex", "--unambiguous"], ["--print", "--clip"],
                ["--clear-after", "3"],
            ] {
                let result = try cli(["generate", "k"] + arguments)
                #expect(result.status == 64, "\(arguments): \(result.stderr)")
            }
            #expect(try cli(["get", "k"]).status == 1)
            // A negative number is a value out of range, not a missing value nor a dashed key.
            for arguments in [["generate", "k", "--length", "-5"], ["otp", "k", "--at", "-1"]] {
                let result = try cli(arguments)
                #expect(result.status == 64 && !result.stderr.contains("Missing value"), "\(result.stderr)")
            }
            let clearAfter = try cli(["get", "k", "--clip", "--clear-after", "-3"])
            #expect(clearAfter.stderr.contains("from 1 to 86400") && !clearAfter.stderr.contains("goes after --"))
        }
    }

    /// Of writers racing to generate the same key, one adds it: the vault decides under its lock,
    /// OpenBao by check-and-set.
    @Test(arguments: [CLIBackend.vault, .openbao])
    func concurrentGeneratesStoreOnce(on backend: CLIBackend) throws {
        try backend.run {
            _ = try cli(["set", "warm"], input: "up")  // the vault exists before the race
            let environment = cliEnvironment()
            let results = try (0..<6).map { _ in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: keychainCLIPath)
                process.arguments = ["generate", "raced", "--print"]
                process.environment = environment
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle(forWritingAtPath: "/dev/null")
                try process.run()
                return (process, output)
            }.map { process, output in
                let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return (process.terminationStatus, printed)
            }
            #expect(results.map(\.0).sorted() == [0, 73, 73, 73, 73, 73])
            let winner = try #require(results.first { $0.0 == 0 })
            #expect(try cli(["get", "raced"]).stdoutText == winner.1)
        }
    }

    @Test func generateTellsTheStrengthAtATerminal() throws {
        try CLIBackend.vault.run {
            let result = try expect(
                """
                set timeout 30
                spawn $env(KEYCHAIN_CLI) generate k
                expect "32 characters from 62 (alnum), 190 bits of entropy"
                expect eof
                """)
            #expect(result.status == 0, "\(result.stdoutText)")
        }
    }

    static func oathtool(_ arguments: [String]) throws -> String {
        let result = try runProcess("/usr/bin/oathtool", arguments, environment: ["PATH": "/usr/bin:/bin"], timeout: 10)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdoutText
    }

    /// The same code as oathtool for the same seed, hash, digits, period and time.
    @Test(arguments: CLIBackend.allCases)
    func otpMatchesOathtool(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let seed = "JBSWY3DPEHPK3PXPGEZDGNBVGY3TQOJQ"
            let cases: [(uri: String, oathtool: [String])] = [
                ("otpauth://totp/GitHub:me?secret=\(seed)&issuer=GitHub", ["--totp"]),
                (
                    "otpauth://totp/x?secret=\(seed)&algorithm=SHA256&digits=8&period=60",
                    ["--totp=sha256", "-d", "8", "-s", "60"]
                ),
                (
                    "otpauth://totp/x?secret=\(seed.lowercased())&algorithm=SHA512&digits=7",
                    ["--totp=sha512", "-d", "7"]
                ),
                ("  \(seed.prefix(16)) \(seed.dropFirst(16))\n", ["--totp"]),
            ]
            for (index, item) in cases.enumerated() {
                #expect(try cli(["-s", s, "set", "otp\(index)", "--raw"], input: item.uri).status == 0)
                for time in [0, 59, 1_111_111_109, 2_000_000_000, Int(Date().timeIntervalSince1970)] {
                    let ours = try cli(["-s", s, "otp", "otp\(index)", "--at", String(time)])
                    #expect(ours.status == 0, "\(ours.stderr)")
                    let theirs = try Self.oathtool(item.oathtool + ["-b", "-N", "@\(time)", seed])
                    #expect(ours.stdoutText == theirs, "\(item.uri) at \(time)")
                }
            }
            let json = try cli(["-s", s, "otp", "otp1", "--json", "--at", "1111111109"])
            let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
            #expect(
                object?["code"] as? String
                    == String(
                        try Self.oathtool(["--totp=sha256", "-d", "8", "-s", "60", "-b", "-N", "@1111111109", seed])
                            .dropLast()))
            #expect(object?["remaining"] as? Int == 60 - 1_111_111_109 % 60)
            #expect(object?["period"] as? Int == 60 && object?["digits"] as? Int == 8)
            #expect(object?["algorithm"] as? String == "SHA256")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func otpRefusesWhatIsNotASeedWithoutShowingIt(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "password"], input: "hunter2-not-base32!")
            _ = try cli(["-s", s, "set", "hotp"], input: "otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=3")
            let password = try cli(["-s", s, "otp", "password"])
            #expect(password.status == 65)
            #expect(!password.stderr.contains("hunter2"))
            #expect(password.stderr.contains("keychain-cli set password"))
            let hotp = try cli(["-s", s, "otp", "hotp"])
            #expect(hotp.status == 65 && hotp.stderr.contains("HOTP") && !hotp.stderr.contains("JBSWY3DP"))
            #expect(try cli(["-s", s, "otp", "missing"]).status == 1)
            #expect(try cli(["-s", s, "otp", "password", "--at", "-1"]).status == 64)
        }
    }

    /// Now, not at a given time: the code oathtool computes in the same 30 seconds.
    @Test func otpNowIsTheCodeOfThisPeriod() throws {
        try CLIBackend.vault.run {
            _ = try cli(["set", "now"], input: "JBSWY3DPEHPK3PXP")
            for _ in 0..<3 {
                let before = Int(Date().timeIntervalSince1970) / 30
                let ours = try cli(["otp", "now"]).stdoutText
                let theirs = try Self.oathtool(["--totp", "-b", "JBSWY3DPEHPK3PXP"])
                guard Int(Date().timeIntervalSince1970) / 30 == before else { continue }  // crossed a boundary
                #expect(ours == theirs)
                return
            }
            Issue.record("three runs crossed a 30-second boundary")
        }
    }
}
