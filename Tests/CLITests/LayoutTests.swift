import Foundation
import TestSupport
import Testing

/// The repository's root, found from this file.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("The source tree shows the architecture (docs/development.md)")
struct LayoutTests {
    /// scripts/check-layout: the targets' arrows point down the map, no dependency cycle between
    /// the folders of a target, no Swift file over 320 lines, and docs/development.md names every
    /// folder and only folders that exist.
    @Test func theLayoutCheckFindsNothing() throws {
        let result = try runProcess(
            "/usr/bin/python3", [repository.appendingPathComponent("scripts/check-layout").path, repository.path],
            environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
        #expect(result.status == 0, "\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// The check itself sees a cycle and a missing folder: a copy of the tree where the store
    /// names the facade, and development.md forgets a folder.
    @Test func theLayoutCheckSeesACycleAndAnUnnamedFolder() throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("kc-layout-\(getpid())")
        defer { try? FileManager.default.removeItem(at: copy) }
        for folder in ["Sources/keychain-cli/Settings", "Sources/keychain-cli/Commands", "docs"] {
            try FileManager.default.createDirectory(
                at: copy.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try "public struct Facade { let store: Seam }\n".write(
            to: copy.appendingPathComponent("Sources/keychain-cli/Commands/Facade.swift"), atomically: true,
            encoding: .utf8)
        try "public protocol Seam { func open() -> Facade }\n".write(
            to: copy.appendingPathComponent("Sources/keychain-cli/Settings/Seam.swift"), atomically: true,
            encoding: .utf8)
        try "# Map\n\n```\nSources/keychain-cli/Settings/  the settings\n```\n".write(
            to: copy.appendingPathComponent("docs/development.md"), atomically: true, encoding: .utf8)
        let result = try runProcess(
            "/usr/bin/python3", [repository.appendingPathComponent("scripts/check-layout").path, copy.path],
            environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 1)
        #expect(output.contains("folders depend on each other: Commands -> Settings -> Commands"), "\(output)")
        #expect(output.contains("does not name the folder Sources/keychain-cli/Commands"), "\(output)")
    }

    /// The check sees an arrow pointing up the map, an import the target does not declare
    /// (SwiftPM lets a file import any target its dependencies depend on), and a GLib reference
    /// dropped by hand outside the GLib support target.
    @Test func theLayoutCheckSeesAnArrowUpAndAnUndeclaredImport() throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("kc-arrows-\(getpid())")
        defer { try? FileManager.default.removeItem(at: copy) }
        for folder in ["Sources/Top", "Sources/Middle", "Sources/Bottom", "Sources/KeychainDBus", "docs"] {
            try FileManager.default.createDirectory(
                at: copy.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let files = [
            "Package.swift": """
            let package = Package(name: "p", targets: [
                .target(name: "Top", dependencies: ["Middle"]),
                .target(name: "Middle", dependencies: ["Bottom", .product(name: "Top", package: "x")]),
                // A dependency on the target above it:
                .target(name: "Bottom", dependencies: ["Middle"]),
            ])
            """,
            "Sources/Top/Top.swift": "import Bottom\n",
            "Sources/Middle/Middle.swift": "internal import Bottom\n",
            "Sources/Bottom/Bottom.swift": "// import Top; g_free(x)\nlet s = \"g_object_unref(y)\"\n",
            "Sources/Middle/Reply.swift": "func f(_ v: OpaquePointer) { g_variant_unref (v) }\n",
            "Sources/KeychainDBus/Owned.swift": "final class Owned { deinit { g_object_unref(raw) } }\n",
            "Sources/Top/Options.swift": "let home = getenv(\"HOME\") // getenv(\"X\") in a comment\n",
            "docs/development.md":
                "# Map\n\n## Map\n\n```\nSources/Top/\nSources/Middle/\nSources/KeychainDBus/\nSources/Bottom/\n```\n",
        ]
        for (path, text) in files {
            try text.write(to: copy.appendingPathComponent(path), atomically: true, encoding: .utf8)
        }
        let result = try runProcess(
            "/usr/bin/python3", [repository.appendingPathComponent("scripts/check-layout").path, copy.path],
            environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
        let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(result.status == 1)
        #expect(
            lines.sorted() == [
                "Package.swift: Bottom depends on Middle, which docs/development.md's map puts above it",
                "Sources/Middle/Reply.swift calls g_variant_unref: GLib's references are owned in Sources/KeychainDBus",
                "Sources/Top/Options.swift calls getenv: the environment is read through "
                    + "Sources/KeychainSystem/Environment.swift",
                "Sources/Top/Top.swift imports Bottom, which Package.swift does not list as a dependency of Top",
            ], "\(lines)")
    }
}
