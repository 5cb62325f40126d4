/// Everything a user reads, in English, Simplified and Traditional Chinese.
/// One function a message; each switches over the three languages so a missing
/// translation is a compile error, not a blank line.
public enum UserMessage: Equatable, Sendable {
    /// The reason text given by the caller or the configuration, shown before the prompt.
    case reason(String)
    /// "Place your right index finger on the fingerprint reader".
    case placeFinger(finger: String, scanType: ScanType)
    /// How to skip to the password; `title` is the configured fallback title, if any.
    case fallbackHint(title: String?)
    /// A retry-class result: the same try goes on.
    case retry(RetryKind)
    /// A failed match with tries left in this prompt.
    case notRecognized(triesLeft: Int)
    /// The prompt's tries are used up.
    case triesExhausted
    /// Locked after `threshold` consecutive failures.
    case lockedOut(threshold: Int)
    /// The password is required first, why, and the configured numbers of that rule.
    case passwordRequired(LAError.Reason, RuleFigures)
    /// The enrolled set changed since fingerprint login was turned on.
    case enrollmentChanged(optInRequired: Bool)
    /// Every refusal before a scan, worded alike, where the person at the terminal may not
    /// be the account's owner (login, su): it says nothing about the account's state.
    case fingerprintUnavailable
    case readerBusy
    case readerDisconnected
    case noFingerDetected
    case matched
    /// Shown while the reader is active in `localauthctl`.
    case waitingForFinger
    /// The prompt while the reader waits, on a terminal: Enter skips to the password.
    case pressEnterToSkip
    /// The concurrent prompt; `pressEnter` when a touch cannot end the prompt by itself.
    case passwordOrFinger(pressEnter: Bool)
    /// The account password, when the engine itself asks for it.
    case passwordPrompt

    public func text(_ language: Language) -> String {
        switch language {
        case .english: return english
        case .simplifiedChinese: return simplified
        case .traditionalChinese: return traditional
        }
    }
}

extension UserMessage {
    private var english: String {
        switch self {
        case .reason(let text): return text
        case .placeFinger(let finger, let scanType):
            let f = finger == "any" ? "your finger" : "your " + Messages.fingerName(finger, .english)
            return scanType == .swipe ? "Swipe \(f) across the fingerprint reader"
                                      : "Place \(f) on the fingerprint reader"
        case .fallbackHint(let title):
            return "(\(title ?? "Use Password"): press Ctrl-C)"
        case .retry(let kind): return Messages.retryText(kind, .english)
        case .notRecognized(let n):
            return "Fingerprint not recognized — \(n) \(n == 1 ? "try" : "tries") left"
        case .triesExhausted: return "Fingerprint not recognized — use your password"
        case .lockedOut(let n):
            return "Fingerprint locked after \(n) failed attempts — enter your password to unlock"
        case .passwordRequired(let why, let f):
            switch why {
            case .passwordRequiredAfterReboot: return "Your password is required after a restart"
            case .passwordRequiredAfterIdle:
                return "Your password is required after \(RuleFigures.hours(f.idleHours)) hours without signing in"
            case .passwordRequiredStale:
                return "Your password is required: it was not used for \(RuleFigures.hours(f.passwordStaleHours)) "
                    + "hours and no fingerprint for \(RuleFigures.hours(f.fingerprintStaleHours)) hours"
            case .stateUnreadable: return "Your password is required (fingerprint records could not be read)"
            default: return "Your password is required before fingerprints can be used"
            }
        case .enrollmentChanged(let optIn):
            return optIn
                ? "Your enrolled fingerprints changed — enter your password, then run `localauthctl enable`"
                : "Your enrolled fingerprints changed — enter your password to use them again"
        case .fingerprintUnavailable: return "Fingerprint sign-in is not available — use the password"
        case .readerBusy: return "The fingerprint reader is in use by another session — use your password"
        case .readerDisconnected: return "The fingerprint reader was disconnected — use your password"
        case .noFingerDetected: return "No finger detected — use your password"
        case .matched: return "Fingerprint recognized"
        case .waitingForFinger: return "Waiting for your finger…"
        case .pressEnterToSkip: return "(or press Enter to use your password) "
        case .passwordOrFinger(let enter):
            return enter ? "Password (or touch the reader, then press Enter): " : "Password or fingerprint: "
        case .passwordPrompt: return "Password: "
        }
    }

    private var simplified: String {
        switch self {
        case .reason(let text): return text
        case .placeFinger(let finger, let scanType):
            let f = finger == "any" ? "手指" : Messages.fingerName(finger, .simplifiedChinese)
            return scanType == .swipe ? "请在指纹读取器上划动\(f)" : "请将\(f)放在指纹读取器上"
        case .fallbackHint(let title): return "（\(title ?? "使用密码")：按 Ctrl-C）"
        case .retry(let kind): return Messages.retryText(kind, .simplifiedChinese)
        case .notRecognized(let n): return "指纹未能识别——还可尝试 \(n) 次"
        case .triesExhausted: return "指纹未能识别——请使用密码"
        case .lockedOut(let n): return "连续 \(n) 次失败，指纹已锁定——请输入密码解锁"
        case .passwordRequired(let why, let f):
            switch why {
            case .passwordRequiredAfterReboot: return "重新启动后需要输入密码"
            case .passwordRequiredAfterIdle: return "\(RuleFigures.hours(f.idleHours)) 小时未登录，需要输入密码"
            case .passwordRequiredStale:
                return "密码已 \(RuleFigures.hours(f.passwordStaleHours)) 小时未使用、指纹已 "
                    + "\(RuleFigures.hours(f.fingerprintStaleHours)) 小时未使用，需要输入密码"
            case .stateUnreadable: return "需要输入密码（无法读取指纹记录）"
            default: return "使用指纹前需要先输入密码"
            }
        case .enrollmentChanged(let optIn):
            return optIn ? "已录入的指纹发生变化——请输入密码，然后运行 `localauthctl enable`"
                         : "已录入的指纹发生变化——请输入密码后再使用指纹"
        case .fingerprintUnavailable: return "指纹登录不可用——请使用密码"
        case .readerBusy: return "指纹读取器正被其他会话使用——请使用密码"
        case .readerDisconnected: return "指纹读取器已断开——请使用密码"
        case .noFingerDetected: return "未检测到手指——请使用密码"
        case .matched: return "指纹已识别"
        case .waitingForFinger: return "正在等待您的手指…"
        case .pressEnterToSkip: return "（或按回车键改用密码）"
        case .passwordOrFinger(let enter):
            return enter ? "密码（或触摸读取器后按回车键）：" : "密码或指纹："
        case .passwordPrompt: return "密码："
        }
    }

    private var traditional: String {
        switch self {
        case .reason(let text): return text
        case .placeFinger(let finger, let scanType):
            let f = finger == "any" ? "手指" : Messages.fingerName(finger, .traditionalChinese)
            return scanType == .swipe ? "請在指紋讀取器上劃動\(f)" : "請將\(f)放在指紋讀取器上"
        case .fallbackHint(let title): return "（\(title ?? "使用密碼")：按 Ctrl-C）"
        case .retry(let kind): return Messages.retryText(kind, .traditionalChinese)
        case .notRecognized(let n): return "指紋未能識別——還可嘗試 \(n) 次"
        case .triesExhausted: return "指紋未能識別——請使用密碼"
        case .lockedOut(let n): return "連續 \(n) 次失敗，指紋已鎖定——請輸入密碼解鎖"
        case .passwordRequired(let why, let f):
            switch why {
            case .passwordRequiredAfterReboot: return "重新啟動後需要輸入密碼"
            case .passwordRequiredAfterIdle: return "\(RuleFigures.hours(f.idleHours)) 小時未登入，需要輸入密碼"
            case .passwordRequiredStale:
                return "密碼已 \(RuleFigures.hours(f.passwordStaleHours)) 小時未使用、指紋已 "
                    + "\(RuleFigures.hours(f.fingerprintStaleHours)) 小時未使用，需要輸入密碼"
            case .stateUnreadable: return "需要輸入密碼（無法讀取指紋記錄）"
            default: return "使用指紋前需要先輸入密碼"
            }
        case .enrollmentChanged(let optIn):
            return optIn ? "已登錄的指紋發生變化——請輸入密碼，然後執行 `localauthctl enable`"
                         : "已登錄的指紋發生變化——請輸入密碼後再使用指紋"
        case .fingerprintUnavailable: return "指紋登入無法使用——請使用密碼"
        case .readerBusy: return "指紋讀取器正被其他工作階段使用——請使用密碼"
        case .readerDisconnected: return "指紋讀取器已中斷連線——請使用密碼"
        case .noFingerDetected: return "未偵測到手指——請使用密碼"
        case .matched: return "指紋已識別"
        case .waitingForFinger: return "正在等待您的手指…"
        case .pressEnterToSkip: return "（或按 Enter 鍵改用密碼）"
        case .passwordOrFinger(let enter):
            return enter ? "密碼（或觸碰讀取器後按 Enter 鍵）：" : "密碼或指紋："
        case .passwordPrompt: return "密碼："
        }
    }
}

/// Shared pieces of messages: finger names, retry texts, error descriptions.
public enum Messages {
    static let fingers = ["left-thumb", "left-index-finger", "left-middle-finger",
                          "left-ring-finger", "left-little-finger", "right-thumb",
                          "right-index-finger", "right-middle-finger", "right-ring-finger",
                          "right-little-finger"]

    /// "right index finger", "右手食指"; an unknown name is shown as "finger".
    public static func fingerName(_ finger: String, _ language: Language) -> String {
        guard fingers.contains(finger) else {
            return language == .english ? "finger" : "手指"
        }
        let parts = finger.split(separator: "-").map(String.init)
        switch language {
        case .english:
            return parts.joined(separator: " ")
        case .simplifiedChinese, .traditionalChinese:
            let hand = parts[0] == "left" ? "左手" : "右手"
            let names = ["thumb": "拇指", "index": "食指", "middle": "中指", "ring": "无名指",
                         "little": "小指"]
            var name = names[parts[1]] ?? "手指"
            if language == .traditionalChinese && name == "无名指" { name = "無名指" }
            return hand + name
        }
    }

    static func retryText(_ kind: RetryKind, _ language: Language) -> String {
        switch (kind, language) {
        case (.retryScan, .english): return "Scan incomplete — try again"
        case (.retryScan, .simplifiedChinese): return "扫描不完整——请重试"
        case (.retryScan, .traditionalChinese): return "掃描不完整——請重試"
        case (.swipeTooShort, .english): return "Swipe too short — try again"
        case (.swipeTooShort, .simplifiedChinese): return "划动太短——请重试"
        case (.swipeTooShort, .traditionalChinese): return "劃動太短——請重試"
        case (.fingerNotCentered, .english): return "Finger not centered — try again"
        case (.fingerNotCentered, .simplifiedChinese): return "手指未居中——请重试"
        case (.fingerNotCentered, .traditionalChinese): return "手指未置中——請重試"
        case (.removeAndRetry, .english): return "Remove your finger and try again"
        case (.removeAndRetry, .simplifiedChinese): return "请移开手指后重试"
        case (.removeAndRetry, .traditionalChinese): return "請移開手指後重試"
        case (.tooFast, .english): return "Swipe too fast — try again"
        case (.tooFast, .simplifiedChinese): return "划动太快——请重试"
        case (.tooFast, .traditionalChinese): return "劃動太快——請重試"
        }
    }

    /// The localized description of an error code (Apple's wording where it has one).
    public static func describe(_ code: LAError.Code, in language: Language) -> String {
        let row = descriptions[code] ?? ("", "", "")
        switch language {
        case .english: return row.0
        case .simplifiedChinese: return row.1
        case .traditionalChinese: return row.2
        }
    }

    private static let descriptions: [LAError.Code: (String, String, String)] = [
        .authenticationFailed: ("Authentication failed: the fingerprint was not recognized.",
                                "验证失败：指纹未能识别。", "驗證失敗：指紋未能識別。"),
        .userCancel: ("Authentication was cancelled by the user.",
                      "用户取消了验证。", "使用者取消了驗證。"),
        .userFallback: ("The user chose to enter the password.",
                        "用户选择输入密码。", "使用者選擇輸入密碼。"),
        .systemCancel: ("Authentication was cancelled by the system.",
                        "系统取消了验证。", "系統取消了驗證。"),
        .passcodeNotSet: ("No password is set for this account, so fingerprints cannot be used.",
                          "此帐户未设置密码，无法使用指纹。", "此帳戶未設定密碼，無法使用指紋。"),
        .biometryNotAvailable: ("Fingerprint authentication is not available.",
                                "指纹验证不可用。", "指紋驗證無法使用。"),
        .biometryNotEnrolled: ("No fingerprints are enrolled.",
                               "尚未录入指纹。", "尚未登錄指紋。"),
        .biometryLockout: ("Fingerprints are locked out: enter your password first.",
                           "指纹已锁定：请先输入密码。", "指紋已鎖定：請先輸入密碼。"),
        .appCancel: ("Authentication was cancelled by the application.",
                     "应用程序取消了验证。", "應用程式取消了驗證。"),
        .invalidContext: ("The authentication context is no longer valid.",
                          "验证上下文已失效。", "驗證內容已失效。"),
        .biometryDisconnected: ("The fingerprint reader was disconnected.",
                                "指纹读取器已断开。", "指紋讀取器已中斷連線。"),
        .notInteractive: ("Nobody is present to scan a finger (remote or non-interactive session).",
                          "无法进行指纹扫描（远程或非交互式会话）。", "無法進行指紋掃描（遠端或非互動式工作階段）。"),
    ]
}
