// swift-tools-version: 6.0
// Quaver and its libraries, NowPlaying and DBus. SPDX-License-Identifier: Apache-2.0
import PackageDescription

let package = Package(
    name: "Quaver",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "quaver", targets: ["quaver"]),
        .library(name: "NowPlaying", targets: ["NowPlaying"]),
        .library(name: "DBus", targets: ["DBus"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // Only scripts/docs uses it (`swift package generate-documentation`); nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: - C interop: system libraries found through pkg-config, and the shims. The
        // GStreamer shims are apart from the libc ones so that DBus and NowPlaying, which
        // other programs adopt, link libdbus-1 alone.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-pbutils-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]
        ),
        .target(name: "CGStreamerShims", dependencies: ["CGStreamer"]),
        .target(name: "CLibcShims"),

        // MARK: - Swift
        .target(
            name: "DBus",
            dependencies: ["CDBus", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "NowPlaying",
            dependencies: ["DBus", .product(name: "Logging", package: "swift-log")]
        ),
        // MARK: Playback, in layers: each target names only the ones below it, so that a cycle
        // does not compile (docs/architecture.md draws them), and each file imports the
        // layers it uses: nothing is re-exported.
        // The bottom layer: the words every other layer speaks (status, repeat mode, the
        // pipeline's state and facts, Locked, text and duration helpers). No GStreamer.
        .target(name: "PlaybackVocabulary"),
        // What an entry is: local files, playlists and folders, tags and artwork (the
        // discoverer), media formats, loudness tags and plans, redaction in logs.
        .target(
            name: "Media",
            dependencies: [
                "PlaybackVocabulary", "CGStreamer", "CGStreamerShims", "CLibcShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The sole owner of playbin, on its own queue, and its audio filter (ReplayGain's
        // elements): it loads, plays, seeks and reports events; it decides nothing.
        .target(
            name: "PlaybackPipeline",
            dependencies: ["PlaybackVocabulary", "Media", "CGStreamer", "CGStreamerShims", "CLibcShims"]
        ),
        // The engine: plays one entry at a time through the pipeline, with the transport
        // reducer, the position clock, the progress, stream and preroll watches.
        .target(
            name: "PlaybackEngine",
            dependencies: [
                "PlaybackVocabulary", "Media", "PlaybackPipeline",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The player: the queue, the play order, the conductor, the catalog, the loudness
        // plans' cache of measured gains; the public façade the daemon drives.
        .target(
            name: "PlaybackPlayer",
            dependencies: [
                "PlaybackVocabulary", "Media", "PlaybackEngine", "CLibcShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Renders tagged tones with GStreamer: the demo playlist of `quaver` with no music, and
        // the media the tests play. Not part of the library: nothing that plays needs it.
        .target(
            name: "ToneGenerator",
            dependencies: ["PlaybackVocabulary", "Media", "CGStreamer", "CGStreamerShims"]
        ),
        .executableTarget(
            name: "quaver",
            dependencies: [
                "DBus", "NowPlaying", "PlaybackVocabulary", "Media", "PlaybackPipeline", "PlaybackEngine",
                "PlaybackPlayer", "ToneGenerator", "CLibcShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "SeededRandom"),
        // Checks of rendered audio (WAV files, the gapless reference and its analysis, a
        // tone's pitch) and the odd media they play, shared by the benchmark and the tests.
        .target(name: "AudioCheck"),
        // The library's adopter's model: a program that is not a music player (kitchen timers).
        .executableTarget(name: "countdown", dependencies: ["NowPlaying", "DBus"], path: "Examples/Countdown"),
        // Measures through the tests' support kit (TestKit): a regular target, so an executable
        // may depend on it.
        .executableTarget(
            name: "quaver-bench",
            dependencies: [
                "DBus", "SeededRandom", "AudioCheck", "TestKit", "ChildProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // MARK: - Tests
        // How every test starts a program: descriptors and signals handled so that one
        // test's child never holds another's pipes, and waiting never blocks a thread.
        .target(name: "CSpawn", path: "Tests/CSpawn"),
        .target(name: "ChildProcess", dependencies: ["CSpawn"], path: "Tests/ChildProcess"),
        // What every test target and the benchmark share: a private bus, waiting for a
        // condition without sleeping, temporary folders, finding and running programs, reading
        // /proc, MPRIS's names and recorded signals.
        .target(
            name: "TestKit",
            dependencies: ["ChildProcess", "DBus", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestKit"),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "CDBus", "TestKit"]),
        .testTarget(name: "NowPlayingTests", dependencies: ["NowPlaying", "DBus", "SeededRandom", "TestKit"]),
        .testTarget(
            name: "PlaybackTests",
            dependencies: [
                "PlaybackVocabulary", "Media", "PlaybackPipeline", "PlaybackEngine", "PlaybackPlayer", "ToneGenerator",
                "SeededRandom", "AudioCheck", "TestKit", "CLibcShims",
            ]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["DBus", "CDBus", "NowPlaying", "SeededRandom", "AudioCheck", "TestKit"]),
        // The daemon's pure decisions (the session save, the start-up), through `@testable import`.
        .testTarget(name: "QuaverTests", dependencies: ["quaver", "SeededRandom", "TestKit"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets
where target.type != .system && !["CGStreamerShims", "CLibcShims", "CSpawn"].contains(target.name) {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}
