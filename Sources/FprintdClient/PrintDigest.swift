import SystemBus
import LocalAuth
#if canImport(Glibc)
import Glibc
#endif

/// fprintd's print storage: `<fprintDir>/<user>/<driver>/<device-id>/<finger>`, where
/// `<finger>` is libfprint's finger number in hex (`7` for the right index finger).
/// fprintd does not tell its clients a reader's driver and device id, so they are found
/// here, as the one directory whose print files are the enrolled fingers.
/// Root only on a real system; everything here degrades to "unknown" when unreadable.
public enum PrintDigest {
    /// Largest print file hashed. Real prints are a few KiB to a few hundred KiB.
    static let maxFileSize = 4 << 20

    /// libfprint's `FpFinger` order: `left-thumb` is 1 … `right-little-finger` is 10.
    static let fingerNumbers: [String: Int] = {
        let names = ["left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger",
                     "left-little-finger", "right-thumb", "right-index-finger",
                     "right-middle-finger", "right-ring-finger", "right-little-finger"]
        return Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0 + 1) })
    }()

    /// The print file name of a finger, nil for a name libfprint does not have.
    static func fileName(of finger: String) -> String? {
        fingerNumbers[finger].map { String($0, radix: 16) }
    }

    /// `<driver>/<device-id>` of the reader holding exactly `fingers` for `user`, or nil
    /// when the storage is unreadable or no single directory fits.
    static func locateDevice(fprintDir: String, user: String, fingers: [String]) -> String? {
        guard isPlainName(user) else { return nil }
        let wanted = Set(fingers.compactMap(fileName(of:)))
        guard wanted.count == fingers.count, !wanted.isEmpty,
              let userDir = Directory(path: fprintDir)?.child(user) else { return nil }
        var exact: [String] = []
        var containing: [String] = []
        for driver in userDir.subdirectories() {
            guard let driverDir = userDir.child(driver) else { continue }
            for device in driverDir.subdirectories() {
                guard let files = driverDir.child(device)?.regularFiles() else { continue }
                let prints = files.intersection(Set(fingerNumbers.values.map { String($0, radix: 16) }))
                if prints == wanted { exact.append("\(driver)/\(device)") }
                else if prints.isSuperset(of: wanted) { containing.append("\(driver)/\(device)") }
            }
        }
        if exact.count == 1 { return exact[0] }
        return exact.isEmpty && containing.count == 1 ? containing[0] : nil
    }

    /// SHA-256 of each finger's print file, concatenated in the order given (the sorted
    /// finger names). Empty when any one cannot be read: partial material would change
    /// with permissions rather than with the enrolled set.
    static func material(fprintDir: String, user: String, device: String,
                         fingers: [String]) -> [UInt8] {
        let parts = device.split(separator: "/").map(String.init)
        guard isPlainName(user), parts.count == 2, parts.allSatisfy(isPlainName),
              let dir = Directory(path: fprintDir)?.child(user)?.child(parts[0])?.child(parts[1])
        else { return [] }
        var out: [UInt8] = []
        for finger in fingers {
            guard let name = fileName(of: finger), let bytes = dir.readFile(name, limit: maxFileSize)
            else { return [] }
            out += Crypto.sha256(bytes)
        }
        return out
    }

    /// A single path component: not empty, not `.` or `..`, no `/`.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }
}
