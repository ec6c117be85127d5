import Foundation
import TestKit
import Testing

/// The code of the NowPlaying articles (Sources/NowPlaying/NowPlaying.docc), taken as an
/// adopter takes it: each `swift` block is read from the articles when the test runs, so the
/// articles and the test cannot drift apart. The `Package.swift` fragment and the programs go
/// as written into a package outside the project that depends on Quaver by path, which is
/// built once per run; the "Become controllable" program then runs on a private bus and is
/// driven with the commands of the article's `console` block, whose output must match.
@Suite("the NowPlaying articles' code, built outside the project and run", .serialized)
@MainActor
struct ArticleCodeTests {
    static let articles = Tools.repository.appendingPathComponent("Sources/NowPlaying/NowPlaying.docc")

    /// One fenced block of an article.
    struct Block {
        var article: String
        var language: String
        var text: String
    }

    /// Every fenced block of every article, in order.
    static func blocks() throws -> [Block] {
        let files = try FileManager.default.contentsOfDirectory(atPath: articles.path).filter { $0.hasSuffix(".md") }
            .sorted()
        var blocks: [Block] = []
        for file in files {
            let text = try String(contentsOf: articles.appendingPathComponent(file), encoding: .utf8)
            var current: Block?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if var block = current {
                    if line.trimmingCharacters(in: .whitespaces) == "```" {
                        blocks.append(block)
                        current = nil
                    } else {
                        block.text += line + "\n"
                        current = block
                    }
                } else if line.hasPrefix("```") {
                    current = Block(article: file, language: String(line.dropFirst(3)), text: "")
                }
            }
        }
        return blocks
    }

    /// What a `swift` block is: a `Package.swift` fragment, a program, or neither.
    static func isManifestFragment(_ block: Block) -> Bool { block.text.contains(".package(") }
    static func isProgram(_ block: Block) -> Bool {
        block.text.split(separator: "\n").contains { $0.hasPrefix("import NowPlaying") }
    }

    /// The adopter's package, built once per run: the executable of each program, by target name.
    static var built: [String: URL]?

    /// The folder beside which the adopter's package sits: outside the project, one per
    /// checkout (named after its path, so that clones on one machine do not share it), and
    /// kept between runs, so that a second run builds only what changed.
    static var workFolder: URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a of the checkout's path
        for byte in Tools.repository.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return FileManager.default.temporaryDirectory.appendingPathComponent(
            "quaver-adopter-\(getuid())-\(String(hash, radix: 16))")
    }

    /// Writes the package from the articles' blocks and builds it (a minute or two the first
    /// time, seconds after), once per run; returns each program's executable.
    static func buildAdopter() async throws -> [String: URL] {
        if let built { return built }
        let swiftBlocks = try blocks().filter { $0.language == "swift" }
        let fragments = swiftBlocks.filter(isManifestFragment)
        let programs = swiftBlocks.filter(isProgram)
        let others = swiftBlocks.filter { !isManifestFragment($0) && !isProgram($0) }
        #expect(others.isEmpty, "swift blocks that are neither a Package.swift fragment nor a program: \(others)")
        guard fragments.count == 1, let fragment = fragments.first, !programs.isEmpty else {
            throw HarnessError(
                "expected one Package.swift fragment and at least one program in the articles, found \(fragments.count) and \(programs.count)"
            )
        }
        // The fragment names the executable target the first program goes into; any other
        // program gets a target of its own, with the same dependencies.
        guard let match = fragment.text.firstMatch(of: /executableTarget\(name: "(\w+)"/) else {
            throw HarnessError("the Package.swift fragment names no executable target: \(fragment.text)")
        }
        let target = String(match.1)
        guard let dependency = fragment.text.firstMatch(of: /\.package\(path: "\.\.\/(\w+)"\)/) else {
            throw HarnessError("the Package.swift fragment depends on no package beside it: \(fragment.text)")
        }
        // The article tells where the program goes, and the test puts it there.
        let article = try String(contentsOf: articles.appendingPathComponent(programs[0].article), encoding: .utf8)
        #expect(
            article.contains("`Sources/\(target)/main.swift`"),
            "\(programs[0].article) does not say that the program goes in Sources/\(target)/main.swift")
        let work = workFolder
        let package = work.appendingPathComponent("Adopter")
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: package, withIntermediateDirectories: true)
        // The checkout "beside" the adopter's package, under the name the fragment uses.
        let beside = work.appendingPathComponent(String(dependency.1))
        try? fileManager.removeItem(at: beside)
        try fileManager.createSymbolicLink(at: beside, withDestinationURL: Tools.repository)
        try? fileManager.removeItem(at: package.appendingPathComponent("Sources"))

        var targets = [target]
        var manifest = """
            // swift-tools-version: 6.0
            import PackageDescription

            let package = Package(
                name: "Adopter",
            \(fragment.text))

            """
        for index in programs.indices.dropFirst() {
            let name = "Program\(index + 1)"
            targets.append(name)
            manifest += """
                package.targets.append(.executableTarget(name: "\(name)", dependencies: package.targets[0].dependencies))

                """
        }
        try manifest.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        for (name, program) in zip(targets, programs) {
            let folder = package.appendingPathComponent("Sources/\(name)")
            try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
            try program.text.write(to: folder.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)
        }

        guard let swift = Tools.find("swift") else { throw HarnessError("swift is not on PATH") }
        let scratch = work.appendingPathComponent("build")
        let log = work.appendingPathComponent("build.log")
        let started = ContinuousClock.now
        // scripts/test ends a test process silent for 4 minutes: say that the build goes on.
        let ticker = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(60))
                print("the articles' package still builds (\((ContinuousClock.now - started).inSeconds) s)")
            }
        }
        defer { ticker.cancel() }
        let result = try await Tools.run(
            [swift.path, "build", "--package-path", package.path, "--scratch-path", scratch.path],
            environment: ProcessInfo.processInfo.environment, log: log, timeout: .seconds(900))
        guard result.status == 0 else {
            throw HarnessError("the articles' package does not build (\(package.path)):\n\(result.output.suffix(6000))")
        }
        print("the articles' package (\(package.path)) built in \(ContinuousClock.now - started)")
        let binaries = scratch.appendingPathComponent("debug")
        let executables = Dictionary(uniqueKeysWithValues: targets.map { ($0, binaries.appendingPathComponent($0)) })
        built = executables
        return executables
    }

    @Test("every program and Package.swift fragment of the articles builds, as written, outside the project")
    func articlesBuild() async throws {
        let executables = try await Self.buildAdopter()
        for (name, executable) in executables {
            #expect(FileManager.default.isExecutableFile(atPath: executable.path), "\(name): no \(executable.path)")
        }
    }

    @Test("the 20-line egg timer answers playerctl as the article shows")
    func eggTimerAnswersAsTheArticleShows() async throws {
        let blocks = try Self.blocks().filter { $0.article == "BecomeControllable.md" }
        let program = try #require(blocks.first { Self.isProgram($0) }, "the article has no program")
        let console = try #require(blocks.first { $0.language == "console" }, "the article has no console block")
        let name = try #require(
            program.text.firstMatch(of: /playerName: "(\w+)"/).map { String($0.1) }, "the program names no player")
        let executable = try #require(try await Self.buildAdopter().values.first)

        let session = try await Session(name: name)
        defer { session.stop() }
        try await session.launch(command: [executable.path])
        guard let playerctl = Tools.find("playerctl") else { throw HarnessError("playerctl is not installed") }

        // "$ command" lines, each followed by what it prints.
        var steps: [(command: [String], expected: [String])] = []
        for line in console.text.split(separator: "\n") {
            if line.hasPrefix("$ ") {
                steps.append((line.dropFirst(2).split(separator: " ").map(String.init), []))
            } else if !steps.isEmpty {
                steps[steps.count - 1].expected.append(String(line))
            }
        }
        #expect(steps.count >= 5, "the console block: \(console.text)")
        // Runs of spaces are playerctl's column padding: compared as one.
        func words(_ text: String) -> String {
            text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        for step in steps {
            #expect(step.command.first == "playerctl", "a step that is not playerctl: \(step.command)")
            let result = try await Tools.run(
                playerctl, Array(step.command.dropFirst()), environment: session.environment)
            let printed = words(result.output + "\n" + result.error)
            let expected = words(step.expected.joined(separator: "\n"))
            if let shown = Double(expected) {
                // A position: the article shows one moment; any moment of a playing timer
                // is a time after its start and within its six minutes.
                let position = Double(printed) ?? -1
                #expect(
                    position > 0 && position < 360,
                    "\(step.command.joined(separator: " ")): \(printed) (shown: \(shown))"
                )
            } else {
                #expect(printed == expected, "\(step.command.joined(separator: " "))")
            }
        }
        #expect(session.daemonStatus == nil, "the egg timer exited: \(session.log())")
    }
}
