extension Request {
    /// `mode=ssh`: the `op` and its keys (`localauthctl ssh`, SSHKeysMode). Typed and strict:
    /// a number or a flag that is not one, a missing name, is no request. What the values
    /// may hold (a key name's bytes, a requirement's words, a comment) the root side checks.
    ///
    ///     op=create  name= requirement= reuse=SECONDS forwarding=0|1 comment=
    ///     op=list    [after=NAME]        (the next page: keys after NAME)
    ///     op=delete  name=
    ///     op=policy  name= [requirement=] [reuse=] [forwarding=]   (at least one)
    ///     op=uses    [skip=N]            (the next page: older than the N newest)
    ///
    /// An answer is one frame (4 KiB): `list` and `uses` answer what fits and `more=1`
    /// when there is more, for the next request to ask from there.
    public enum SSH: Equatable, Sendable {
        /// `requirement`: `biometry`, `biometry-or-password`, `biometry-current-set`.
        case create(name: String, requirement: String, reuseSeconds: Int, forwarding: Bool, comment: String)
        case list(after: String?)
        case delete(name: String)
        /// nil: unchanged.
        case policy(name: String, requirement: String?, reuseSeconds: Int?, forwarding: Bool?)
        /// The last uses (`localauthctl ssh log`).
        case uses(skip: Int)

        public static let operations = ["create", "list", "delete", "policy", "uses"]

        public var op: String {
            switch self {
            case .create: return "create"
            case .list: return "list"
            case .delete: return "delete"
            case .policy: return "policy"
            case .uses: return "uses"
            }
        }

        /// The key named; nil for `list` and `uses`.
        public var name: String? {
            switch self {
            case .create(let n, _, _, _, _), .delete(let n), .policy(let n, _, _, _): return n
            case .list, .uses: return nil
            }
        }

        /// The keys after `op`, in this order.
        var keys: [(String, String)] {
            var out: [(String, String)] = []
            if let name { out.append(("name", name)) }
            switch self {
            case .create(_, let requirement, let reuse, let forwarding, let comment):
                out += [("requirement", requirement), ("reuse", String(reuse)), ("forwarding", forwarding ? "1" : "0"),
                        ("comment", comment)]
            case .policy(_, let requirement, let reuse, let forwarding):
                if let requirement { out.append(("requirement", requirement)) }
                if let reuse { out.append(("reuse", String(reuse))) }
                if let forwarding { out.append(("forwarding", forwarding ? "1" : "0")) }
            case .list(let after):
                if let after { out.append(("after", after)) }
            case .uses(let skip):
                if skip > 0 { out.append(("skip", String(skip))) }
            case .delete:
                break
            }
            return out
        }

        static func decode(op: String?, _ kv: KeyValues) -> Result<SSH, Problem> {
            switch op {
            case "list": return .success(.list(after: kv.value("after")))
            case "uses":
                guard let text = kv.value("skip") else { return .success(.uses(skip: 0)) }
                guard let skip = seconds(text) else { return .failure(Problem("skip= is not a number")) }
                return .success(.uses(skip: skip))
            case "create", "delete", "policy": break
            default:
                return .failure(Problem("mode=ssh needs a known op (\(operations.joined(separator: "|")))"))
            }
            guard let name = kv.value("name"), !name.isEmpty else { return .failure(Problem("mode=ssh op=\(op!) needs name=")) }
            let reuse: Int?
            switch kv.value("reuse") {
            case nil: reuse = nil
            case let text?:
                guard let n = seconds(text) else { return .failure(Problem("reuse= is not a number of seconds")) }
                reuse = n
            }
            let forwarding: Bool?
            switch kv.value("forwarding") {
            case nil: forwarding = nil
            case "0": forwarding = false
            case "1": forwarding = true
            default: return .failure(Problem("forwarding= is 0 or 1"))
            }
            let requirement = kv.value("requirement")
            switch op {
            case "delete":
                return .success(.delete(name: name))
            case "create":
                guard let requirement else { return .failure(Problem("mode=ssh op=create needs requirement=")) }
                return .success(.create(name: name, requirement: requirement, reuseSeconds: reuse ?? 0,
                                        forwarding: forwarding ?? false, comment: kv.value("comment") ?? ""))
            default:
                guard requirement != nil || reuse != nil || forwarding != nil else {
                    return .failure(Problem("mode=ssh op=policy needs requirement=, reuse= or forwarding="))
                }
                return .success(.policy(name: name, requirement: requirement, reuseSeconds: reuse, forwarding: forwarding))
            }
        }

        /// 1 to 6 decimal digits (the root side bounds the window itself); also `skip`.
        private static func seconds(_ text: String) -> Int? {
            guard (1...6).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int(text)
        }
    }
}
