/// fprintd's names on the bus (DESIGN.md §5) and one typed function per call we make.
enum Fprintd {
    static let service = "net.reactivated.Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    /// Error names (`net.reactivated.Fprint.Error.*`).
    enum ErrorName {
        static let noEnrolledPrints = "net.reactivated.Fprint.Error.NoEnrolledPrints"
        static let alreadyInUse = "net.reactivated.Fprint.Error.AlreadyInUse"
        static let claimDevice = "net.reactivated.Fprint.Error.ClaimDevice"
        static let permissionDenied = "net.reactivated.Fprint.Error.PermissionDenied"
        static let noActionInProgress = "net.reactivated.Fprint.Error.NoActionInProgress"
    }
}

/// fprintd's methods as typed calls. Each returns the reply so callers can read its
/// sender (which fprintd answered) and cookie (ordering against signals).
extension Bus {
    func fprintdCall(_ path: String, _ interface: String, _ member: String,
                     _ args: [String] = []) throws(BusError) -> Message {
        let m = try methodCall(destination: Fprintd.service, path: path, interface: interface,
                               member: member)
        for arg in args { try m.append(arg) }
        return try call(m)
    }

    /// `Manager.GetDevices() → ao`.
    func getDevices() throws(BusError) -> (reply: Message, paths: [String]) {
        let reply = try fprintdCall(Fprintd.managerPath, Fprintd.managerInterface, "GetDevices")
        return (reply, try reply.readArray(of: typeObjectPath))
    }

    /// `Device.ListEnrolledFingers(s user) → as`; fprintd's `NoEnrolledPrints` means none.
    func listEnrolledFingers(device: String, user: String) throws(BusError) -> [String] {
        do throws(BusError) {
            let reply = try fprintdCall(device, Fprintd.deviceInterface, "ListEnrolledFingers", [user])
            return try reply.readArray(of: typeString)
        } catch .remote(let name, _) where name == Fprintd.ErrorName.noEnrolledPrints {
            return []
        }
    }

    /// A string property of a device, through `org.freedesktop.DBus.Properties.Get`.
    func stringProperty(device: String, _ name: String) throws(BusError) -> String {
        let reply = try fprintdCall(device, "org.freedesktop.DBus.Properties", "Get",
                                    [Fprintd.deviceInterface, name])
        return try reply.readStringVariant()
    }

    /// A device method without results (`Claim`, `Release`, `VerifyStart`, `VerifyStop`).
    @discardableResult
    func deviceCall(_ device: String, _ member: String, _ args: [String] = []) throws(BusError) -> Message {
        try fprintdCall(device, Fprintd.deviceInterface, member, args)
    }
}
