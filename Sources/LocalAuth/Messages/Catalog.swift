#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Synchronization

/// The message catalogues: glibc's gettext, domain `localauth`, compiled from po/*.po by
/// scripts/build (msgfmt -c) into PREFIX/share/locale/LANG/LC_MESSAGES/localauth.mo. The
/// English text is the message id, so a missing catalogue or entry shows English.
///
/// Each text is looked up in the catalogue of one `Language`. gettext picks its catalogue
/// from LANGUAGE when the messages locale is not "C"; the process runs with the built-in
/// C.UTF-8 locale (no generated locale needed) and LANGUAGE set to the wanted language
/// (and gettext told to forget what it looked up when that changes).
public enum Catalog {
    public static let domain = "localauth"

    /// Where the catalogues are: PREFIX/share/locale beside the running program
    /// (/usr/share/locale for a system install). Tests may point it elsewhere.
    public static var directory: String {
        get { state.withLock { $0.directory } }
        set { state.withLock { $0.directory = newValue } }
    }

    /// What gettext was told, and where the catalogues are: behind one lock, since the
    /// locale, LANGUAGE and gettext's cache are the process's.
    private struct State {
        lazy var directory: String = Catalog.defaultDirectory
        var bound: String?
        var active: String?
    }

    private static let state = Mutex(State())

    /// Sets the locale and LANGUAGE for `language` now: setlocale and setenv are not safe
    /// while another thread runs, so a program that starts one (the helper's bus start-up)
    /// calls this first. Nothing to do for English.
    public static func load(_ language: Language) {
        if language == .english { return }
        state.withLock { prepare(&$0, language) }
    }

    /// The catalogue's text for `msgid`, in `language`. English is the message id itself
    /// (po/en.po maps every message to itself), so no locale or catalogue is loaded for it:
    /// that was 160 KiB of the helper's memory and its first prompt's slowest step.
    static func lookUp(_ msgid: String, _ language: Language) -> String {
        if language == .english { return msgid }
        return state.withLock { s -> String in
            prepare(&s, language)
            // Without a translation gettext returns the msgid's own pointer: copy it while
            // that C string is alive.
            return msgid.withCString { String(cString: dgettext(domain, $0)) }
        }
    }

    static func lookUp(_ singular: String, _ plural: String, _ n: Int, _ language: Language) -> String {
        // English's plural rule, as po/en.po states it (nplurals=2; plural=(n != 1)).
        if language == .english { return n == 1 ? singular : plural }
        return state.withLock { s -> String in
            prepare(&s, language)
            return singular.withCString { one in
                plural.withCString { many in String(cString: dngettext(domain, one, many, UInt(max(0, n)))) }
            }
        }
    }

    private static func prepare(_ s: inout State, _ language: Language) {
        let directory = s.directory
        if s.bound != directory {
            _ = setlocale(LC_MESSAGES, "C.UTF-8")
            _ = setlocale(LC_CTYPE, "C.UTF-8")
            _ = bindtextdomain(domain, directory)
            _ = bind_textdomain_codeset(domain, "UTF-8")
            s.bound = directory
            s.active = nil
        }
        if s.active != language.catalogue {
            // glibc adds the variable once and then swaps its string in place: a thread
            // reading the environment meanwhile sees the old value or the new one.
            setenv("LANGUAGE", language.catalogue, 1)
            la_gettext_forget()
            s.active = language.catalogue
        }
    }

    private static var defaultDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "/usr/share/locale" }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var parts = exe.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.suffix(2).first == "bin" { parts.removeLast(2) }
        else if parts.suffix(3).prefix(2) == ["libexec", "localauth"] { parts.removeLast(3) }
        else { return "/usr/share/locale" }
        let prefix = parts.joined(separator: "/")
        return (prefix.isEmpty ? "/usr" : prefix) + "/share/locale"
    }

    /// Fills `%s`, `%d` (in order) and `%1$s` (by position) with `args`; `%%` is `%`. The
    /// templates are c-format, so msgfmt -c checks that a translation keeps them.
    public static func format(_ template: String, _ args: [String]) -> String {
        var out = ""
        var next = 0
        var chars = Array(template)[...]
        while let c = chars.popFirst() {
            guard c == "%", let f = chars.first else { out.append(c); continue }
            if f == "%" { chars.removeFirst(); out.append("%"); continue }
            if f == "s" || f == "d" {
                chars.removeFirst()
                out += next < args.count ? args[next] : ""
                next += 1
                continue
            }
            if let digit = f.wholeNumberValue, chars.dropFirst().first == "$" {
                chars.removeFirst(3)  // N, $, s/d
                out += digit >= 1 && digit <= args.count ? args[digit - 1] : ""
                continue
            }
            out.append(c)
        }
        return out
    }
}

/// The text of `msgid` in `language`, with `%s` filled by `args` (the marker the catalogue
/// test looks for: `tr(language, "...")`).
public func tr(_ language: Language, _ msgid: String, _ args: CustomStringConvertible...) -> String {
    let text = Catalog.lookUp(msgid, language)
    return args.isEmpty ? text : Catalog.format(text, args.map(\.description))
}

/// The form of `singular`/`plural` for `n` in `language` (plural rules from the catalogue).
public func trn(_ language: Language, _ singular: String, _ plural: String, _ n: Int,
                _ args: CustomStringConvertible...) -> String {
    Catalog.format(Catalog.lookUp(singular, plural, n, language), args.map(\.description))
}
