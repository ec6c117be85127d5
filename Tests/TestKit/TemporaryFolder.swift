public import Foundation

/// A folder of its own under the system temporary directory, removed by `remove()`.
public struct TemporaryFolder: Sendable {
    /// The folder.
    public let url: URL

    /// Makes the folder, named after `label` (the test's name by default).
    public init(_ label: String = #function) throws {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("quaver-tests-\(safe)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Removes the folder and everything in it.
    public func remove() { try? FileManager.default.removeItem(at: url) }

    /// A path inside the folder (nothing is created).
    public func path(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    /// Writes `contents` at `relative`, creating intermediate folders.
    @discardableResult
    public func write(_ relative: String, _ contents: String = "") throws -> URL {
        try write(relative, data: Data(contents.utf8))
    }

    /// Writes `data` at `relative`, creating intermediate folders.
    @discardableResult
    public func write(_ relative: String, data: Data) throws -> URL {
        let file = path(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return file
    }

    /// Makes the folder `relative` and those above it.
    @discardableResult
    public func makeFolder(_ relative: String) throws -> URL {
        let folder = path(relative)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The URI `MediaSources` produces for a file in this folder.
    public func uri(_ relative: String) -> String { path(relative).standardizedFileURL.absoluteString }
}
