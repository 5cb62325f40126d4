import CSystemd

/// An sd-bus message with the few append/read helpers fprintd's, logind's and polkitd's APIs
/// need. sd-bus's variadic helpers cannot be called from Swift, so each value goes through the basic
/// (one value) calls.
package final class Message {
    package let pointer: OpaquePointer

    /// Takes over a reference the caller owns (a message sd-bus just created for us).
    package init(adopting pointer: OpaquePointer) { self.pointer = pointer }

    /// Takes a new reference (a message sd-bus lends to a callback).
    package init(retaining pointer: OpaquePointer) {
        self.pointer = sd_bus_message_ref(pointer)
    }

    deinit { sd_bus_message_unref(pointer) }

    // MARK: Header fields

    /// The sender's serial. Serials from one connection only grow, so comparing them
    /// orders a signal against a reply from the same peer.
    package var cookie: UInt64 {
        var cookie: UInt64 = 0
        return sd_bus_message_get_cookie(pointer, &cookie) >= 0 ? cookie : 0
    }

    /// The object path a signal was emitted on.
    package var path: String? {
        sd_bus_message_get_path(pointer).map { String(cString: $0) }
    }

    /// The member (signal or method name), for the log.
    package var member: String? {
        sd_bus_message_get_member(pointer).map { String(cString: $0) }
    }

    /// The unique name (`:1.42`) of the connection that sent this message, as the bus
    /// daemon wrote it (a client cannot choose it): `org.freedesktop.DBus` for the daemon.
    package var sender: String? {
        sd_bus_message_get_sender(pointer).map { String(cString: $0) }
    }

    /// The connection a message is addressed to, as its sender wrote it (a unique or a
    /// well-known name); nil for a signal to everyone.
    package var destination: String? {
        sd_bus_message_get_destination(pointer).map { String(cString: $0) }
    }

    package var interface: String? {
        sd_bus_message_get_interface(pointer).map { String(cString: $0) }
    }

    /// The serial of the call a method return or an error answers; nil for other messages.
    package var replyCookie: UInt64? {
        var cookie: UInt64 = 0
        return sd_bus_message_get_reply_cookie(pointer, &cookie) >= 0 ? cookie : nil
    }

    /// The four kinds of D-Bus message (the header's type byte).
    package enum Kind: Equatable {
        case methodCall, methodReturn, error, signal, other
    }

    package var kind: Kind {
        var type: UInt8 = 0
        guard sd_bus_message_get_type(pointer, &type) >= 0 else { return .other }
        // sd-bus-protocol.h's message types (an anonymous enum, so spelled out here).
        switch type {
        case 1: return .methodCall
        case 2: return .methodReturn
        case 3: return .error
        case 4: return .signal
        default: return .other
        }
    }

    // MARK: Appending

    /// Appends an array of strings (`as`).
    @discardableResult
    package func append(strings: [String]) throws(BusError) -> Message {
        try openContainer(typeArray, "s")
        for value in strings { try append(value) }
        return try closeContainer()
    }

    @discardableResult
    package func append(_ value: String) throws(BusError) -> Message {
        try checked(value.withCString { sd_bus_message_append_basic(pointer, typeString, $0) },
                    "sd_bus_message_append_basic")
        return self
    }

    /// Appends one fixed-size basic value (`u`, `t`, `i`, ...): `type` must match `T`'s size.
    @discardableResult
    package func appendBasic<T: FixedWidthInteger>(_ type: CChar, _ value: T) throws(BusError) -> Message {
        var v = value
        try checked(sd_bus_message_append_basic(pointer, type, &v), "sd_bus_message_append_basic")
        return self
    }

    /// Opens a container (`r` struct, `a` array, `e` dict entry, `v` variant) of `contents`;
    /// every open is matched by `closeContainer()`.
    @discardableResult
    package func openContainer(_ type: CChar, _ contents: String) throws(BusError) -> Message {
        try checked(contents.withCString { sd_bus_message_open_container(pointer, type, $0) },
                    "sd_bus_message_open_container")
        return self
    }

    @discardableResult
    package func closeContainer() throws(BusError) -> Message {
        try checked(sd_bus_message_close_container(pointer), "sd_bus_message_close_container")
        return self
    }

    /// Appends a string-to-string dictionary (`a{ss}`).
    @discardableResult
    package func append(dictionary: [(String, String)]) throws(BusError) -> Message {
        try openContainer(typeArray, "{ss}")
        for (key, value) in dictionary {
            try openContainer(typeDictEntry, "ss")
            try append(key)
            try append(value)
            try closeContainer()
        }
        return try closeContainer()
    }

    // MARK: Reading

    /// Enters a struct of `contents` (`bba{ss}`); `exitContainer()` leaves it.
    package func enterStruct(_ contents: String) throws(BusError) {
        try enter(typeStruct, contents)
    }

    package func exitContainer() throws(BusError) {
        try checked(sd_bus_message_exit_container(pointer), "sd_bus_message_exit_container")
    }

    /// Reads a string-to-string dictionary (`a{ss}`); a key given twice keeps its last value.
    package func readStringDictionary() throws(BusError) -> [String: String] {
        try enter(typeArray, "{ss}")
        var out: [String: String] = [:]
        while try checked(sd_bus_message_enter_container(pointer, typeDictEntry, "ss"),
                          "sd_bus_message_enter_container") > 0 {
            let key = try readString()
            out[key] = try readString()
            try exitContainer()
        }
        try exitContainer()
        return out
    }

    package func readString() throws(BusError) -> String {
        var value: UnsafePointer<CChar>?
        let r = try checked(sd_bus_message_read_basic(pointer, typeString, &value),
                            "sd_bus_message_read_basic")
        guard r > 0, let value else { throw .malformed("missing string") }
        return String(cString: value)
    }

    /// Skips values of the signature `types` (e.g. `(sa{sv})`) without reading them.
    package func skip(_ types: String) throws(BusError) {
        try checked(types.withCString { sd_bus_message_skip(pointer, $0) }, "sd_bus_message_skip")
    }

    package func readUInt32() throws(BusError) -> UInt32 {
        var value: UInt32 = 0
        let r = try checked(sd_bus_message_read_basic(pointer, typeUInt32, &value),
                            "sd_bus_message_read_basic")
        guard r > 0 else { throw .malformed("missing uint32") }
        return value
    }

    package func readBool() throws(BusError) -> Bool {
        var value: Int32 = 0
        let r = try checked(sd_bus_message_read_basic(pointer, typeBoolean, &value),
                            "sd_bus_message_read_basic")
        guard r > 0 else { throw .malformed("missing boolean") }
        return value != 0
    }

    package func readObjectPath() throws(BusError) -> String {
        var value: UnsafePointer<CChar>?
        let r = try checked(sd_bus_message_read_basic(pointer, typeObjectPath, &value),
                            "sd_bus_message_read_basic")
        guard r > 0, let value else { throw .malformed("missing object path") }
        return String(cString: value)
    }

    /// Reads an array of strings (`as`) or object paths (`ao`).
    package func readArray(of element: CChar) throws(BusError) -> [String] {
        let contents = String(UnicodeScalar(UInt8(bitPattern: element)))
        try enter(typeArray, contents)
        var out: [String] = []
        while true {
            var value: UnsafePointer<CChar>?
            let r = try checked(sd_bus_message_read_basic(pointer, element, &value),
                                "sd_bus_message_read_basic")
            guard r > 0, let value else { break }
            out.append(String(cString: value))
        }
        try checked(sd_bus_message_exit_container(pointer), "sd_bus_message_exit_container")
        return out
    }

    /// Reads a variant holding one string: the reply of Properties.Get for an `s` property.
    package func readStringVariant() throws(BusError) -> String {
        try enter(typeVariant, "s")
        let value = try readString()
        try checked(sd_bus_message_exit_container(pointer), "sd_bus_message_exit_container")
        return value
    }

    /// Reads a variant holding one boolean: the reply of Properties.Get for a `b` property.
    package func readBoolVariant() throws(BusError) -> Bool {
        try enter(typeVariant, "b")
        let value = try readBool()
        try checked(sd_bus_message_exit_container(pointer), "sd_bus_message_exit_container")
        return value
    }

    /// A PropertiesChanged signal (`s a{sv} as`): the interface, the changed properties
    /// that are booleans (others are skipped), and the names invalidated without a value.
    package func readPropertiesChanged() throws(BusError) -> (interface: String, booleans: [String: Bool],
                                                              invalidated: [String]) {
        let interface = try readString()
        var booleans: [String: Bool] = [:]
        for (name, value) in try readProperties() {
            if case .bool(let b) = value { booleans[name] = b }
        }
        return (interface, booleans, try readArray(of: typeString))
    }

    /// A property value as `readProperties` gives it.
    package enum PropertyValue: Equatable {
        case string(String)
        case bool(Bool)
    }

    /// Properties.GetAll's reply, or a PropertiesChanged's changes (`a{sv}`): strings and
    /// booleans, and a `(so)` struct (logind's `Seat`) as its string; others are skipped.
    package func readProperties() throws(BusError) -> [String: PropertyValue] {
        var out: [String: PropertyValue] = [:]
        try enter(typeArray, "{sv}")
        while try checked(sd_bus_message_enter_container(pointer, typeDictEntry, "sv"),
                          "sd_bus_message_enter_container") > 0 {
            let name = try readString()
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            try checked(sd_bus_message_peek_type(pointer, &type, &contents), "sd_bus_message_peek_type")
            switch contents.map({ String(cString: $0) }) {
            case "s"?: out[name] = .string(try readStringVariant())
            case "b"?: out[name] = .bool(try readBoolVariant())
            case "(so)"?:
                try enter(typeVariant, "(so)")
                try enterStruct("so")
                out[name] = .string(try readString())
                try checked(sd_bus_message_skip(pointer, "o"), "sd_bus_message_skip")
                try exitContainer()
                try exitContainer()
            default:
                try checked(sd_bus_message_skip(pointer, "v"), "sd_bus_message_skip")
            }
            try exitContainer()
        }
        try exitContainer()
        return out
    }

    /// logind's `ListSessions` reply (`a(susso)`): each session's id and object path.
    package func readSessionList() throws(BusError) -> [(id: String, path: String)] {
        var out: [(id: String, path: String)] = []
        try enter(typeArray, "(susso)")
        while try checked(sd_bus_message_enter_container(pointer, typeStruct, "susso"),
                          "sd_bus_message_enter_container") > 0 {
            let id = try readString()
            try checked(sd_bus_message_skip(pointer, "uss"), "sd_bus_message_skip")
            var path: UnsafePointer<CChar>?
            try checked(sd_bus_message_read_basic(pointer, typeObjectPath, &path), "sd_bus_message_read_basic")
            if let path { out.append((id, String(cString: path))) }
            try exitContainer()
        }
        try exitContainer()
        return out
    }

    private func enter(_ type: CChar, _ contents: String) throws(BusError) {
        let r = try checked(contents.withCString { sd_bus_message_enter_container(pointer, type, $0) },
                            "sd_bus_message_enter_container")
        guard r > 0 else { throw .malformed("expected a container of \(contents)") }
    }
}

// D-Bus type codes (sd-bus-protocol.h); the enum is anonymous, so spelled out here.
package let typeString = CChar(UInt8(ascii: "s"))
package let typeObjectPath = CChar(UInt8(ascii: "o"))
package let typeBoolean = CChar(UInt8(ascii: "b"))
package let typeArray = CChar(UInt8(ascii: "a"))
package let typeVariant = CChar(UInt8(ascii: "v"))
package let typeDictEntry = CChar(UInt8(ascii: "e"))
package let typeStruct = CChar(UInt8(ascii: "r"))
package let typeUInt32 = CChar(UInt8(ascii: "u"))
package let typeUInt64 = CChar(UInt8(ascii: "t"))
package let typeInt32 = CChar(UInt8(ascii: "i"))
