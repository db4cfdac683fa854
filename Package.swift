// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "keychain-cli",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "keychain-cli", targets: ["keychain-cli"]),
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0")
    ],
    targets: [
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .target(
            name: "KeychainCore",
            dependencies: ["CLibSecret"]
        ),
        .executableTarget(
            name: "keychain-cli",
            dependencies: [
                "KeychainCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ]
)
