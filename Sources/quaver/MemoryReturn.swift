internal import CShims
import Dispatch

/// Hands the memory a track change freed back to the system. Every track taken down frees
/// what GStreamer made for it (decoders, queues, buffers, thread stacks), and glibc's malloc
/// keeps the free pages inside its heaps for reuse: resident memory then stays at its
/// highest, and a daemon that has lived through a burst of commands stays that large. A
/// second after a change of track or state (at most once a second, and never while nothing
/// happens), `malloc_trim` gives those pages back.
@MainActor
final class MemoryReturn {
    static let delay: Duration = .seconds(1)
    private var scheduled = false

    /// The player changed track or state: memory may have been freed.
    func playerChanged() {
        guard !scheduled else { return }
        scheduled = true
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(Int(Self.delay.components.seconds) * 1000)) { [weak self] in
            MainActor.assumeIsolated {
                self?.scheduled = false
                _ = cshims_release_free_memory()
            }
        }
    }
}
