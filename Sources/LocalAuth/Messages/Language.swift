/// The languages with a catalogue (po/*.po): English, Simplified and Traditional Chinese.
public enum Language: String, CaseIterable, Sendable {
    case english = "en"
    case simplifiedChinese = "zh-Hans"
    case traditionalChinese = "zh-Hant"

    /// The catalogue's name under share/locale.
    public var catalogue: String {
        switch self {
        case .english: return "en"
        case .simplifiedChinese: return "zh_CN"
        case .traditionalChinese: return "zh_TW"
        }
    }

    /// Picks a language from a POSIX locale name (`zh_CN.UTF-8`, `zh_TW`, `zh_HK.UTF-8`,
    /// `zh_Hant`, `en_US`, `C`). Anything unknown is English.
    public init(localeIdentifier: String) {
        self = Language.ours(localeIdentifier) ?? .english
    }

    /// As gettext chooses: the messages locale is the first of LC_ALL, LC_MESSAGES, LANG
    /// that is set; when it is C or POSIX (or none), messages are English and LANGUAGE is
    /// ignored; otherwise the first entry of LANGUAGE (a `:` list) with a catalogue here,
    /// or the locale itself.
    public init(language: String?, lcAll: String?, lcMessages: String?, lang: String?) {
        let locale = [lcAll, lcMessages, lang].compactMap { $0 }.first { !$0.isEmpty }
        guard let locale, locale != "C", locale != "POSIX" else { self = .english; return }
        if let list = language, !list.isEmpty {
            for entry in list.split(separator: ":") {
                if let found = Language.ours(String(entry)) { self = found; return }
            }
        }
        self = Language.ours(locale) ?? .english
    }

    /// The language of a locale or LANGUAGE entry, when it has a catalogue here.
    static func ours(_ name: String) -> Language? {
        let id = name.lowercased()
        if id.hasPrefix("en") { return .english }
        guard id.hasPrefix("zh") else { return nil }
        let traditional = ["hant", "_tw", "-tw", "_hk", "-hk", "_mo", "-mo"]
        return traditional.contains { id.includes($0) } ? .traditionalChinese : .simplifiedChinese
    }
}
