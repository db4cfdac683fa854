// swift-tools-version: 6.1
import PackageDescription

// Linux only: the Secret Service (libsecret, GIO), Glibc and Linux calls (inotify, O_TMPFILE, prctl).
let package = Package(
    name: "keychain-cli",
    products: [
        .executable(name: "keychain-cli", targets: ["keychain-cli"]),
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
        // The facade and the vault alone: links swift-crypto, not GIO, libsecret, libgcrypt or libcurl.
        .library(name: "KeychainVault", targets: ["KeychainFacade", "KeychainVault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
        // The vault: ChaCha20-Poly1305, HKDF and HMAC (Crypto), scrypt (CryptoExtras).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        // The Secret Service's encrypted session: libsecret's own dependency, and the only one with
        // the finite-field Diffie-Hellman arithmetic the session needs (swift-crypto has none).
        .systemLibrary(
            name: "CLibGcrypt",
            pkgConfig: "libgcrypt",
            providers: [.apt(["libgcrypt20-dev"])]
        ),
        // KeePassXC's XML export (import --format keepassxc): libxml2's streaming reader.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // gzip's inflate, for a KDBX 3.1 database's compressed attachments.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libsecret, GIO, GObject, GLib, libgcrypt and libxml2 loaded on first use, not at every
        // start: a stand-in for each function called (see library_loader.c).
        .target(name: "CLibraryLoader"),
        // Linux calls Swift cannot make directly (variadic prctl and open, the O_TMPFILE macro).
        .systemLibrary(name: "CLinux"),
        // The OpenBao backend's HTTP client: libcurl's headers at build time, the library loaded
        // with dlopen on first use (see the shim), so that the other backends never load it.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The library, one target per layer (docs/development.md): each depends only on the ones
        // below it, so the compiler keeps the arrows pointing down.
        .target(name: "KeychainSystem", dependencies: ["CLinux"]),
        .target(name: "KeychainCredentials", dependencies: ["KeychainSystem"]),
        // The seam: SecretStore and what every backend shares. Crypto for the items' fingerprints.
        .target(
            name: "KeychainStore",
            dependencies: ["KeychainSystem", "KeychainCredentials", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "KeychainSecrets",
            dependencies: ["KeychainStore", "KeychainSystem", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(name: "KeychainFormats", dependencies: ["KeychainStore", "KeychainSystem"]),
        // Other password managers' and authenticator apps' exports (CSV, JSON, encrypted OTP
        // backups) as password-manager entries, for import.
        .target(
            name: "KeychainManagers",
            dependencies: [
                "KeychainFormats", "KeychainSystem", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // KeePassXC's XML export as password-manager entries (libxml2), apart from the formats so
        // that a program on the vault alone does not link libxml2.
        .target(
            name: "KeychainKeePass",
            dependencies: ["KeychainFormats", "KeychainStore", "KeychainSystem", "CLibXML2", "CLibraryLoader", "CZlib"]
        ),
        .target(
            name: "KeychainAge",
            dependencies: [
                "KeychainSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // OpenSSH's key and signature formats (SSHSIG, allowed_signers, the agent): signed vaults.
        .target(
            name: "KeychainSSH",
            dependencies: [
                "KeychainSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // age's ssh-rsa recipients: RSA-OAEP with a label, which swift-crypto lacks, by libgcrypt; a
        // target of its own, so that the KeychainVault product links no libgcrypt (the CLI registers it).
        .target(
            name: "KeychainAgeRSA",
            dependencies: [
                "KeychainAge", "KeychainSSH", "KeychainSystem", "CLibGcrypt", "CLibraryLoader",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "KeychainVault",
            dependencies: [
                "KeychainStore", "KeychainSystem", "KeychainFormats", "KeychainAge",
                // Signed vaults: SSHSIG signatures checked against allowed_signers.
                "KeychainSSH",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The D-Bus layer, below every store: our own wire client (message, socket, authentication),
        // GLib and GIO shared by the Secret Service client and provider (who owns which reference,
        // the bounded main-context runner). It knows no store and throws its own DBusError.
        .target(name: "KeychainDBus", dependencies: ["KeychainSystem", "CLibSecret", "CLibraryLoader"]),
        // The Secret Service's encrypted session, both sides (libgcrypt).
        .target(
            name: "KeychainSecretSession",
            dependencies: ["KeychainStore", "KeychainSystem", "CLibGcrypt", "CLibraryLoader"]
        ),
        .target(
            name: "KeychainSecretService",
            dependencies: [
                "KeychainStore", "KeychainSystem", "KeychainCredentials", "KeychainDBus", "KeychainSecretSession",
                "CLibSecret",
            ]
        ),
        .target(
            name: "KeychainProvider",
            dependencies: ["KeychainStore", "KeychainSystem", "KeychainDBus", "KeychainSecretSession", "CLibSecret"]
        ),
        .target(name: "KeychainOpenBao", dependencies: ["KeychainStore", "KeychainSystem", "CCurl"]),
        // `unlock`'s holder and the vault through it, and `ssh-agent`: the command line's, not the library's.
        .target(
            name: "KeychainHolder",
            dependencies: [
                "KeychainStore", "KeychainSystem", "KeychainAge", "KeychainVault", "KeychainDBus", "CLibSecret",
                "CLinux", "KeychainSSH",
            ]
        ),
        // The facade knows the seam only; KeychainCore adds the desktop's default store.
        .target(name: "KeychainFacade", dependencies: ["KeychainStore", "KeychainSystem"]),
        .target(
            name: "KeychainCore",
            dependencies: [
                "KeychainSystem", "KeychainCredentials", "KeychainStore", "KeychainSecrets", "KeychainFormats",
                "KeychainAge", "KeychainVault", "KeychainSecretService", "KeychainProvider", "KeychainOpenBao",
                "KeychainFacade", "KeychainKeePass", "KeychainManagers",
                // OpenSSH keys and signatures, for signed vaults.
                "KeychainSSH",
            ]
        ),
        // Each parser of untrusted bytes as a fuzzing entry point (keychain-fuzz, the corpus tests).
        .target(
            name: "KeychainFuzzTargets",
            dependencies: [
                "KeychainStore", "KeychainCredentials", "KeychainFormats", "KeychainAge", "KeychainVault",
                "KeychainKeePass", "KeychainManagers", "KeychainSSH", "KeychainSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                // eventually(), the tests' one polling helper.
                "TestSupport",
            ]
        ),
        .executableTarget(
            name: "keychain-cli",
            dependencies: [
                "KeychainCore",
                "KeychainHolder",
                // Signing keys and allowed signers (--signing-key, --allowed-signers).
                "KeychainSSH",
                // ssh-rsa recipients and identities, registered at start.
                "KeychainAgeRSA",
                "CLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `make fuzz`: libFuzzer over the parsers of untrusted bytes; otherwise a corpus replayer.
        .executableTarget(name: "keychain-fuzz", dependencies: ["KeychainFuzzTargets"], path: "Fuzz/keychain-fuzz"),
        // A program on the KeychainVault product alone (LibraryLinkTests: what it links).
        .executableTarget(
            name: "vault-only", dependencies: ["KeychainFacade", "KeychainVault"], path: "Examples/vault-only"),
        // `make bench`: the in-process cache benchmark (not installed).
        .executableTarget(name: "keychain-bench", dependencies: ["KeychainCore"], path: "bench/keychain-bench"),
        // Shared by the test targets: child processes, the private keyring session, the CLI runner.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // The engine over InMemorySecretStore: no backend. The one exception is the Secret
        // Service's quirks, scripted once and played on every transport: in process, and by a
        // scripted service on a private bus (TestSupport starts it).
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: [
                "KeychainCore", "KeychainDBus", "KeychainSecretSession", "KeychainProvider", "KeychainFuzzTargets",
                "KeychainKeePass", "KeychainAgeRSA", .product(name: "Crypto", package: "swift-crypto"),
                // SSHSIG, allowed_signers and the agent, checked against the real ssh-keygen and ssh-agent.
                "KeychainSSH",
                // eventually(), the tests' one polling helper; ScriptedPeer, the scripted Secret Service.
                "TestSupport",
            ]
        ),
        // The built binary: help, exit codes, input and output rules, terminals (via expect).
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
        // SecretServiceStore against a real gnome-keyring; interop with secret-tool and python keyring.
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["KeychainCore", "KeychainDBus", "KeychainSecretService", "TestSupport"]
        ),
    ]
)
