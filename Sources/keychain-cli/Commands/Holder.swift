import ArgumentParser
import Glibc
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    /// The holder `unlock` starts (not for users: it takes its vaults from `unlock` over its
    /// socket). It tells its starter on descriptor 3 that it listens ("ready"), that another
    /// holder does ("running"), or why it cannot ("error: …"), then closes it.
    struct Holder: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The holder unlock starts (not run by hand).", shouldDisplay: false)

        func run() throws {
            let starter: Int32 = 3
            func tell(_ line: String) {
                _ = Array((line + "\n").utf8).withUnsafeBufferPointer { writeAll(starter, $0) }
            }
            signal(SIGHUP, SIG_IGN)
            signal(SIGINT, SIG_IGN)
            // A daemon keeps no directory busy (the one unlock ran in may be a USB stick's).
            _ = chdir("/")
            for warning in Startup.holdSecretsSafely("the holder") { tell(String(warning.trimming())) }
            let place = HolderPlace.current()
            let listener: Int32
            do {
                _ = try place.check(creating: true)
                // Another holder that is ending lets go of the lock within moments.
                guard try place.takeLock(waiting: 2) else {
                    tell("running")
                    close(starter)
                    return
                }
                listener = try place.listen()
            } catch {
                tell("error: \(error)")
                close(starter)
                return
            }
            let holder = VaultHolder(listener: listener, place: place)
            let sleep = SleepWatch(waiting: 2) { holder.forgetAll() }
            tell("ready")
            close(starter)
            do {
                try holder.run(watching: sleep)
            } catch {
                // Nobody reads its stderr: it ends, and the next unlock starts another.
                return
            }
        }
    }
}
