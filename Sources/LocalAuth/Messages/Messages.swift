/// Everything a user reads. The English text is the gettext message id; the catalogues
/// (po/en.po, po/zh_CN.po, po/zh_TW.po) hold the translations, with plural forms, and a
/// rule's number is always the configured one, passed in (RuleFigures).
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
    case passwordRequired(EvaluationError.Reason, RuleFigures)
    /// The enrolled set changed since fingerprint login was turned on.
    case enrollmentChanged(optInRequired: Bool)
    /// Every refusal before a scan, worded alike, where the person at the terminal may not
    /// be the account's owner (login, su): it says nothing about the account's state.
    case fingerprintUnavailable
    case readerBusy
    /// No scan while the user also has a remote session open (PresenceRule).
    case signedInRemotely
    /// No scan after a remote login until the next local unlock (PresenceRule, rule 5).
    case signedInRemotelySinceUnlock
    /// No scan while the configuration cannot be trusted (Rules.refusal): about the
    /// installation, not the account, so it is said to whoever is at the terminal.
    case configurationUntrusted
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

    public func text(_ l: Language) -> String {
        switch self {
        case .reason(let text): return text
        case .placeFinger(let finger, let scanType):
            if finger == "any" || !Messages.fingers.contains(finger) {
                return scanType == .swipe ? tr(l, "Swipe your finger across the fingerprint reader")
                                          : tr(l, "Place your finger on the fingerprint reader")
            }
            let name = Messages.fingerName(finger, l)
            return scanType == .swipe ? tr(l, "Swipe your %s across the fingerprint reader", name)
                                      : tr(l, "Place your %s on the fingerprint reader", name)
        case .fallbackHint(let title):
            return tr(l, "(%s: press Ctrl-C)", title ?? tr(l, "Use Password"))
        case .retry(let kind): return Messages.retryText(kind, l)
        case .notRecognized(let n):
            return trn(l, "Fingerprint not recognized - %d try left", "Fingerprint not recognized - %d tries left", n, n)
        case .triesExhausted: return tr(l, "Fingerprint not recognized - use your password")
        case .lockedOut(let n):
            return trn(l, "Fingerprint locked after %d failed attempt - enter your password to unlock",
                       "Fingerprint locked after %d failed attempts - enter your password to unlock", n, n)
        case .passwordRequired(let why, let f): return Messages.passwordRequired(why, f, l)
        case .enrollmentChanged(let optIn):
            return optIn
                ? tr(l, "Your enrolled fingerprints changed - enter your password, then run `localauthctl enable`")
                : tr(l, "Your enrolled fingerprints changed - enter your password to use them again")
        case .fingerprintUnavailable: return tr(l, "Fingerprint sign-in is not available - use the password")
        case .readerBusy: return tr(l, "The fingerprint reader is in use by another session - use your password")
        case .signedInRemotely: return tr(l, "You are also signed in remotely - use your password")
        case .signedInRemotelySinceUnlock:
            return tr(l, "You signed in remotely since this computer was last unlocked here - use your password")
        case .configurationUntrusted:
            return tr(l, "Fingerprint sign-in is off: its configuration file cannot be trusted - use your password")
        case .readerDisconnected: return tr(l, "The fingerprint reader was disconnected - use your password")
        case .noFingerDetected: return tr(l, "No finger detected - use your password")
        case .matched: return tr(l, "Fingerprint recognized")
        case .waitingForFinger: return tr(l, "Waiting for your finger...")
        case .pressEnterToSkip: return tr(l, "(or press Enter to use your password) ")
        case .passwordOrFinger(let enter):
            return enter ? tr(l, "Password (or touch the reader, then press Enter): ")
                         : tr(l, "Password or fingerprint: ")
        case .passwordPrompt: return tr(l, "Password: ")
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
    public static func fingerName(_ finger: String, _ l: Language) -> String {
        switch finger {
        case "left-thumb": return tr(l, "left thumb")
        case "left-index-finger": return tr(l, "left index finger")
        case "left-middle-finger": return tr(l, "left middle finger")
        case "left-ring-finger": return tr(l, "left ring finger")
        case "left-little-finger": return tr(l, "left little finger")
        case "right-thumb": return tr(l, "right thumb")
        case "right-index-finger": return tr(l, "right index finger")
        case "right-middle-finger": return tr(l, "right middle finger")
        case "right-ring-finger": return tr(l, "right ring finger")
        case "right-little-finger": return tr(l, "right little finger")
        default: return tr(l, "finger")
        }
    }

    static func passwordRequired(_ why: EvaluationError.Reason, _ f: RuleFigures, _ l: Language) -> String {
        let h = RuleFigures.hours
        switch why {
        case .passwordRequiredAfterReboot: return tr(l, "Your password is required after a restart")
        case .passwordRequiredAfterIdle:
            return tr(l, "Your password is required after %s hours without signing in", h(f.idleHours))
        case .passwordRequiredStale:
            return tr(l, "Your password is required: it was not used for %s hours and no fingerprint for %s hours",
                      h(f.passwordStaleHours), h(f.fingerprintStaleHours))
        case .stateUnreadable: return tr(l, "Your password is required (fingerprint records could not be read)")
        default: return tr(l, "Your password is required before fingerprints can be used")
        }
    }

    static func retryText(_ kind: RetryKind, _ l: Language) -> String {
        switch kind {
        case .retryScan: return tr(l, "Scan incomplete - try again")
        case .swipeTooShort: return tr(l, "Swipe too short - try again")
        case .fingerNotCentered: return tr(l, "Finger not centered - try again")
        case .removeAndRetry: return tr(l, "Remove your finger and try again")
        case .tooFast: return tr(l, "Swipe too fast - try again")
        }
    }

    /// The localized description of an error code (Apple's wording where it has one).
    public static func describe(_ code: EvaluationError.Code, in l: Language) -> String {
        switch code {
        case .authenticationFailed: return tr(l, "Authentication failed: the fingerprint was not recognized.")
        case .userCancel: return tr(l, "Authentication was cancelled by the user.")
        case .userFallback: return tr(l, "The user chose to enter the password.")
        case .systemCancel: return tr(l, "Authentication was cancelled by the system.")
        case .passcodeNotSet: return tr(l, "No password is set for this account, so fingerprints cannot be used.")
        case .biometryNotAvailable,
             // Apple's codes for what this system has not got (ResultCode): the root side
             // never gives them, and "not available" is what they would mean here.
             .companionNotAvailable, .biometryNotPaired, .invalidDimensions:
            return tr(l, "Fingerprint authentication is not available.")
        case .biometryNotEnrolled: return tr(l, "No fingerprints are enrolled.")
        case .biometryLockout: return tr(l, "Fingerprints are locked out: enter your password first.")
        case .appCancel: return tr(l, "Authentication was cancelled by the application.")
        case .invalidContext: return tr(l, "The authentication context is no longer valid.")
        case .biometryDisconnected: return tr(l, "The fingerprint reader was disconnected.")
        case .notInteractive:
            return tr(l, "Nobody is present to scan a finger (remote or non-interactive session).")
        }
    }
}
