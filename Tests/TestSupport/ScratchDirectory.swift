import Foundation

/// A new empty directory under the temporary directory, for files a test writes.
public struct ScratchDirectory: Sendable {
    public let url: URL

    public init(_ label: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("kc-\(label)-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Opens the directory to every user and copies keychain-cli into it, runnable by any user
    /// (a test as nobody, wherever the build is); the copy's path.
    public func openWithCopyOfCLI() throws -> String {
        chmod(url.path, 0o777)
        let binary = path("keychain-cli")
        try FileManager.default.copyItem(atPath: keychainCLIPath, toPath: binary)
        chmod(binary, 0o755)
        return binary
    }

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(at: url) }
}
