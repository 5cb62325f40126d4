#if canImport(Glibc)
import Glibc
#endif
import CPAM
import LocalAuth

/// Checks an account password through libpam, with the stack of the `localauthctl`
/// service (`/etc/pam.d/localauthctl`, shipped with `@include common-auth`, in which
/// pam_localauth.so steps aside, so directory users pass it too; when that
/// file is missing, libpam uses the `other` service). The password is handed to the first
/// echo-off prompt and to no other.
final class PamPasswordVerifier: PasswordVerifier {
    static let defaultService = "localauthctl"

    let service: String
    /// libpam's word for the last failure, for the log.
    private(set) var lastFailure: String?

    init(service: String = PamPasswordVerifier.defaultService) {
        self.service = service
    }

    func verify(user: UserName, password: [UInt8]) -> Bool {
        guard !password.contains(0) else {
            lastFailure = "the password contains a NUL byte"
            return false
        }
        let secret = PamSecret(password)
        var conversation = pam_conv(conv: pamConverse,
                                    appdata_ptr: Unmanaged.passUnretained(secret).toOpaque())
        var handle: OpaquePointer?
        let started = pam_start(service, user.value, &conversation, &handle)
        guard started == PAM_SUCCESS, let handle else {
            lastFailure = "pam_start(\(service)) failed: \(started)"
            return false
        }
        let rc = pam_authenticate(handle, 0)
        lastFailure = rc == PAM_SUCCESS ? nil : String(cString: pam_strerror(handle, rc))
        pam_end(handle, rc)
        withExtendedLifetime(secret) {}
        return rc == PAM_SUCCESS
    }
}

/// The password as a NUL-terminated C string for the conversation, handed out once and
/// wiped when this object goes.
private final class PamSecret {
    private var bytes: [CChar]
    private var given = false

    init(_ password: [UInt8]) {
        bytes = password.map { CChar(bitPattern: $0) } + [0]
    }

    deinit {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }

    /// A malloc'd copy for libpam (which frees it), the first time only.
    func take() -> UnsafeMutablePointer<CChar>? {
        guard !given else { return nil }
        given = true
        return bytes.withUnsafeBufferPointer { strdup($0.baseAddress!) }
    }
}

/// The PAM conversation: the password for the first echo-off prompt, messages to stderr,
/// anything else refused.
private let pamConverse: @convention(c) (
    Int32, UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
    UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?, UnsafeMutableRawPointer?
) -> Int32 = { count, messages, responses, data in
    guard count > 0, count <= PAM_MAX_NUM_MSG, let messages, let responses, let data else {
        return PAM_CONV_ERR
    }
    let secret = Unmanaged<PamSecret>.fromOpaque(data).takeUnretainedValue()
    guard let raw = calloc(Int(count), MemoryLayout<pam_response>.stride) else { return PAM_BUF_ERR }
    let replies = raw.bindMemory(to: pam_response.self, capacity: Int(count))

    func dropReplies() {
        for i in 0..<Int(count) {
            if let answer = replies[i].resp {
                explicit_bzero(answer, strlen(answer))
                free(answer)
            }
        }
        free(raw)
    }

    for i in 0..<Int(count) {
        guard let message = messages[i]?.pointee else {
            dropReplies()
            return PAM_CONV_ERR
        }
        switch message.msg_style {
        case PAM_PROMPT_ECHO_OFF:
            guard let answer = secret.take() else {
                dropReplies()
                return PAM_CONV_ERR
            }
            replies[i].resp = answer
        case PAM_ERROR_MSG, PAM_TEXT_INFO:
            if let text = message.msg { warn(String(cString: text)) }
        default:
            dropReplies()
            return PAM_CONV_ERR
        }
    }
    responses.pointee = replies
    return PAM_SUCCESS
}
