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

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(at: url) }
}
