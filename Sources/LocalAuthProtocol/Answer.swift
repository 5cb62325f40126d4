/// The `R` frame's payload (docs/PROTOCOL.md): the root side's verdict. `code` is a
/// `ResultCode` raw value, `successValue` or `notOptedInValue`; `name` Apple's case name
/// (`success`, `notOptedIn`, `status`); `reason` the rule that applied (a word of `a-z` and
/// `-`, empty for none); `cause` one line for the log. What a mode adds (an application's
/// `domain_state` and `biometry`, a kept connection's `kept`, a right's `public_key`, the
/// status keys) follows, in order, as `extra`.
///
/// The module reads `code`, `reason` and `cause` (`result_map.c`, `la_result_parse`); it
/// ignores the rest.
public struct Answer: Equatable, Sendable {
    public var code: Int
    public var name: String
    /// Empty: no rule named.
    public var reason: String
    /// nil: no `cause` key (a status summary that has nothing to say).
    public var cause: String?
    /// Every other key, in the order sent.
    public var extra: KeyValues

    /// The longest cause sent; the module logs 255 bytes of it.
    public static let causeLimit = 512

    public init(code: Int, name: String, reason: String = "", cause: String? = nil, extra: KeyValues = KeyValues()) {
        self.code = code
        self.name = name
        self.reason = reason
        self.cause = cause
        self.extra = extra
    }

    /// A failure with Apple's code and its name.
    public init(_ code: ResultCode, reason: String = "", cause: String, extra: KeyValues = KeyValues()) {
        self.init(code: code.rawValue, name: code.name, reason: reason, cause: cause, extra: extra)
    }

    /// `code=0`, `name=success`.
    public static func success(cause: String, extra: KeyValues = KeyValues()) -> Answer {
        Answer(code: ResultCode.successValue, name: "success", cause: cause, extra: extra)
    }

    /// The code as Apple's, nil for success, "not opted in" and codes this side does not know.
    public var resultCode: ResultCode? { ResultCode(rawValue: code) }

    public var isSuccess: Bool { code == ResultCode.successValue }

    /// The value of an extra key.
    public func value(_ key: String) -> String? { extra.value(key) }

    /// The key/value lines: `code`, `name`, `reason` (when not empty), `cause` (at most
    /// `causeLimit` characters), then `extra`.
    public var keyValues: KeyValues {
        var kv = KeyValues()
        kv.add("code", String(code))
        kv.add("name", name)
        if !reason.isEmpty { kv.add("reason", reason) }
        if let cause { kv.add("cause", String(cause.prefix(Self.causeLimit))) }
        for (key, value) in extra.pairs { kv.add(key, value) }
        return kv
    }

    public func encode() -> [UInt8] { keyValues.encoded() }

    /// The `R` frame.
    public var frame: Frame { Frame(.result, encode()) }

    /// Why bytes are not an answer.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// The keys the module reads, each at most once (as `la_kv_find` requires).
    public static let singleKeys = ["code", "name", "reason", "cause"]

    /// An `R` payload as an answer: `code` is required, decimal (as the module reads it: an
    /// optional `-` and 1 to 6 digits); `code`, `name`, `reason`, `cause` at most once each.
    public static func decode(_ payload: [UInt8]) -> Result<Answer, Problem> {
        let kv: KeyValues
        do { kv = try KeyValues.parse(payload) } catch { return .failure(Problem("malformed result payload: \(error)")) }
        for key in singleKeys where kv.count(key) > 1 { return .failure(Problem("result with a repeated key")) }
        guard let text = kv.value("code") else { return .failure(Problem("result without a code")) }
        guard let code = Self.code(text) else { return .failure(Problem("result code is not a number")) }
        var extra = KeyValues()
        for (key, value) in kv.pairs where !singleKeys.contains(key) { extra.add(key, value) }
        return .success(Answer(code: code, name: kv.value("name") ?? "", reason: kv.value("reason") ?? "",
                               cause: kv.value("cause"), extra: extra))
    }

    /// Strict decimal, as `la_kv_parse_int`: an optional `-`, 1 to 6 digits.
    static func code(_ text: String) -> Int? {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        guard (1...6).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int(digits) else { return nil }
        return negative ? -value : value
    }
}
