import Foundation
import TestSupport
import Testing

/// The repository's root, found from this file.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("The source tree shows the architecture (docs/development.md)")
struct LayoutTests {
    /// scripts/check-layout: no dependency cycle between the folders of a target, no Swift file
    /// over 320 lines, and docs/development.md names every folder and only folders that exist.
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
        for folder in ["Sources/KeychainCore/Store", "Sources/KeychainCore/Keychain", "docs"] {
            try FileManager.default.createDirectory(
                at: copy.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try "public struct Facade { let store: Seam }\n".write(
            to: copy.appendingPathComponent("Sources/KeychainCore/Keychain/Facade.swift"), atomically: true,
            encoding: .utf8)
        try "public protocol Seam { func open() -> Facade }\n".write(
            to: copy.appendingPathComponent("Sources/KeychainCore/Store/Seam.swift"), atomically: true,
            encoding: .utf8)
        try "# Map\n\n```\nSources/KeychainCore/Store/  the seam\n```\n".write(
            to: copy.appendingPathComponent("docs/development.md"), atomically: true, encoding: .utf8)
        let result = try runProcess(
            "/usr/bin/python3", [repository.appendingPathComponent("scripts/check-layout").path, copy.path],
            environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 1)
        #expect(output.contains("folders depend on each other: Keychain -> Store -> Keychain"), "\(output)")
        #expect(output.contains("does not name the folder Sources/KeychainCore/Keychain"), "\(output)")
    }
}
