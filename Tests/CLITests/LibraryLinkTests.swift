import Foundation
import TestSupport
import Testing

/// The built `vault-only` example: a program on the KeychainVault product (docs/development.md).
private let vaultOnlyPath: String = {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("vault-only").path
    if FileManager.default.isExecutableFile(atPath: beside) { return beside }
    return packageRoot.appendingPathComponent(".build/debug/vault-only").path
}()

/// The libraries of the desktop's stores, none of which a vault-only program may load.
private let desktopLibraries = ["libgio-2.0", "libglib-2.0", "libgobject-2.0", "libsecret-1", "libgcrypt", "libcurl"]

/// The shared libraries `ldd` says `binary` loads, by file name.
private func loadedLibraries(_ binary: String) throws -> [String] {
    let result = try runProcess("/usr/bin/ldd", [binary], environment: ["PATH": "/usr/bin:/bin"], timeout: 30)
    #expect(result.status == 0, "\(result.stderr)")
    return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").compactMap {
        $0.split(separator: " ").first.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}

@Suite("The KeychainVault product links no desktop library (docs/development.md)")
struct LibraryLinkTests {
    /// The seam, Age and the vault alone: swift-crypto is linked in, GIO, libsecret, libgcrypt
    /// and libcurl are not.
    @Test func aVaultOnlyProgramLoadsNoneOfTheDesktopsLibraries() throws {
        let loaded = try loadedLibraries(vaultOnlyPath)
        #expect(loaded.contains { $0.hasPrefix("libswiftCore") }, "\(loaded)")
        for library in desktopLibraries {
            #expect(!loaded.contains { $0.hasPrefix(library) }, "vault-only loads \(library): \(loaded)")
        }
    }

    /// The same check on keychain-cli finds what the Secret Service needs, so it can see them;
    /// libcurl is loaded with dlopen by the OpenBao backend only, never at start.
    @Test func keychainCLILoadsTheSecretServicesLibrariesButNotCurl() throws {
        let loaded = try loadedLibraries(keychainCLIPath)
        for library in ["libgio-2.0", "libsecret-1", "libgcrypt"] {
            #expect(loaded.contains { $0.hasPrefix(library) }, "keychain-cli does not load \(library): \(loaded)")
        }
        #expect(!loaded.contains { $0.hasPrefix("libcurl") }, "\(loaded)")
    }

    /// What the vault-only program stores is an ordinary vault: keychain-cli reads it back.
    @Test func aVaultOnlyProgramWritesAVaultKeychainCLIReads() throws {
        let scratch = try ScratchDirectory("vault-only")
        defer { scratch.remove() }
        let vault = scratch.path("vault.age")
        let passphrase = scratch.path("passphrase")
        try Data("correct horse\n".utf8).write(to: URL(fileURLWithPath: passphrase))
        let written = try runProcess(
            vaultOnlyPath, [vault, "api-token"], stdin: Data("correct horse\n".utf8),
            environment: ["VAULT_ONLY_SECRET": "s3cr3t-from-the-library"], timeout: 60)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(String(decoding: written.stdout, as: UTF8.self) == "s3cr3t-from-the-library\n")
        let read = try cli(
            [
                "--backend", "vault", "--vault", vault, "--passphrase-file", passphrase, "-s", "vault-only", "get",
                "api-token",
            ], session: nil)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(String(decoding: read.stdout, as: UTF8.self) == "s3cr3t-from-the-library")  // not a terminal: as stored
    }
}
