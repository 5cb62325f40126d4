import SystemBus

/// fprintd's names on the bus (docs/ARCHITECTURE.md §8) and one typed function per call we make.
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
/// sender (which fprintd answered) and cookie (ordering against signals). The requests
/// and the readers of their replies are shared with the start-up, which sends the same
/// calls without waiting (StartUp.swift).
extension Bus {
    func fprintdMessage(_ path: String, _ interface: String, _ member: String,
                        _ args: [String] = []) throws(BusError) -> Message {
        let m = try methodCall(destination: Fprintd.service, path: path, interface: interface,
                               member: member)
        for arg in args { try m.append(arg) }
        return m
    }

    func fprintdCall(_ path: String, _ interface: String, _ member: String,
                     _ args: [String] = []) throws(BusError) -> Message {
        try call(fprintdMessage(path, interface, member, args))
    }

    /// `Manager.GetDevices() → ao`.
    func getDevicesMessage() throws(BusError) -> Message {
        try fprintdMessage(Fprintd.managerPath, Fprintd.managerInterface, "GetDevices")
    }

    func getDevices() throws(BusError) -> (reply: Message, paths: [String]) {
        let reply = try call(getDevicesMessage())
        return (reply, try Fprintd.devicePaths(reply))
    }

    /// `Device.ListEnrolledFingers(s user) → as`; fprintd's `NoEnrolledPrints` means none.
    func listEnrolledFingersMessage(device: String, user: String) throws(BusError) -> Message {
        try fprintdMessage(device, Fprintd.deviceInterface, "ListEnrolledFingers", [user])
    }

    func listEnrolledFingers(device: String, user: String) throws(BusError) -> [String] {
        try Fprintd.enrolledFingers(Result { () throws(BusError) in
            try call(listEnrolledFingersMessage(device: device, user: user))
        })
    }

    /// A string property of a device, through `org.freedesktop.DBus.Properties.Get`.
    func stringPropertyMessage(device: String, _ name: String) throws(BusError) -> Message {
        try fprintdMessage(device, "org.freedesktop.DBus.Properties", "Get", [Fprintd.deviceInterface, name])
    }

    func stringProperty(device: String, _ name: String) throws(BusError) -> String {
        try call(stringPropertyMessage(device: device, name)).readStringVariant()
    }

    /// A device method without results (`Claim`, `Release`, `VerifyStart`, `VerifyStop`).
    @discardableResult
    func deviceCall(_ device: String, _ member: String, _ args: [String] = []) throws(BusError) -> Message {
        try fprintdCall(device, Fprintd.deviceInterface, member, args)
    }
}

/// Readers of fprintd's replies, for a call answered now or later.
extension Fprintd {
    static func devicePaths(_ reply: Message) throws(BusError) -> [String] {
        try reply.readArray(of: typeObjectPath)
    }

    /// ListEnrolledFingers' answer; fprintd's `NoEnrolledPrints` error means none.
    static func enrolledFingers(_ reply: Result<Message, BusError>) throws(BusError) -> [String] {
        switch reply {
        case .success(let m): return try m.readArray(of: typeString)
        case .failure(.remote(let name, _)) where name == ErrorName.noEnrolledPrints: return []
        case .failure(let error): throw error
        }
    }
}
