#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The program a right is bound to: the caller's executable as the kernel names it
/// (`/proc/PID/exe`), read while the caller is pinned by a pidfd (CallerPin), so that the
/// answer is about the caller and not a process that took its pid.
///
/// The executable must be a regular file owned by root and writable by nobody else, in
/// directories that are root's and writable by nobody else (sticky ones such as /tmp
/// allowed, as for any peer that is not root): otherwise the user could swap what runs under that path
/// and get the secret with a program of their own. The file the path names now must be
/// the one the process runs (device and inode), or the path says nothing.
///
/// A Flatpak app's process has a root of its own: its program is checked in root's view
/// as a file of that app's system deployment, and the right is bound to
/// `flatpak:APPID:/app/…` (FlatpakProgram).
///
/// A process confined by an AppArmor profile is bound to the profile as well:
/// `apparmor:PROFILE:` before the path (AppArmorLabel), so the same file run under another
/// profile, or unconfined, is another program. On a system without AppArmor, and for an
/// unconfined process, the path is the whole binding.
///
/// What this does not stop (docs/API.md, "Rights"): root; a debugger of the same user
/// attached to the program (ptrace reads its memory, where the secret arrives); and any
/// process that runs the saver's executable, since the binding is the path, not the intent.
struct ProgramBinding {
    /// The program's path, or for a Flatpak app `flatpak:APPID:/app/…`: what its rights are
    /// saved under.
    let path: String
    /// The process's start time (clock ticks after boot, /proc/PID/stat): with the pid, one
    /// process instance, for its grant.
    let startTime: UInt64

    enum Refusal: Error {
        case notPinned(String)
        case untrusted(String)
    }

    /// `interpreters`: whether an interpreter or a loader may hold rights (Interpreters).
    static func of(pid: Int32, interpreters: Bool) throws(Refusal) -> ProgramBinding {
        guard let pin = CallerPin(caller: pid) else {
            throw .notPinned("the calling process could not be pinned (it ended, or is not the caller)")
        }
        defer { pin.close() }
        let exe = executable(pid)
        if let why = RightsRule.executableRefusal(exe) { throw .untrusted(why) }
        let path = exe!
        // The file in root's view: the path itself, or a Flatpak app's deployed file.
        let flatpak = try FlatpakProgram.of(pid: pid, exe: path)
        let file = flatpak?.file ?? path
        try checkFile(file, pid: pid)
        try checkDirectories(above: file)
        if let why = RightsRule.interpreterRefusal(path, isInterpreter: !interpreters && Interpreters.isInterpreter(file),
                                                   allowed: interpreters) {
            throw .untrusted(why)
        }
        let profile = try apparmorProfile(pid)
        guard let stat = ProcStat(pid: pid), pin.stillRunning else {
            throw .notPinned("the calling process ended while it was examined")
        }
        return ProgramBinding(path: AppArmorLabel.bound(flatpak?.identity ?? path, profile: profile),
                              startTime: stat.startTime)
    }

    /// The caller's AppArmor profile, nil when it is unconfined or the kernel runs no
    /// AppArmor (the file is missing, or reading it says the module is not enabled).
    /// Any other failure refuses: a confined caller must not pass for an unconfined one.
    private static func apparmorProfile(_ pid: Int32) throws(Refusal) -> String? {
        let path = "/proc/\(pid)/attr/apparmor/current"
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 && errno == ENOENT { return nil }
        guard fd >= 0 else { throw .untrusted("its AppArmor label cannot be read (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4098)
        var n: Int
        repeat { n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } } while n < 0 && errno == EINTR
        if n < 0 && errno == EINVAL { return nil }
        guard n >= 0, n < buffer.count else { throw .untrusted("its AppArmor label cannot be read") }
        switch AppArmorLabel.profile(fromAttr: String(decoding: buffer[0..<n], as: UTF8.self)) {
        case .success(let profile): return profile
        case .failure: throw .untrusted("its AppArmor label is not one this reads")
        }
    }

    /// The start time of `pid` now, for comparing with a grant (nil when it is gone).
    static func startTime(of pid: Int32) -> UInt64? { ProcStat(pid: pid)?.startTime }

    private static func executable(_ pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    private static func checkFile(_ path: String, pid: Int32) throws(Refusal) {
        var running = stat()
        var named = stat()
        guard stat("/proc/\(pid)/exe", &running) == 0, lstat(path, &named) == 0 else {
            throw .untrusted("\(quoted(path)) cannot be examined")
        }
        if let why = RightsRule.fileRefusal(path, named: facts(named), running: facts(running)) { throw .untrusted(why) }
    }

    private static func facts(_ st: stat) -> RightsRule.FileFacts {
        RightsRule.FileFacts(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), regular: (st.st_mode & S_IFMT) == S_IFREG,
                             rootsFile: RootOwned.isRootsFile(st))
    }

    private static func checkDirectories(above path: String) throws(Refusal) {
        guard let (dir, isDirectory) = RootOwned.firstUntrustedDirectory(above: path) else { return }
        guard isDirectory else { throw .untrusted("\(quoted(dir)) is not a directory") }
        throw .untrusted("\(quoted(dir)) (above the program) must be root's and writable by nobody else")
    }

    /// A path in a log line or a cause: one word, as the helper writes what a caller chose.
    static func quoted(_ path: String) -> String { LogWords.word(path) }
}
