import CLibcShims
import Dispatch
import Glibc
import Logging
import PlaybackVocabulary

/// Start-up runs code that playing never runs again: the dynamic loader's relocation tables,
/// the argument parser, the configuration and session readers, much of Foundation. They stay
/// mapped for as long as the daemon lives, and make up about half of what it holds resident
/// of its own program. Once the start is over, the program's pages that are never written
/// are handed back to the kernel; those that playing uses come back at their first touch.
enum StartupPages {
    /// How long after the bus name is owned the start counts as over: the first track is
    /// read, its pipeline built and playing by then, also on a slow machine.
    static let delay = Duration.seconds(10)

    /// Hands the start's pages back `delay` from now, off the main actor (the kernel walks
    /// the pages in the call), with one debug line saying how much was resident. On a queue
    /// of its own: the first job on one of libdispatch's global queues starts its worker-pool
    /// monitor, which wakes the process every second from then on.
    static func releaseSoon(logger: Logger) {
        DispatchQueue(label: "quaver.startup-pages").asyncAfter(deadline: .now() + delay.dispatchInterval) {
            release(logger: logger)
        }
    }

    /// Hands the program's pages that are never written back to the kernel now. The log
    /// line comes first: formatting and writing it afterwards would bring back, at once, the
    /// pages of code it runs.
    static func release(logger: Logger) {
        logger.debug(
            "start-up over: \(mebibytes(csystem_resident_bytes())) resident; handing back the program's pages only it used"
        )
        if csystem_page_out_program() != 0 {
            let reason = String(cString: strerror(errno))
            logger.debug("the program's start-up pages stay resident: madvise(MADV_PAGEOUT) failed (\(reason))")
        }
    }

    private static func mebibytes(_ bytes: Int64) -> String {
        (Double(bytes) / Double(1 << 20)).decimalText(places: 1) + " MiB"
    }
}
