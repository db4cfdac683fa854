// swift-tools-version: 6.1
import PackageDescription

// Linux only: the Secret Service (libsecret, GIO), Glibc and Linux calls (inotify, O_TMPFILE, prctl).
let package = Package(
    name: "keychain-cli",
    products: [
        .executable(name: "keychain-cli", targets: ["keychain-cli"]),
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
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
        // Linux calls Swift cannot make directly (variadic prctl and open, the O_TMPFILE macro).
        .systemLibrary(name: "CLinux"),
        // The OpenBao backend's HTTP client: libcurl's headers at build time, the library loaded
        // with dlopen on first use (see the shim), so that the other backends never load it.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(
            name: "KeychainCore",
            dependencies: [
                "CLinux",
                "CCurl",
                "CLibSecret",
                "CLibGcrypt",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "keychain-cli",
            dependencies: [
                "KeychainCore",
                "CLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `make fuzz`: libFuzzer over the parsers of untrusted bytes; otherwise a corpus replayer.
        .executableTarget(name: "keychain-fuzz", dependencies: ["KeychainCore"], path: "Fuzz/keychain-fuzz"),
        // `make bench`: the in-process cache benchmark (not installed).
        .executableTarget(name: "keychain-bench", dependencies: ["KeychainCore"], path: "bench/keychain-bench"),
        // Shared by the test targets: child processes, the private keyring session, the CLI runner.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // The engine over InMemorySecretStore: no backend, no processes.
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: ["KeychainCore", .product(name: "Crypto", package: "swift-crypto")]),
        // The built binary: help, exit codes, input and output rules, terminals (via expect).
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
        // SecretServiceStore against a real gnome-keyring; interop with secret-tool and python keyring.
        .testTarget(name: "IntegrationTests", dependencies: ["KeychainCore", "TestSupport"]),
    ]
)
