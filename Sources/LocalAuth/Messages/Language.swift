/// The languages user messages come in: the seeds' readers' languages and English.
public enum Language: String, CaseIterable, Sendable {
    case english = "en"
    case simplifiedChinese = "zh-Hans"
    case traditionalChinese = "zh-Hant"

    /// Picks a language from a POSIX locale name (`zh_CN.UTF-8`, `zh_TW`, `zh_HK.UTF-8`,
    /// `zh_Hant`, `en_US`, `C`). Anything unknown is English.
    public init(localeIdentifier: String) {
        let id = localeIdentifier.lowercased()
        guard id.hasPrefix("zh") else { self = .english; return }
        let traditional = ["hant", "_tw", "-tw", "_hk", "-hk", "_mo", "-mo"]
        self = traditional.contains { id.contains($0) } ? .traditionalChinese : .simplifiedChinese
    }
}
